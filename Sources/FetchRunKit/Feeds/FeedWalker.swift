import CLibXML2
import Foundation

/// Receives libxml2's SAX2 events for a feed document and builds items as elements close.
///
/// Names arrive as interned C strings and are classified by their first byte and a comparison
/// or two; text is copied only for the fields an item keeps. A class, because libxml2 calls
/// back into it through an opaque pointer. Its state is touched by one thread, one callback
/// at a time, so its stored properties skip Swift's dynamic exclusivity checks
/// (`@exclusivity(unchecked)`): they were a tenth of the parse's instructions.
final class FeedWalker {
    enum Namespace {
        case none, atom10, atom03, rss10, rss090, rdf, dc, content, media, itunes, userland, xml, other
    }

    typealias Field = FeedField

    /// The local names the walker cares about; everything else is `.other`.
    enum Name {
        case rss, RDF, feed, item, entry, title, link, description, pubDate, guid, author, category
        case comments, enclosure, id, published, updated, issued, created, modified, summary, content
        case name, date, creator, subject, identifier, encoded, thumbnail, image, duration, other
    }

    /// The last namespace URI seen and what it is: elements mostly come in runs of one
    /// namespace, and libxml2 interns URIs, so a pointer comparison usually answers.
    @exclusivity(unchecked) private var lastNamespace: (uri: UnsafeRawPointer, namespace: Namespace)?

    private let baseURL: String?
    @exclusivity(unchecked) private(set) var format: FeedFormat?
    @exclusivity(unchecked) private var notAFeed: String?
    @exclusivity(unchecked) private var feedTitle: String?
    @exclusivity(unchecked) private var feedLink: String?
    @exclusivity(unchecked) private var items: [Item] = []
    @exclusivity(unchecked) private var warnings = FeedWarnings()

    @exclusivity(unchecked) private var item: ItemDraft?
    @exclusivity(unchecked) private var depth = -1
    @exclusivity(unchecked) var itemDepth = -1
    /// The attributes of the element being started: (localname, prefix, URI, value, end) × count.
    @exclusivity(unchecked) private var attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    @exclusivity(unchecked) var attributeCount = 0
    /// Entity declarations seen in the document's DTD; never substituted, only reported.
    @exclusivity(unchecked) var declaredEntities = 0
    @exclusivity(unchecked) var authorDepth = -1
    @exclusivity(unchecked) private var capture: (field: Field, depth: Int)?
    @exclusivity(unchecked) private var text: [UInt8] = []
    /// How the text being captured is written (Atom 0.3's `mode`); set just before ``begin``.
    @exclusivity(unchecked) var captureMode = CaptureMode()
    struct CaptureMode {
        /// The text is base64 of the real (UTF-8) text.
        var base64 = false
        /// The text is HTML and becomes plain text (titles).
        var stripsMarkup = false
    }
    /// `xml:base` in effect: the element depth that set it and the base it makes. Empty in
    /// almost every feed; links are then resolved against the feed's URL at the end.
    @exclusivity(unchecked) var bases: [(depth: Int, base: String)] = []
    /// The base in effect where the current capture began.
    @exclusivity(unchecked) private var captureBase: String?

    private let limits: FeedParseLimits
    /// Items past ``FeedParseLimits/items``, counted for the warning, not kept.
    @exclusivity(unchecked) private var droppedItems = 0
    /// Fields whose text passed ``FeedParseLimits/textBytes``.
    @exclusivity(unchecked) private var cutFields = 0

    init(baseURL: String?, limits: FeedParseLimits = .standard) {
        self.baseURL = baseURL
        self.limits = limits
    }

    /// Whether the walker has seen enough to stop (the root is not a feed's).
    var shouldStop: Bool { notAFeed != nil }

    // MARK: SAX events

    func startElement(localName: UnsafePointer<xmlChar>, uri: UnsafePointer<xmlChar>?, attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?, count: Int) {
        depth += 1
        self.attributes = attributes
        attributeCount = count
        defer { self.attributes = nil }
        if count > 0, hasXMLPrefixedAttribute, let base = attribute("base", namespace: FeedNamespace.xml) {
            let enclosing = bases.last?.base ?? baseURL
            if base.utf8.count > ItemDraft.maximumBaseBytes {
                // Kept out rather than carried into every link below it; the enclosing base holds.
                warnings.append("an xml:base longer than \(ItemDraft.maximumBaseBytes) bytes ignored")
                if let enclosing { bases.append((depth, enclosing)) }
            } else {
                bases.append((depth, ItemDraft.resolve(base, against: enclosing)))
            }
        }
        startElement(namespace: namespace(uri), name: name(localName))
    }

