import CLibXML2
import Foundation

/// One pass of libxml2's reader over a feed document, building items as elements close.
///
/// Element names are compared as C strings straight from the reader's interned names, and
/// text is copied only for the fields an item keeps, so the pass costs little more than the
/// reader's own.
struct FeedWalker {
    private enum Namespace {
        case none, atom10, atom03, rss10, rss090, rdf, dc, content, media, itunes, other
    }

    private typealias Field = FeedField

    /// The local names the walker cares about; everything else is `.other`.
    private enum Name {
        case rss, RDF, feed, item, entry, title, link, description, pubDate, guid, author, category
        case comments, enclosure, id, published, updated, issued, created, modified, summary, content
        case name, date, creator, subject, identifier, encoded, thumbnail, image, duration, other
    }

    /// The last namespace URI seen and what it is: elements mostly come in runs of one
    /// namespace, and libxml2 interns URIs, so a pointer comparison usually answers.
    private var lastNamespace: (uri: UnsafeRawPointer, namespace: Namespace)?

    private let reader: xmlTextReaderPtr
    private let baseURL: String?
    private(set) var format: FeedFormat?
    private var notAFeed: String?
    private var feedTitle: String?
    private var feedLink: String?
    private var items: [Item] = []
    private var warnings: [String] = []

    private var item: ItemDraft?
    private var itemDepth = -1
    private var authorDepth = -1
    private var capture: (field: Field, depth: Int)?
    private var text: [UInt8] = []

    init(reader: xmlTextReaderPtr, baseURL: String?) {
        self.reader = reader
        self.baseURL = baseURL
    }

    /// Reads to the end; returns what the last `xmlTextReaderRead` returned (0 at the end, -1 on error).
    mutating func walk() -> Int32 {
        while true {
            let status = xmlTextReaderRead(reader)
            guard status == 1 else { return status }
            switch xmlTextReaderNodeType(reader) {
            case Int32(XML_READER_TYPE_ELEMENT.rawValue):
                startElement()
                if notAFeed != nil { return 0 }
            case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
                endElement(depth: Int(xmlTextReaderDepth(reader)))
            case Int32(XML_READER_TYPE_TEXT.rawValue), Int32(XML_READER_TYPE_CDATA.rawValue), Int32(XML_READER_TYPE_SIGNIFICANT_WHITESPACE.rawValue), Int32(XML_READER_TYPE_WHITESPACE.rawValue):
                if capture != nil, let value = xmlTextReaderConstValue(reader) {
                    text.append(contentsOf: UnsafeBufferPointer(start: value, count: strlen(UnsafeRawPointer(value).assumingMemoryBound(to: CChar.self))))
                }
            default:
                break
            }
        }
    }

    /// The feed, or why there is none.
    func finish(status: Int32, errors: ErrorCollector) throws -> Feed {
        if let notAFeed { throw FeedParseError(notAFeed) }
        let fatal = errors.messages.first { $0.fatal } ?? (status < 0 ? errors.messages.first : nil)
        guard let format else {
            if let fatal { throw FeedParseError("unreadable XML: \(fatal.text)", line: fatal.line) }
            throw FeedParseError("unreadable XML: no root element")
        }
        var warnings = warnings
        if status < 0 || fatal != nil {
            let problem = fatal ?? (0, "the XML reader stopped", true)
            // Items read before the document broke off are kept; with none, the feed failed.
            guard !items.isEmpty else { throw FeedParseError("broken XML: \(problem.text)", line: problem.line) }
            warnings.append("line \(problem.line): \(problem.text); kept the \(items.count) items before it")
        }
        warnings += errors.messages.filter { !$0.fatal }.prefix(5).map { "line \($0.line): \($0.text)" }
        return Feed(format: format, title: feedTitle, link: feedLink, items: items, warnings: warnings)
    }

    // MARK: Elements

