/// The feed formats fetchrun reads.
package enum FeedFormat: String, Sendable, Codable {
    case rss090 = "RSS 0.90"
    case rss091 = "RSS 0.91"
    case rss092 = "RSS 0.92"
    case rss20 = "RSS 2.0"
    case rss10 = "RSS 1.0"
    case atom03 = "Atom 0.3"
    case atom10 = "Atom 1.0"
    case jsonFeed10 = "JSON Feed 1.0"
    case jsonFeed11 = "JSON Feed 1.1"
}

/// A parsed feed: its format, its own title and link, and its items in document order.
package struct Feed: Sendable {
    package var format: FeedFormat
    package var title: String?
    package var link: String?
    package var items: [Item]
    /// Problems the parser recovered from (a broken field, a stray character), for logs.
    package var warnings: [String]
}

/// What a parse recovered from, for the log: the first ``kept`` in full, then only a count.
/// A document built to repeat one problem a million times (an unreadable date, a broken
/// attachment) costs a counter, not a million messages.
package struct FeedWarnings: Sendable {
    package static let kept = 20
    private var messages: [String] = []
    private var leftOut = 0

    /// Keeps `message`, or past ``kept`` counts it without building it.
    mutating func append(_ message: @autoclosure () -> String) {
        guard messages.count < Self.kept else {
            leftOut += 1
            return
        }
        messages.append(message())
    }

    /// The messages kept, and a last one counting those left out.
    var lines: [String] {
        leftOut == 0 ? messages : messages + ["\(leftOut) more warning\(leftOut == 1 ? "" : "s") like these left out"]
    }
}

/// Why a document could not be read as a feed.
package struct FeedParseError: Error, Sendable, Hashable, CustomStringConvertible {
    package var message: String
    package var line: Int?

    package init(_ message: String, line: Int? = nil) {
        self.message = message
        self.line = line
    }

    package var description: String {
        line.map { "line \($0): \(message)" } ?? message
    }
}

/// Namespace URIs elements are matched by; prefixes are whatever a feed chose.
enum FeedNamespace {
    static let atom10: StaticString = "http://www.w3.org/2005/Atom"
    static let atom03: StaticString = "http://purl.org/atom/ns#"
    static let rss10: StaticString = "http://purl.org/rss/1.0/"
    static let rss090: StaticString = "http://my.netscape.com/rdf/simple/0.9/"
    static let rdf: StaticString = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    static let dc: StaticString = "http://purl.org/dc/elements/1.1/"
    static let content: StaticString = "http://purl.org/rss/1.0/modules/content/"
    static let media: StaticString = "http://search.yahoo.com/mrss/"
    static let itunes: StaticString = "http://www.itunes.com/dtds/podcast-1.0.dtd"
    static let userland: StaticString = "http://backend.userland.com/rss2"
    static let xml: StaticString = "http://www.w3.org/XML/1998/namespace"
}

extension Feed {
    /// The feed as a run would keep it: items, title and link within `limits`, with a warning
    /// saying what was cut. For commands that show a feed without storing it (`probe`), so
    /// that what they show is what a run would store, and never more.
    package func withinItemLimits(_ limits: ItemLimits = .standard) -> Feed {
        var feed = self
        let (items, note) = limits.apply(to: items)
        feed.items = items
        if let note { feed.warnings.append(note) }
        feed.title = title.map { ItemLimits.fitted($0, toBytes: limits.title) }
        feed.link = link.map { ItemLimits.fitted($0, toBytes: limits.link) }
        return feed
    }
}