    func endElement() {
        endElement(depth: depth)
        if let last = bases.last, last.depth == depth { bases.removeLast() }
        depth -= 1
    }

    /// A link made absolute against the `xml:base` in effect, when the document has one;
    /// otherwise left for the feed's URL at the end.
    func inBase(_ link: String, _ base: String?) -> String {
        guard let base else { return link }
        return ItemDraft.resolve(link, against: base)
    }

    func characters(_ bytes: UnsafePointer<xmlChar>, count: Int) {
        guard capture != nil else { return }
        let room = limits.textBytes - text.count
        guard room > 0 else { return }
        if count > room { cutFields += 1 }
        text.append(contentsOf: UnsafeBufferPointer(start: bytes, count: min(count, room)))
    }

    /// The feed, or why there is none.
    func finish(status: Int32, errors: ErrorCollector) throws -> Feed {
        if let notAFeed { throw FeedParseError(notAFeed) }
        let fatal = errors.messages.first { $0.fatal } ?? (status < 0 ? errors.messages.first : nil)
        guard let format else {
            if let fatal { throw FeedParseError("unreadable XML: \(fatal.text)", line: fatal.line) }
            throw FeedParseError("unreadable XML: no root element")
        }
        // Entity declarations in a feed are how XXE and "billion laughs" attacks start; they are
        // never expanded anyway, and a feed that needs them is not one to trust (defusedxml's rule).
        if declaredEntities > 0 {
            throw FeedParseError("refused: the document declares \(declaredEntities) entit\(declaredEntities == 1 ? "y" : "ies") of its own (a defence against XXE and entity-expansion attacks)")
        }
        var warnings = warnings.lines
        if let fatal {
            // libxml2's recovery mode read past the break; with no item at all, the feed failed.
            guard !items.isEmpty else { throw FeedParseError("broken XML: \(fatal.text)", line: fatal.line) }
            warnings.insert("recovered from broken XML (line \(fatal.line): \(fatal.text))", at: 0)
        }
        warnings += errors.messages.filter { !$0.fatal }.prefix(5).map { "line \($0.line): \($0.text)" }
        if droppedItems > 0 { warnings.append("read the first \(limits.items) items; \(droppedItems) more dropped (the limit of items per document)") }
        if cutFields > 0 { warnings.append("\(cutFields) field\(cutFields == 1 ? "" : "s") longer than \(limits.textBytes) bytes cut") }
        return Feed(format: format, title: feedTitle, link: feedLink, items: items, warnings: warnings)
    }

    // MARK: Elements

    private func startElement(namespace: Namespace, name: Name) {
        let depth = self.depth

        guard let format else {
            identifyFormat(namespace, name)
            return
        }
        if format == .rss10, namespace == .rss090 { self.format = .rss090 }

        guard let item else {
            if isItem(namespace, name) {
                let draft = ItemDraft()
                if namespace == .rss10 || namespace == .rss090 {
                    draft.rdfAbout = attribute("about", namespace: FeedNamespace.rdf)
                }
                self.item = draft
                itemDepth = depth
            } else if capture == nil, depth <= 2, namespace == coreNamespace {
                if name == .title, feedTitle == nil { begin(.feedTitle, depth: depth) }
                if name == .link, feedLink == nil {
                    if isAtom {
                        let rel = attribute("rel") ?? "alternate"
                        if rel == "alternate" { feedLink = attribute("href").map { inBase($0, bases.last?.base) } }
                    } else {
                        begin(.feedLink, depth: depth)
                    }
                }
            }
            return
        }
        guard capture == nil else { return }
        if let field = field(namespace, name, depth: depth, item: item) {
            begin(field, depth: depth)
        }
    }

    private func endElement(depth: Int) {
        if let capture, capture.depth == depth {
            finish(capture.field)
            self.capture = nil
        }
        if depth == authorDepth { authorDepth = -1 }
        if depth == itemDepth, let draft = item {
            if items.count < limits.items {
                items.append(draft.item(baseURL: baseURL, warnings: &warnings))
            } else {
                droppedItems += 1
            }
            item = nil
            itemDepth = -1
        }
    }

    /// Collects text until the element at `depth` ends; SAX reports an empty element as a
    /// start and an end, so that case needs nothing special.
    private func begin(_ field: Field, depth: Int) {
        text.removeAll(keepingCapacity: true)
        capture = (field, depth)
        captureBase = bases.last?.base
    }