    private mutating func startElement() {
        // The node itself: its name and namespace pointers come without the dictionary look-ups
        // that the reader's Const* accessors make on every call.
        guard let node = xmlTextReaderCurrentNode(reader) else { return }
        let depth = Int(xmlTextReaderDepth(reader))
        let namespace = self.namespace(of: node)
        let name = self.name(of: node)
        let empty = xmlTextReaderIsEmptyElement(reader) == 1

        guard let format else {
            identifyFormat(namespace, name)
            return
        }
        if format == .rss10, namespace == .rss090 { self.format = .rss090 }

        guard let item else {
            if isItem(namespace, name) {
                let draft = ItemDraft()
                if namespace == .rss10 || namespace == .rss090 {
                    draft.rdfAbout = attribute("about", namespace: "\(FeedNamespace.rdf)")
                }
                self.item = draft
                itemDepth = depth
            } else if capture == nil, depth <= 2, namespace == coreNamespace {
                if name == .title, feedTitle == nil { begin(.feedTitle, depth: depth, empty: empty) }
                if name == .link, feedLink == nil {
                    if isAtom {
                        let rel = attribute("rel") ?? "alternate"
                        if rel == "alternate" { feedLink = attribute("href") }
                    } else {
                        begin(.feedLink, depth: depth, empty: empty)
                    }
                }
            }
            return
        }
        guard capture == nil else { return }
        if let field = field(namespace, name, depth: depth, item: item) {
            begin(field, depth: depth, empty: empty)
        }
    }

    private mutating func endElement(depth: Int) {
        if let capture, capture.depth == depth {
            finish(capture.field)
            self.capture = nil
        }
        if depth == authorDepth { authorDepth = -1 }
        if depth == itemDepth, let draft = item {
            items.append(draft.item(baseURL: baseURL, warnings: &warnings))
            item = nil
            itemDepth = -1
        }
    }

    private mutating func begin(_ field: Field, depth: Int, empty: Bool) {
        text.removeAll(keepingCapacity: true)
        if empty {
            finish(field)
        } else {
            capture = (field, depth)
        }
    }

