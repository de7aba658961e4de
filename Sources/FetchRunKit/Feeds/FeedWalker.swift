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
        let depth = Int(xmlTextReaderDepth(reader))
        let namespace = currentNamespace()
        let name = xmlTextReaderConstLocalName(reader)!
        let empty = xmlTextReaderIsEmptyElement(reader) == 1

        guard let format else {
            identifyFormat(namespace, name)
            return
        }
        if format == .rss10, namespace == .rss090 { self.format = .rss090 }

        if item == nil {
            if isItem(namespace, name) {
                item = ItemDraft()
                itemDepth = depth
                if namespace == .rss10 || namespace == .rss090, let about = attribute("about", namespace: FeedNamespace.rdf) {
                    item?.rdfAbout = about
                }
            } else if capture == nil, depth <= 2, namespace == coreNamespace {
                if matches(name, "title"), feedTitle == nil { begin(.feedTitle, depth: depth, empty: empty) }
                if matches(name, "link"), feedLink == nil {
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
        if let field = field(namespace, name, depth: depth) {
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
        let value = String(decoding: text, as: UTF8.self)
        switch field {
        case .feedTitle: feedTitle = ItemDraft.clean(value)
        case .feedLink: feedLink = value.trimmingCharacters(in: .whitespacesAndNewlines)
        default: item?.set(field, value)
        }
    }

    private mutating func identifyFormat(_ namespace: Namespace, _ name: UnsafePointer<xmlChar>) {
        switch namespace {
        case .none where matches(name, "rss"):
            switch attribute("version") {
            case "0.91": format = .rss091
            case "0.92", "0.93", "0.94": format = .rss092
            default: format = .rss20
            }
        case .rdf where matches(name, "RDF"):
            format = .rss10
        case .atom10 where matches(name, "feed"):
            format = .atom10
        case .atom03 where matches(name, "feed"):
            format = .atom03
        default:
            let local = String(cString: UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self))
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

    private func isItem(_ namespace: Namespace, _ name: UnsafePointer<xmlChar>) -> Bool {
        guard namespace == coreNamespace else { return false }
        return isAtom ? matches(name, "entry") : matches(name, "item")
    }

    /// The field an element inside an item fills, handling attribute-only elements on the spot.
    private mutating func field(_ namespace: Namespace, _ name: UnsafePointer<xmlChar>, depth: Int) -> Field? {
        switch namespace {
        case coreNamespace where isAtom:
            if authorDepth >= 0 { return matches(name, "name") ? .author : nil }
            if matches(name, "title") { return .title }
            if matches(name, "id") { return .id }
            if matches(name, "published") || matches(name, "issued") || matches(name, "created") { return .published }
            if matches(name, "updated") || matches(name, "modified") { return .updated }
            if matches(name, "summary") { return .summary }
            if matches(name, "content") { return .content }
            if matches(name, "author") { authorDepth = depth }
            if matches(name, "category"), let term = attribute("term") { item?.categories.append(term) }
            if matches(name, "link") { atomLink() }
            return nil
        case coreNamespace:
            if matches(name, "title") { return .title }
            if matches(name, "link") { return .link }
            if matches(name, "description") { return .summary }
            if matches(name, "pubDate") { return .published }
            if matches(name, "guid") {
                let isPermaLink = attribute("isPermaLink").map { $0.lowercased() != "false" } ?? true
                item?.guidIsPermaLink = isPermaLink
                return .id
            }
            if matches(name, "author") { return .author }
            if matches(name, "category") { return .category }
            if matches(name, "comments") { return .comments }
            if matches(name, "enclosure"), let enclosure = enclosure(urlAttribute: "url", lengthAttribute: "length") {
                item?.enclosures.append(enclosure)
            }
            return nil
        case .dc:
            if matches(name, "date") { return .dcDate }
            if matches(name, "creator") { return .dcCreator }
            if matches(name, "subject") { return .dcSubject }
            if matches(name, "identifier") { return .dcIdentifier }
            return nil
        case .content:
            return matches(name, "encoded") ? .content : nil
        case .atom10:
            // atom:* inside RSS.
            return matches(name, "updated") ? .updated : nil
        case .media:
            if matches(name, "content"), let enclosure = enclosure(urlAttribute: "url", lengthAttribute: "fileSize") {
                item?.enclosures.append(enclosure)
            }
            if matches(name, "thumbnail"), let url = attribute("url"), item?.extra["thumbnail"] == nil { item?.extra["thumbnail"] = url }
            return matches(name, "description") ? .mediaDescription : nil
        case .itunes:
            if matches(name, "image"), let href = attribute("href") { item?.extra["image"] = href }
            if matches(name, "duration") { return .duration }
            if matches(name, "author") { return .itunesAuthor }
            if matches(name, "summary") { return .itunesSummary }
            return nil
        default:
            return nil
        }
    }

    /// Atom's `<link>`: `rel="alternate"` (the default) is the item's link, first one wins;
    /// `rel="enclosure"` is an enclosure; other relations are a fallback link.
    private mutating func atomLink() {
        guard let href = attribute("href") else { return }
        switch attribute("rel") ?? "alternate" {
        case "alternate":
            if item?.alternateLink == nil { item?.alternateLink = href }
        case "enclosure":
            if let enclosure = enclosure(urlAttribute: "href", lengthAttribute: "length") { item?.enclosures.append(enclosure) }
        case "self", "edit", "replies":
            break
        default:
            if item?.otherLink == nil { item?.otherLink = href }
        }
    }

    private func enclosure(urlAttribute: String, lengthAttribute: String) -> Enclosure? {
        guard let url = attribute(urlAttribute) else { return nil }
        return Enclosure(url: url, type: attribute("type"), length: attribute(lengthAttribute).flatMap { Int64($0) })
    }

    // MARK: libxml2 access

    private func currentNamespace() -> Namespace {
        guard let uri = xmlTextReaderConstNamespaceUri(reader) else { return .none }
        if matches(uri, FeedNamespace.atom10) { return .atom10 }
        if matches(uri, FeedNamespace.dc) { return .dc }
        if matches(uri, FeedNamespace.content) { return .content }
        if matches(uri, FeedNamespace.media) { return .media }
        if matches(uri, FeedNamespace.itunes) { return .itunes }
        if matches(uri, FeedNamespace.rss10) { return .rss10 }
        if matches(uri, FeedNamespace.rdf) { return .rdf }
        if matches(uri, FeedNamespace.atom03) { return .atom03 }
        if matches(uri, FeedNamespace.rss090) { return .rss090 }
        return .other
    }

    private func matches(_ pointer: UnsafePointer<xmlChar>, _ literal: String) -> Bool {
        literal.withCString { strcmp(UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self), $0) == 0 }
    }

    private func attribute(_ name: String, namespace: String? = nil) -> String? {
        let value = namespace.map { xmlTextReaderGetAttributeNs(reader, name, $0) } ?? xmlTextReaderGetAttribute(reader, name)
        guard let value else { return nil }
        defer { fetchrun_xml_free(value) }
        return String(cString: UnsafeRawPointer(value).assumingMemoryBound(to: CChar.self))
    }
}
