import FetchRunKit
import Foundation

/// Realistic feeds made up on demand: the same number always gives the same feed.
///
/// By default feed n has 20–50 items and is 20–60 KB as RSS, the shape of a news site's feed:
/// titles, links, guids, RFC 822 dates, authors, categories, HTML descriptions.
public enum FeedGenerator {
    public struct Feed: Sendable {
        public var number: Int
        public var title: String
        public var link: String
        public var items: [Entry]
    }

    public struct Entry: Sendable {
        public var guid: String
        public var title: String
        public var link: String
        public var published: Date
        public var author: String
        public var categories: [String]
        public var html: String
    }

    private static let subjects = ["Chipmakers", "Regulators", "Cloud providers", "Start-ups", "Carmakers", "Telecom operators", "Battery makers", "Streaming services", "Bank IT teams", "Robotics firms", "Satellite operators", "Game studios"]
    private static let verbs = ["bet on", "push back against", "race to build", "cut prices for", "warn about", "double spending on", "pause work on", "team up on", "test", "scale back"]
    private static let objects = ["AI accelerators", "open-source models", "quantum networking", "solid-state batteries", "edge data centres", "6G trials", "chip export rules", "self-driving taxis", "undersea cables", "privacy-preserving ads", "RISC-V servers", "carbon-aware computing"]
    private static let places = ["in Europe", "in Asia", "as demand slows", "after record quarter", "amid supply crunch", "ahead of earnings", "despite chip shortage", "in landmark deal"]
    private static let authors = ["Jane Doe", "Arjun Mehta", "Li Wei", "Sofia García", "Tom Becker", "Amara Okafor"]
    private static let sentences = [
        "The company said the move would help it meet rising demand from enterprise customers.",
        "Analysts expect the market to grow by double digits over the next three years.",
        "Shares rose 3.2% in early trading after the announcement.",
        "Regulators have signalled they will look closely at the deal.",
        "The plan depends on securing enough advanced chips & skilled engineers.",
        "Executives declined to give a timetable, citing \"ongoing negotiations\".",
        "Rivals are expected to respond with price cuts of their own.",
        "Industry groups welcomed the decision but asked for clearer rules.",
    ]

    /// Feed `number`, with `items` entries (default 20–50) padded towards `targetBytes` of RSS.
    public static func feed(number: Int, items: Int? = nil, targetBytes: Int? = nil) -> Feed {
        var random = SplitMix64(state: UInt64(truncatingIfNeeded: number) &* 0x9E37_79B9 &+ 1)
        let count = items ?? 20 + number % 31
        let target = targetBytes ?? 20_000 + (number &* 7919) % 40_000
        // About 450 bytes of markup and title per item; the rest is description.
        let sentencesPerItem = max(1, (target / max(1, count) - 450) / 95)
        let base = Date(timeIntervalSince1970: 1_790_000_000 - Double(number % 1000) * 3600)
        var entries: [Entry] = []
        for index in 0..<count {
            let title = "\(subjects.randomElement(using: &random)!) \(verbs.randomElement(using: &random)!) \(objects.randomElement(using: &random)!) \(places.randomElement(using: &random)!)"
            var paragraphs: [String] = []
            for _ in 0..<sentencesPerItem { paragraphs.append(sentences.randomElement(using: &random)!) }
            let slug = "\(number)-\(index)-" + title.lowercased().split(separator: " ").prefix(4).joined(separator: "-")
            entries.append(Entry(
                guid: "urn:fixture:\(number):\(index)",
                title: title,
                link: "https://news.example.org/technology/\(slug)",
                published: base - Double(index) * 1800,
                author: authors.randomElement(using: &random)!,
                categories: ["Technology", objects.randomElement(using: &random)!],
                html: "<p>" + paragraphs.joined(separator: " ") + "</p>"
            ))
        }
        return Feed(number: number, title: "Fixture Technology News \(number)", link: "https://news.example.org/technology/\(number)", items: entries)
    }

    public static func rss(_ feed: Feed) -> String {
        var xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:atom="http://www.w3.org/2005/Atom">
            <channel>
            <title>\(escape(feed.title))</title>
            <link>\(feed.link)</link>
            <atom:link href="\(feed.link)/rss" rel="self" type="application/rss+xml"/>
            <description>Technology news, made up for tests</description>
            <language>en-gb</language>

            """
        for entry in feed.items {
            xml += """
                <item>
                <title>\(escape(entry.title))</title>
                <link>\(entry.link)</link>
                <guid isPermaLink="false">\(entry.guid)</guid>
                <pubDate>\(rfc822(entry.published))</pubDate>
                <dc:creator>\(escape(entry.author))</dc:creator>
                \(entry.categories.map { "<category>\(escape($0))</category>" }.joined())
                <description>\(escape(entry.html))</description>
                </item>

                """
        }
        return xml + "</channel>\n</rss>\n"
    }

    public static func atom(_ feed: Feed) -> String {
        var xml = """
            <?xml version="1.0" encoding="utf-8"?>
            <feed xmlns="http://www.w3.org/2005/Atom">
            <title>\(escape(feed.title))</title>
            <link rel="alternate" href="\(feed.link)"/>
            <id>urn:fixture:\(feed.number)</id>
            <updated>\(rfc3339(feed.items.first?.published ?? Date(timeIntervalSince1970: 0)))</updated>

            """
        for entry in feed.items {
            xml += """
                <entry>
                <title>\(escape(entry.title))</title>
                <link rel="alternate" type="text/html" href="\(entry.link)"/>
                <id>\(entry.guid)</id>
                <published>\(rfc3339(entry.published))</published>
                <updated>\(rfc3339(entry.published))</updated>
                <author><name>\(escape(entry.author))</name></author>
                <summary type="html">\(escape(entry.html))</summary>
                </entry>

                """
        }
        return xml + "</feed>\n"
    }

    static func escape(_ text: String) -> String {
        // By UTF-8 bytes, not Characters: the four escaped characters are ASCII, and walking
        // grapheme clusters made generating 2,000 feeds of 40 KB cost seconds in a debug build.
        let utf8 = text.utf8
        guard utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 }) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count + 64)
        for byte in utf8 {
            switch byte {
            case 0x26: bytes.append(contentsOf: "&amp;".utf8)
            case 0x3C: bytes.append(contentsOf: "&lt;".utf8)
            case 0x3E: bytes.append(contentsOf: "&gt;".utf8)
            case 0x22: bytes.append(contentsOf: "&quot;".utf8)
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func rfc822(_ date: Date) -> String {
        CalendarText.rfc822String(from: date)
    }

    static func rfc3339(_ date: Date) -> String {
        CalendarText.rfc3339String(from: date)
    }
}