    private mutating func finish(_ field: Field) {
        // Trimmed as bytes: Foundation's trimming costs more than the rest of the parse.
        var start = text.startIndex, end = text.endIndex
        while start < end, Self.isSpace(text[start]) { start += 1 }
        while end > start, Self.isSpace(text[end - 1]) { end -= 1 }
        guard start < end else { return }
        if field.isDate {
            // Parsed from the bytes: most dates never need to become a String at all.
            let parsed = text.withUnsafeBufferPointer { DateParser.parse(bytes: UnsafeBufferPointer(rebasing: $0[start..<end])) }
            item?.setDate(field, parsed, text: parsed == nil ? String(decoding: text[start..<end], as: UTF8.self) : nil)
            return
        }
        let value = String(decoding: text[start..<end], as: UTF8.self)
        switch field {
        case .feedTitle: feedTitle = ItemDraft.clean(value)
        case .feedLink: feedLink = value
        default: item?.set(field, value)
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private mutating func identifyFormat(_ namespace: Namespace, _ name: Name) {
        switch (namespace, name) {
        case (.none, .rss):
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
        default:
            let local = xmlTextReaderConstLocalName(reader).map { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) } ?? "?"
            notAFeed = "not a feed: the document's root element is <\(local)>, not <rss>, <rdf:RDF> or <feed>"
        }
    }

    private var isAtom: Bool { format == .atom10 || format == .atom03 }

    /// The namespace of the format's own elements.
    private var coreNamespace: Namespace {
        switch format {
        case .atom10: return .atom10
        case .atom03: return .atom03
        case .rss10: return .rss10
        case .rss090: return .rss090
        default: return .none
        }
    }

    private func isItem(_ namespace: Namespace, _ name: Name) -> Bool {
        namespace == coreNamespace && name == (isAtom ? .entry : .item)
    }

    /// The field an element inside an item fills, handling attribute-only elements on the spot.
    private mutating func field(_ namespace: Namespace, _ name: Name, depth: Int, item: ItemDraft) -> Field? {
        switch namespace {
        case coreNamespace where isAtom:
            if authorDepth >= 0 { return name == .name ? .author : nil }
            switch name {
            case .title: return .title
            case .id: return .id
            case .published, .issued, .created: return .published
            case .updated, .modified: return .updated
            case .summary: return .summary
            case .content: return .content
            case .author: authorDepth = depth
            case .category: if let term = attribute("term") { item.categories.append(term) }
            case .link: atomLink(item)
            default: break
            }
            return nil
        case coreNamespace:
            switch name {
            case .title: return .title
            case .link: return .link
            case .description: return .summary
            case .pubDate: return .published
            case .guid:
                item.guidIsPermaLink = attribute("isPermaLink").map { $0.lowercased() != "false" } ?? true
                return .id
            case .author: return .author
            case .category: return .category
            case .comments: return .comments
            case .enclosure:
                if let enclosure = enclosure(urlAttribute: "url", lengthAttribute: "length") { item.enclosures.append(enclosure) }
            default: break
            }
            return nil
        case .dc:
            switch name {
            case .date: return .dcDate
            case .creator: return .dcCreator
            case .subject: return .dcSubject
            case .identifier: return .dcIdentifier
            default: return nil
            }
        case .content:
            return name == .encoded ? .content : nil
        case .atom10:
            // atom:* inside RSS.
            return name == .updated ? .updated : nil
        case .media:
            switch name {
            case .content:
                if let enclosure = enclosure(urlAttribute: "url", lengthAttribute: "fileSize") { item.enclosures.append(enclosure) }
            case .thumbnail:
                if item.extra["thumbnail"] == nil, let url = attribute("url") { item.extra["thumbnail"] = url }
            case .description:
                return .mediaDescription
            default: break
            }
            return nil
        case .itunes:
            switch name {
            case .image: if let href = attribute("href") { item.extra["image"] = href }
            case .duration: return .duration
            case .author: return .itunesAuthor
            case .summary: return .itunesSummary
            default: break
            }
            return nil
        default:
            return nil
        }
    }

    /// Atom's `<link>`: `rel="alternate"` (the default) is the item's link, first one wins;
    /// `rel="enclosure"` is an enclosure; other relations are a fallback link.
    private func atomLink(_ item: ItemDraft) {
        guard let href = attribute("href") else { return }
        switch attribute("rel") ?? "alternate" {
        case "alternate":
            if item.alternateLink == nil { item.alternateLink = href }
        case "enclosure":
            if let enclosure = enclosure(urlAttribute: "href", lengthAttribute: "length") { item.enclosures.append(enclosure) }
        case "self", "edit", "replies":
            break
        default:
            if item.otherLink == nil { item.otherLink = href }
        }
    }

    private func enclosure(urlAttribute: String, lengthAttribute: String) -> Enclosure? {
        guard let url = attribute(urlAttribute) else { return nil }
        return Enclosure(url: url, type: attribute("type"), length: attribute(lengthAttribute).flatMap { Int64($0) })
    }

    // MARK: libxml2 access

    private mutating func namespace(of node: xmlNodePtr) -> Namespace {
        guard let uri = node.pointee.ns?.pointee.href else { return .none }
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
        else { namespace = .other }
        lastNamespace = (UnsafeRawPointer(uri), namespace)
        return namespace
    }

    /// The element's local name, by its first byte and then one or a few comparisons.
    private func name(of node: xmlNodePtr) -> Name {
        guard let name = node.pointee.name else { return .other }
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

    /// A name or URI from the reader against a literal; `StaticString` keeps this free of copies.
    private func matches(_ pointer: UnsafePointer<xmlChar>, _ literal: StaticString) -> Bool {
        strcmp(UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self), UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)) == 0
    }

    private func attribute(_ name: String, namespace: String? = nil) -> String? {
        let value = namespace.map { xmlTextReaderGetAttributeNs(reader, name, $0) } ?? xmlTextReaderGetAttribute(reader, name)
        guard let value else { return nil }
        defer { fetchrun_xml_free(value) }
        return String(cString: UnsafeRawPointer(value).assumingMemoryBound(to: CChar.self))
    }
}
