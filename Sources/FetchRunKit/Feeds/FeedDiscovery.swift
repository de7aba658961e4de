import CLibXML2
import Foundation

/// Finds the feeds a web page offers: `<link rel="alternate">` elements whose `type` is RSS,
/// Atom or JSON Feed, as browsers and feed readers look for them.
///
/// The page is read with libxml2's HTML parser (recovering from the tag soup pages are, no
/// network); hrefs are resolved against `<base href>` or the page's URL.
package enum FeedDiscovery {
    package struct Offer: Sendable, Equatable {
        package var url: String
        package var title: String?
        package var type: String
    }

    static let feedTypes: Set<String> = ["application/rss+xml", "application/atom+xml", "application/feed+json", "application/json", "application/rdf+xml"]

    /// Pages are read up to this many elements deep; `<head>` is near the top.
    static let maximumDepth = 64

    /// The feeds `html` links to, in the page's order, without repeats.
    package static func offers(inHTML html: Data, pageURL: String) -> [Offer] {
        guard !html.isEmpty else { return [] }
        fetchrun_xml_silence_generic_errors()
        let options = Int32(HTML_PARSE_NONET.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue | HTML_PARSE_RECOVER.rawValue | HTML_PARSE_COMPACT.rawValue)
        return html.withUnsafeBytes { buffer -> [Offer] in
            guard let document = htmlReadMemory(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count), nil, nil, options) else { return [] }
            defer { xmlFreeDoc(document) }
            var base = pageURL
            var found: [(href: String, title: String?, type: String)] = []
            func visit(_ node: xmlNodePtr?, depth: Int) {
                var node = node
                while let current = node {
                    if current.pointee.type == XML_ELEMENT_NODE, let name = current.pointee.name {
                        switch String(cString: name).lowercased() {
                        case "base":
                            if let href = attribute(current, "href") { base = resolve(href, against: pageURL) }
                        case "link":
                            let rel = (attribute(current, "rel") ?? "").lowercased().split(separator: " ")
                            let type = (attribute(current, "type") ?? "").lowercased().split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                            if rel.contains("alternate"), feedTypes.contains(type), let href = attribute(current, "href") {
                                found.append((href, attribute(current, "title"), type))
                            }
                        case "body" where !found.isEmpty:
                            // Feeds are announced in the head; a page that has some is done.
                            return
                        default:
                            break
                        }
                        if depth < maximumDepth { visit(current.pointee.children, depth: depth + 1) }
                    }
                    node = current.pointee.next
                }
            }
            visit(xmlDocGetRootElement(document), depth: 0)
            var seen = Set<String>()
            return found.compactMap { offer in
                let url = resolve(offer.href, against: base)
                // Only what fetchrun would fetch: a page cannot point it at a file or a script.
                let lowered = url.lowercased()
                guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://"), seen.insert(url).inserted else { return nil }
                return Offer(url: url, title: offer.title, type: offer.type)
            }
        }
    }

    /// Whether a response is a web page rather than a feed: by its type, else by its start.
    package static func looksLikeHTML(_ body: Data, contentType: String?) -> Bool {
        if let contentType = contentType?.lowercased(), contentType.hasPrefix("text/html") || contentType.hasPrefix("application/xhtml") { return true }
        let start = String(decoding: body.prefix(512), as: UTF8.self).lowercased()
        return start.contains("<!doctype html") || start.contains("<html")
    }

    private static func attribute(_ node: xmlNodePtr, _ name: String) -> String? {
        guard let value = xmlGetProp(node, name) else { return nil }
        defer { fetchrun_xml_free(value) }
        let text = String(cString: value).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    private static func resolve(_ href: String, against base: String) -> String {
        ItemDraft.resolve(href, against: base)
    }
}