    private func finish(_ field: Field) {
        // Trimmed as bytes: Foundation's trimming costs more than the rest of the parse.
        var start = text.startIndex, end = text.endIndex
        while start < end, Self.isSpace(text[start]) { start += 1 }
        while end > start, Self.isSpace(text[end - 1]) { end -= 1 }
        let mode = captureMode
        captureMode = CaptureMode()
        guard start < end else { return }
        if mode.base64 {
            guard let decoded = Data(base64Encoded: Data(text[start..<end]), options: .ignoreUnknownCharacters),
                  let value = String(validating: decoded, as: UTF8.self) else {
                warnings.append("a base64 \(field) that is not base64 UTF-8 text dropped")
                return
            }
            let text = mode.stripsMarkup ? ItemDraft.stripTags(value) : value
            item?.set(field, text.trimmingCharacters(in: .whitespacesAndNewlines))
            return
        }
        if field.isDate {
            // Parsed from the bytes: most dates never need to become a String at all.
            let parsed = text.withUnsafeBufferPointer { DateParser.parse(bytes: UnsafeBufferPointer(rebasing: $0[start..<end])) }
            item?.setDate(field, parsed, text: parsed == nil ? String(decoding: text[start..<end], as: UTF8.self) : nil)
            return
        }
        var value = String(decoding: text[start..<end], as: UTF8.self)
        if mode.stripsMarkup { value = ItemDraft.stripTags(value) }
        switch field {
        case .feedTitle: feedTitle = ItemDraft.clean(value)
        case .feedLink: feedLink = inBase(value, captureBase)
        case .link, .id: item?.set(field, field == .link ? inBase(value, captureBase) : value)
        default: item?.set(field, value)
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// The root element's name, for the "not a feed" message.
    @exclusivity(unchecked) private var rootName: String?

    private func identifyFormat(_ namespace: Namespace, _ name: Name) {
        switch (namespace, name) {
        case (.none, .rss), (.userland, .rss):
            // RSS 2.0 written in UserLand's namespace (often with a prefix): its elements are there.
            rssNamespace = namespace
            switch attribute("version") {
            case "0.91": format = .rss091
            case "0.92", "0.93", "0.94": format = .rss092
            default: format = .rss20
            }
        case (.rdf, .RDF):
            format = .rss10
        case (.atom10, .feed):
            format = .atom10
        case (.atom03, .feed):
            format = .atom03
        case (.none, .feed):
            // An Atom feed that forgot its namespace is still read as Atom 1.0.
            format = .atom10
            atomWithoutNamespace = true
        default:
            let local = rootName ?? "?"
            notAFeed = "not a feed: the document's root element is <\(local)>, not <rss>, <rdf:RDF> or <feed>"
        }
    }

    var isAtom: Bool { format == .atom10 || format == .atom03 }

    /// The namespace of the format's own elements.
    var coreNamespace: Namespace {
        switch format {
        case .atom10: return atomWithoutNamespace ? .none : .atom10
        case .atom03: return .atom03
        case .rss10: return .rss10
        case .rss090: return .rss090
        default: return rssNamespace
        }
    }

    /// RSS 0.9x / 2.0 elements are in no namespace, or in UserLand's.
    @exclusivity(unchecked) private var rssNamespace: Namespace = .none
    @exclusivity(unchecked) private var atomWithoutNamespace = false

    private func isItem(_ namespace: Namespace, _ name: Name) -> Bool {
        namespace == coreNamespace && name == (isAtom ? .entry : .item)
    }

    // MARK: libxml2 access

    private func namespace(_ uri: UnsafePointer<xmlChar>?) -> Namespace {
        guard let uri else { return .none }
        if let last = lastNamespace, last.uri == UnsafeRawPointer(uri) { return last.namespace }
        let namespace: Namespace
        if matches(uri, FeedNamespace.atom10) { namespace = .atom10 }
        else if matches(uri, FeedNamespace.dc) { namespace = .dc }
        else if matches(uri, FeedNamespace.content) { namespace = .content }
        else if matches(uri, FeedNamespace.media) { namespace = .media }
        else if matches(uri, FeedNamespace.itunes) { namespace = .itunes }
        else if matches(uri, FeedNamespace.rss10) { namespace = .rss10 }
        else if matches(uri, FeedNamespace.rdf) { namespace = .rdf }
        else if matches(uri, FeedNamespace.atom03) { namespace = .atom03 }
        else if matches(uri, FeedNamespace.rss090) { namespace = .rss090 }
        else if matches(uri, FeedNamespace.userland) { namespace = .userland }
        else if matches(uri, FeedNamespace.xml) { namespace = .xml }
        else { namespace = .other }
        lastNamespace = (UnsafeRawPointer(uri), namespace)
        return namespace
    }

    /// The element's local name, by its first byte and then one or a few comparisons.
    private func name(_ name: UnsafePointer<xmlChar>) -> Name {
        if format == nil { rootName = String(cString: UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self)) }
        switch name[0] {
        case UInt8(ascii: "a"): if matches(name, "author") { return .author }
        case UInt8(ascii: "c"):
            if matches(name, "category") { return .category }
            if matches(name, "content") { return .content }
            if matches(name, "comments") { return .comments }
            if matches(name, "created") { return .created }
            if matches(name, "creator") { return .creator }
        case UInt8(ascii: "d"):
            if matches(name, "description") { return .description }
            if matches(name, "date") { return .date }
            if matches(name, "duration") { return .duration }
        case UInt8(ascii: "e"):
            if matches(name, "entry") { return .entry }
            if matches(name, "enclosure") { return .enclosure }
            if matches(name, "encoded") { return .encoded }
        case UInt8(ascii: "f"): if matches(name, "feed") { return .feed }
        case UInt8(ascii: "g"): if matches(name, "guid") { return .guid }
        case UInt8(ascii: "i"):
            if matches(name, "item") { return .item }
            if matches(name, "id") { return .id }
            if matches(name, "issued") { return .issued }
            if matches(name, "identifier") { return .identifier }
            if matches(name, "image") { return .image }
        case UInt8(ascii: "l"): if matches(name, "link") { return .link }
        case UInt8(ascii: "m"): if matches(name, "modified") { return .modified }
        case UInt8(ascii: "n"): if matches(name, "name") { return .name }
        case UInt8(ascii: "p"):
            if matches(name, "pubDate") { return .pubDate }
            if matches(name, "published") { return .published }
        case UInt8(ascii: "r"): if matches(name, "rss") { return .rss }
        case UInt8(ascii: "R"): if matches(name, "RDF") { return .RDF }
        case UInt8(ascii: "s"):
            if matches(name, "summary") { return .summary }
            if matches(name, "subject") { return .subject }
        case UInt8(ascii: "t"):
            if matches(name, "title") { return .title }
            if matches(name, "thumbnail") { return .thumbnail }
        case UInt8(ascii: "u"): if matches(name, "updated") { return .updated }
        default: break
        }
        return .other
    }

    /// A name or URI from libxml2 against a literal; `StaticString` keeps this free of copies.
    private func matches(_ pointer: UnsafePointer<xmlChar>, _ literal: StaticString) -> Bool {
        strcmp(UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self), UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)) == 0
    }

    /// Whether the element being started has the attribute `name` (no namespace).
    func hasAttribute(_ name: StaticString) -> Bool {
        rawAttribute(name) != nil
    }

    /// Which of `literals` the attribute's value is exactly (its index), -1 for another value,
    /// or `nil` when the element has no such attribute — compared as bytes, with no String made.
    func attributeValueIs(_ name: StaticString, oneOf literals: [StaticString]) -> Int? {
        guard let value = rawAttribute(name) else { return nil }
        for (index, literal) in literals.enumerated() where literal.utf8CodeUnitCount == value.count {
            if memcmp(value.baseAddress!, literal.utf8Start, value.count) == 0 { return index }
        }
        return -1
    }

    private func rawAttribute(_ name: StaticString) -> UnsafeBufferPointer<xmlChar>? {
        guard let attributes else { return nil }
        for index in 0..<attributeCount {
            let base = index * 5
            guard let localName = attributes[base], let start = attributes[base + 3], let end = attributes[base + 4],
                  matches(localName, name) else { continue }
            return UnsafeBufferPointer(start: start, count: end - start)
        }
        return nil
    }

    /// Whether an attribute of the element being started is written `xml:…` (`xml:base`,
    /// `xml:lang`): almost none is, and a prefix is checked faster than a name.
    private var hasXMLPrefixedAttribute: Bool {
        guard let attributes else { return false }
        for index in 0..<attributeCount {
            if let prefix = attributes[index * 5 + 1], prefix[0] == UInt8(ascii: "x"), matches(prefix, "xml") { return true }
        }
        return false
    }

    /// An attribute of the element being started, matched by local name (and namespace URI
    /// when given). libxml2 passes `&` in attribute values as `&#38;` when it does not
    /// substitute entities; that is undone here.
    func attribute(_ name: StaticString, namespace: StaticString? = nil) -> String? {
        guard let attributes else { return nil }
        for index in 0..<attributeCount {
            let base = index * 5
            guard let localName = attributes[base], let start = attributes[base + 3], let end = attributes[base + 4],
                  matches(localName, name) else { continue }
            if let namespace {
                guard let uri = attributes[base + 2], matches(uri, namespace) else { continue }
            }
            let bytes = UnsafeBufferPointer(start: start, count: end - start)
            let value = String(decoding: bytes, as: UTF8.self)
            // Checked as bytes first: Foundation's substring search costs more than the parse.
            return bytes.contains(UInt8(ascii: "&")) ? value.replacingOccurrences(of: "&#38;", with: "&") : value
        }
        return nil
    }
}
