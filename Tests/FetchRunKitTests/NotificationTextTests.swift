import Foundation
import Testing
@testable import FetchRunKit

/// The text of chat and phone notifications: escaping per markup, limits, splitting, digests.
@Suite struct NotificationTextTests {
    func item(_ title: String, link: String? = "https://x.example/a", summary: String? = nil, diff: String? = nil) -> Delivery {
        var item = Item(id: title, title: title, link: link, summary: summary)
        if let diff { item.extra["diff"] = diff }
        return .item(item, source: "news", sourceTitle: nil)
    }

    @Test func everyMarkupEscapesWhatWouldFormatOrPing() {
        let hostile = "<b>*x*</b> & @everyone <!here> [a](b) `c`"
        #expect(NotificationText(markup: .plain, limit: .none).escaped(hostile) == hostile)
        #expect(NotificationText(markup: .slack, limit: .none).escaped(hostile) == "&lt;b&gt;*x*&lt;/b&gt; &amp; @everyone &lt;!here&gt; [a](b) `c`")
        #expect(NotificationText(markup: .html, limit: .none).escaped(hostile + "\"") == "&lt;b&gt;*x*&lt;/b&gt; &amp; @everyone &lt;!here&gt; [a](b) `c`&quot;")
        #expect(NotificationText(markup: .discord, limit: .none).escaped(hostile) == #"\<b\>\*x\*\</b\> & \@everyone \<!here\> \[a\]\(b\) \`c\`"#)
    }

    @Test func linksCannotBreakOutOfTheirMarkupAndOnlyWebLinksAreLinked() {
        let slack = NotificationText(markup: .slack, limit: .none)
        #expect(slack.heading("T", link: "https://x.example/a|b>c") == "*<https://x.example/a%7Cb%3Ec|T>*")
        let discord = NotificationText(markup: .discord, limit: .none)
        #expect(discord.heading("T", link: "https://x.example/(a)>") == "**[T](<https://x.example/(a%29%3E>)**")
        let html = NotificationText(markup: .html, limit: .none)
        #expect(html.heading("T", link: "https://x.example/?a=1&b=\"2\"") == #"<b><a href="https://x.example/?a=1&amp;b=&quot;2&quot;">T</a></b>"#)
        #expect(html.heading("T", link: "javascript:alert(1)") == "<b>T</b>")
        // A fence in a diff cannot close the code block.
        #expect(discord.preformatted("a\n```\nb") == "```\na\nˋˋˋ\nb\n```")
    }

    @Test func truncatingKeepsTheLimitAndEndsWithAnEllipsis() {
        // A summary is HTML (a feed's): text with entities, no tags here.
        let summary = String(repeating: "ünïcödé &amp; \"quoted\" ", count: 500)
        for (markup, limit) in [(NotificationText.Markup.discord, NotificationText.Limit.characters(2000)), (.html, .characters(4096)), (.plain, .bytes(4096)), (.slack, .characters(300))] {
            let text = NotificationText(markup: markup, limit: limit)
            let messages = text.messages(for: item("Title", summary: summary), template: nil)
            #expect(messages.count == 1)
            let message = messages[0]
            #expect(limit.length(message) <= limit.maximum, "\(markup): \(limit.length(message))")
            #expect(message.contains("…"), "\(markup)")
            if markup == .plain { #expect(message.contains("ünïcödé & \"quoted\"")) }
            // Never cut inside an escape: every & starts a whole entity.
            if markup == .html || markup == .slack {
                #expect(!message.contains(/&[a-z]{0,3}…/), "\(markup)")
            }
        }
    }

    @Test func splittingSendsEverythingInOrderWithinTheLimit() {
        let words = (1...900).map { "w\($0)" }
        let text = NotificationText(markup: .discord, limit: .characters(500), overflow: .split)
        let messages = text.messages(for: item("Title", summary: words.joined(separator: " "), diff: "-a\n+b"), template: nil)
        #expect(messages.count > 5 && messages.count <= NotificationText.maximumParts)
        #expect(messages.allSatisfy { $0.unicodeScalars.count <= 500 })
        let received = messages.joined(separator: " ").split(whereSeparator: { $0 == " " || $0 == "\n" }).filter { $0.hasPrefix("w") }.map(String.init)
        #expect(received == words)
        #expect(messages.last?.contains("_news_") == true)
        // Past ten messages the rest is said, not sent.
        let flood = text.messages(for: item("Title", summary: String(repeating: "flood ", count: 5000)), template: nil)
        #expect(flood.count == NotificationText.maximumParts && flood.last?.hasPrefix("… and ") == true, "\(flood.last ?? "")")
        // One word longer than the limit is cut into pieces, none lost.
        let long = String(repeating: "x", count: 700)
        let pieces = NotificationText(markup: .plain, limit: .characters(100), overflow: .split).messages(for: item("T", link: nil, summary: long), template: nil)
        #expect(pieces.allSatisfy { $0.count <= 100 } && pieces.joined().filter { $0 == "x" }.count == 700)
    }

    @Test func aDigestCountsListsWhatFitsAndSaysHowManyMore() {
        let deliveries = (1...50).map { item("Story \($0)", link: "https://x.example/\($0)") }
        let digest = NotificationText(markup: .html, limit: .characters(1000)).digest(of: deliveries, template: nil)
        #expect(digest.count == 1)
        let lines = digest[0].split(separator: "\n")
        #expect(lines.first == "<b>50 new items</b>")
        let listed = lines.count - 2
        #expect(lines.last == "… and \(50 - listed) more" && listed > 5)
        #expect(digest[0].unicodeScalars.count <= 1000)
        let all = NotificationText(markup: .html, limit: .characters(1000), overflow: .split).digest(of: deliveries, template: nil)
        #expect(all.count > 1 && all.joined().components(separatedBy: "Story ").count == 51)
    }

    /// Without a length limit (Gotify), a digest of a thousand deliveries of 64 KiB each is one
    /// message holding every one, both when cut and when split (each line was once copied
    /// with all the lines before it: 32 GB of copying for this one).
    @Test func anUnlimitedDigestHoldsEveryDeliveryWhole() throws {
        let summary = String(repeating: "s", count: 65_536)
        let deliveries = (1...1_000).map { item("Story \($0)", summary: summary) }
        let template = try OutputTemplate("{title}: {summary}")
        for overflow in [NotificationText.Overflow.truncate, .split] {
            let digest = NotificationText(markup: .plain, limit: .none, overflow: overflow).digest(of: deliveries, template: template)
            #expect(digest.count == 1)
            #expect(digest.first?.hasPrefix("1000 new items\n") == true && digest.first?.hasSuffix("Story 1000: " + summary) == true)
            #expect(digest.first.map { $0.utf8.count > 1_000 * 65_536 } == true)
        }
    }

    @Test func aTemplatesPlaceholdersAreEscapedForTheTarget() throws {
        let template = try OutputTemplate("New: {title} — {link}")
        let message = NotificationText(markup: .slack, limit: .none).messages(for: item("<!channel> & co"), template: template)
        #expect(message == ["New: &lt;!channel&gt; &amp; co — https://x.example/a"])
    }
}
