import CLibXML2
import Foundation

/// OPML subscription lists: what other feed readers export and import.
///
/// Reading uses libxml2's streaming reader with the feed parser's safety options (no network,
/// no entity substitution, no DTD loading): a feed is an `<outline>` with an `xmlUrl`; the
/// `text` (or `title`) of the outlines around it — the reader's folders — become its tags
/// (``maximumTags`` of them at most, each ``maximumTagBytes`` at most).
package enum OPML {
    /// One feed of a subscription list.
    package struct Feed: Sendable, Equatable {
        package var title: String?
        package var url: String
        package var tags: [String]
        /// Its folders were more than ``maximumTags``, or a title was cut: an import says so.
        package var tagsShortened: Bool

        package init(title: String?, url: String, tags: [String] = [], tagsShortened: Bool = false) {
            self.title = title
            self.url = url
            self.tags = tags
            self.tagsShortened = tagsShortened
        }
    }

    /// Outlines read from one file at most; a subscription list is hundreds, not millions.
    package static let maximumFeeds = 100_000

    /// The folders around a feed that become its tags, outermost first; the titles of those
    /// nested deeper are not taken. Every feed carries its folders' titles, so without a
    /// bound a small file of deeply nested, long-titled folders holding many feeds would write
    /// megabytes of tags per kilobyte read into the config.
    package static let maximumTags = 8

    /// A folder title past this many UTF-8 bytes (an item's tag limit) is cut, ending in "…".
    package static let maximumTagBytes = ItemLimits.standard.tag

    /// The feeds of an OPML document, in document order.
    /// - Throws: ``FeedParseError`` when the bytes are not XML, not OPML (no `<opml>` root),
    ///   or name more than ``maximumFeeds`` feeds.
    package static func read(_ data: Data) throws -> [Feed] {
        guard !data.isEmpty else { throw FeedParseError("empty document") }
        if let crowded = data.withUnsafeBytes({ FeedParseLimits.standard.firstCrowdedElement(in: $0) }) {
            throw FeedParseError("refused: an element has more than \(FeedParseLimits.standard.attributesPerElement) attributes", line: crowded.line)
        }
        fetchrun_xml_silence_generic_errors()
        return try data.withUnsafeBytes { buffer -> [Feed] in
            let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_COMPACT.rawValue)
            guard let reader = xmlReaderForMemory(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count), nil, nil, options) else {
                throw FeedParseError("libxml2 could not start reading the document")
            }
            defer { xmlFreeTextReader(reader) }
            var feeds: [Feed] = []
            // The folder title at each depth of the outlines around the current one.
            var folders: [(depth: Int32, title: String?, cut: Bool)] = []
            var sawRoot = false
            while true {
                let step = xmlTextReaderRead(reader)
                if step == 0 { break }
                guard step == 1 else {
                    let line = xmlTextReaderGetParserLineNumber(reader)
                    throw FeedParseError("unreadable XML", line: line > 0 ? Int(line) : nil)
                }
                guard xmlTextReaderNodeType(reader) == 1, let localName = xmlTextReaderConstLocalName(reader) else { continue }
                let depth = xmlTextReaderDepth(reader)
                let name = String(cString: localName)
                if !sawRoot {
                    guard name == "opml" else { throw FeedParseError("not OPML: the document's root is <\(TerminalText.safe(name))>, not <opml>") }
                    sawRoot = true
                    continue
                }
                guard name == "outline" else { continue }
                folders.removeAll { $0.depth >= depth }
                let title = attribute(reader, "text") ?? attribute(reader, "title")
                if let url = attribute(reader, "xmlUrl") ?? attribute(reader, "xmlurl") {
                    guard feeds.count < maximumFeeds else { throw FeedParseError("more than \(maximumFeeds) feeds in one file") }
                    let titles = folders.lazy.compactMap(\.title)
                    let shortened = titles.dropFirst(maximumTags).first != nil || folders.contains(where: \.cut)
                    feeds.append(Feed(title: title, url: url, tags: Array(titles.prefix(maximumTags)), tagsShortened: shortened))
                } else if xmlTextReaderIsEmptyElement(reader) == 0 {
                    folders.append((depth, title.map { ItemLimits.fitted($0, toBytes: maximumTagBytes) }, (title?.utf8.count ?? 0) > maximumTagBytes))
                }
            }
            guard sawRoot else { throw FeedParseError("not OPML: no <opml> element") }
            return feeds
        }
    }

    private static func attribute(_ reader: xmlTextReaderPtr, _ name: String) -> String? {
        guard let value = xmlTextReaderGetAttribute(reader, name) else { return nil }
        defer { fetchrun_xml_free(value) }
        let text = String(cString: value).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// An OPML 2.0 document listing `feeds`, nested in one folder per first tag (untagged
    /// feeds at the top), in the order given.
    package static func write(_ feeds: [Feed], title: String, created: Date) -> String {
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8"?>"#,
            #"<opml version="2.0">"#,
            "  <head>",
            "    <title>\(MarkupText.escaped(title))</title>",
            "    <dateCreated>\(CalendarText.rfc822String(from: created))</dateCreated>",
            "  </head>",
            "  <body>",
        ]
        func outline(_ feed: Feed, indent: String) -> String {
            let text = MarkupText.escaped(feed.title ?? feed.url)
            return #"\#(indent)<outline type="rss" text="\#(text)" title="\#(text)" xmlUrl="\#(MarkupText.escaped(feed.url))"/>"#
        }
        var folders: [String] = []
        var byFolder: [String: [Feed]] = [:]
        for feed in feeds {
            guard let folder = feed.tags.first else {
                lines.append(outline(feed, indent: "    "))
                continue
            }
            if byFolder[folder] == nil { folders.append(folder) }
            byFolder[folder, default: []].append(feed)
        }
        for folder in folders {
            lines.append(#"    <outline text="\#(MarkupText.escaped(folder))" title="\#(MarkupText.escaped(folder))">"#)
            for feed in byFolder[folder] ?? [] { lines.append(outline(feed, indent: "      ")) }
            lines.append("    </outline>")
        }
        lines += ["  </body>", "</opml>", ""]
        return lines.joined(separator: "\n")
    }
}
