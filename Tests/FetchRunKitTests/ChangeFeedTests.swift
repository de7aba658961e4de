import Foundation
import Testing
@testable import FetchRunKit

/// The feeds of changes as documents: what fetchrun's own feed reader reads back from them,
/// and hostile text that stays text.
@Suite struct ChangeFeedTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func records() -> [ChangeRecord] {
        var change = ChangeRecord(id: "shop/change/change-2/00ff", source: "shop", kind: .change, at: now)
        change.title = "Цена 1 299 ₽"
        change.link = "https://shop.example/товар"
        change.diff = "@@ -1 +1 @@\n-Цена 1 399 ₽\n+Цена 1 299 ₽"
        var item = ChangeRecord(id: "news/item/東京 1", source: "news", kind: .item, at: now.addingTimeInterval(-60))
        item.title = "東京の天気 <script>alert(1)</script>\u{1B}]0;owned\u{07}\u{0}"
        item.link = "javascript:alert(document.cookie)"
        item.summary = "<img src=x onerror=alert(1)> & more"
        var failing = ChangeRecord(id: "dead/failing/1800000000000", source: "dead", kind: .failing, at: now.addingTimeInterval(-120))
        failing.title = "failing: HTTP 500"
        failing.error = "HTTP 500 <b>"
        return [change, item, failing]
    }

    @Test func anAtomFeedReadsBackEntryByEntry() throws {
        let feed = ChangeFeed(title: "fetchrun: all changes", id: "urn:fetchrun:feed:all", selfURL: "http://127.0.0.1:9464/feeds/all.atom")
        let bytes = feed.render(records(), as: .atom, fallback: now)
        let read = try FeedParser().parse(Data(bytes))
        #expect(read.format == .atom10 && read.warnings.isEmpty, "\(read.warnings)")
        #expect(read.title == "fetchrun: all changes")
        #expect(read.items.map(\.id) == records().map(ChangeFeed.entryID))
        #expect(Set(read.items.map(\.id)).count == 3)
        #expect(read.items[0].title == "[shop] Цена 1 299 ₽" && read.items[0].link == "https://shop.example/товар")
        #expect(read.items[0].published == now || read.items[0].updated == now)
        // The diff as HTML, its lines marked.
        let content = read.items[0].summary ?? ""
        #expect(content.contains("<ins") && content.contains("+Цена 1 299 ₽</ins>") && content.contains("<del") && content.contains("-Цена 1 399 ₽</del>"), "\(content)")
        // Hostile text is text: no element of its own, no control characters, no script link.
        #expect(read.items[1].title.hasPrefix("[news] 東京の天気 <script>alert(1)</script>"), "\(read.items[1].title)")
        #expect(read.items[1].link == nil)
        #expect(!(read.items[1].summary ?? "").contains("<img"), "\(read.items[1].summary ?? "")")
        #expect((read.items[1].summary ?? "").contains("&lt;img src=x onerror=alert(1)&gt;"))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "a control character reached the XML")
        #expect(text.contains(#"<link rel="self" href="http://127.0.0.1:9464/feeds/all.atom"/>"#))
    }

    @Test func aJSONFeedReadsBackToo() throws {
        let bytes = ChangeFeed(title: "fetchrun: shop", id: "urn:fetchrun:feed:source:shop").render(records(), as: .json, fallback: now)
        let read = try FeedParser().parse(Data(bytes))
        #expect(read.format == .jsonFeed11)
        #expect(read.items.map(\.id) == records().map(ChangeFeed.entryID))
        #expect(read.items[2].title == "[dead] failing: HTTP 500")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let items = try #require(object["items"] as? [[String: Any]])
        #expect((items[2]["content_html"] as? String) == "<p>HTTP 500 &lt;b&gt;</p>")
        #expect(items[1]["url"] == nil)
        #expect(items[0]["date_published"] as? String == "2027-01-15T08:00:00Z")
    }

    @Test func entryIDsAreURNsWithTheRecordsIdEscaped() {
        let record = ChangeRecord(id: "news/item/東京 1?&", source: "news", kind: .item, at: now)
        #expect(ChangeFeed.entryID(of: record) == "urn:fetchrun:change:news/item/%E6%9D%B1%E4%BA%AC%201%3F%26")
    }

    @Test func anEmptyFeedIsStillAFeed() throws {
        let bytes = ChangeFeed(title: "fetchrun: quiet", id: "urn:fetchrun:feed:source:quiet").render([], as: .atom, fallback: now)
        let read = try FeedParser().parse(Data(bytes))
        #expect(read.items.isEmpty && read.title == "fetchrun: quiet")
    }
}
