import CLibXML2
import Foundation

/// Which field of an item an element fills, per namespace — the mapping from the formats'
/// element names to ``ItemDraft`` fields, apart from the walker's event handling.
extension FeedWalker {
    /// The field an element inside an item fills, handling attribute-only elements on the spot.
    ///
    /// An item's own fields are its direct children: a `<title>` inside an `<image>` or an
    /// Atom `<source>` in the item describes something else. Media RSS may nest (`media:group`).
    func field(_ namespace: Namespace, _ name: Name, depth: Int, item: ItemDraft) -> Field? {
        let isDirectChild = depth == itemDepth + 1
        switch namespace {
        case coreNamespace where isAtom:
            if authorDepth >= 0 { return name == .name && depth == authorDepth + 1 ? .author : nil }
            guard isDirectChild else { return nil }
            if name == .title || name == .summary || name == .content, attributeCount > 0 {
                captureMode = atomTextMode(isTitle: name == .title)
            }
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
            guard isDirectChild else { return nil }
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
            guard isDirectChild else { return nil }
            switch name {
            case .title: return .dcTitle
            case .date: return .dcDate
            case .creator: return .dcCreator
            case .subject: return .dcSubject
            case .identifier: return .dcIdentifier
            default: return nil
            }
        case .content:
            return name == .encoded && isDirectChild ? .content : nil
        case .atom10:
            // atom:* inside RSS.
            return name == .updated && isDirectChild ? .updated : nil
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
            guard isDirectChild else { return nil }
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

    /// How an Atom text element is written. Atom 0.3's `mode` says `base64` or `escaped`;
    /// Atom 1.0 sends any media type that is not text or XML as base64 (RFC 4287, 4.1.3.3).
    /// A title written as HTML (`html`, `text/html`, escaped or base64 in 0.3) loses its markup,
    /// since a title is plain text here.
    /// Atom 1.0's own text types, in the order ``atomTextMode(isTitle:)`` reads them.
    static let atomTextTypes: [StaticString] = ["text", "html", "xhtml"]

    func atomTextMode(isTitle: Bool) -> CaptureMode {
        // Nearly every element is Atom 1.0's `text`, `html` or `xhtml` without a `mode`: told
        // from the attribute's bytes, since making Strings here cost a tenth of the parse.
        if !hasAttribute("mode") {
            guard let type = attributeValueIs("type", oneOf: Self.atomTextTypes) else { return CaptureMode() }
            if type >= 0 { return CaptureMode(base64: false, stripsMarkup: isTitle && type == 1) }
        }
        let type = attribute("type")?.lowercased()
        let mode = attribute("mode")
        var result = CaptureMode()
        if mode == "base64" {
            result.base64 = true
        } else if let type, type.contains("/"), !type.hasPrefix("text/"), !type.hasSuffix("xml") {
            result.base64 = true
        }
        // Base64 is how markup was sent before Atom 1.0: unless it says plain text, it is HTML.
        let isHTML = type == "html" || type == "text/html" || (format == .atom03 && (mode == "escaped" || mode == "base64") && type != "text/plain" && type != "text")
            || (result.base64 && type != "text/plain" && type != "text")
        result.stripsMarkup = isTitle && isHTML
        return result
    }

    /// Atom's `<link>`: `rel="alternate"` (the default) is the item's link, first one wins;
    /// `rel="enclosure"` is an enclosure; other relations are a fallback link.
    func atomLink(_ item: ItemDraft) {
        guard let href = attribute("href").map({ inBase($0, bases.last?.base) }) else { return }
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

    func enclosure(urlAttribute: StaticString, lengthAttribute: StaticString) -> Enclosure? {
        guard let url = attribute(urlAttribute).map({ inBase($0, bases.last?.base) }) else { return nil }
        return Enclosure(url: url, type: attribute("type"), length: attribute(lengthAttribute).flatMap { Int64($0) })
    }
}
