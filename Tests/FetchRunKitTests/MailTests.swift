import Foundation
import Testing
@testable import FetchRunKit

/// The HTML mail: what a summary keeps of its markup, how a message is put together, and what
/// a digest's schedule says about time.
@Suite struct MailTests {
    func settings(format: EmailOutput.Format = .html, images: Bool = false, perItem: Bool = false) -> EmailOutput.Settings {
        var settings = EmailOutput.Settings(url: "smtp://x", from: "f@news.example.org", to: ["t@x.org"], username: nil, password: nil, perItem: perItem, subject: nil)
        settings.format = format
        settings.images = images
        settings.outputName = "inbox"
        return settings
    }

    func item(_ id: String, source: String = "news", title: String? = nil, summary: String? = nil, link: String? = nil) -> Delivery {
        Delivery.item(Item(id: id, title: title ?? "Story \(id)", link: link ?? "https://news.example/\(id)", published: Date(timeIntervalSince1970: 1_795_000_000), summary: summary, author: "Ана"), source: source, sourceTitle: nil)
    }

    /// The parts of a multipart/alternative message, decoded: (content type, text).
    func parts(_ message: String) throws -> [(type: String, text: String)] {
        let head = message.components(separatedBy: "\r\n\r\n")[0]
        let boundaryLine = try #require(head.components(separatedBy: "\r\n").first { $0.hasPrefix("Content-Type: multipart/alternative") })
        let boundary = try #require(boundaryLine.components(separatedBy: "boundary=\"").last?.dropLast())
        let pieces = message.components(separatedBy: "\r\n--\(boundary)")
        return pieces.dropFirst().filter { !$0.hasPrefix("--") }.map { piece in
            let split = piece.components(separatedBy: "\r\n\r\n")
            let headers = split[0]
            var body = split.dropFirst().joined(separator: "\r\n\r\n")
            let type = headers.contains("text/html") ? "text/html" : "text/plain"
            if headers.contains("quoted-printable") { body = Self.decodeQuotedPrintable(body) }
            return (type, body)
        }
    }

    static func decodeQuotedPrintable(_ text: String) -> String {
        var decoded: [UInt8] = [], bytes = Array(text.replacingOccurrences(of: "=\r\n", with: "").utf8), index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "="), index + 2 < bytes.count, let byte = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16) {
                decoded.append(byte)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    // MARK: The summary's markup

    @Test(arguments: [
        "<script>alert(1)</script><p>kept</p>",
        "<style>body{display:none}</style><p>kept</p>",
        "<p onclick=\"alert(1)\" onmouseover='alert(2)' style=\"position:fixed\">kept</p>",
        "<a href=\"javascript:alert(1)\">kept</a>",
        "<a href=\" JaVaScRiPt:alert(1)\">kept</a><a href=\"java&#x09;script:alert(1)\">kept</a>",
        "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">kept</a>",
        "<iframe src=\"https://evil.example/\"></iframe><p>kept</p>",
        "<form action=\"https://evil.example/\"><input name=q><button>Go</button></form><p>kept</p>",
        "<svg onload=alert(1)><script>alert(1)</script></svg><p>kept</p>",
        "<img src=x onerror=alert(1)><p>kept</p>",
        "<object data=\"x.swf\"><p>fallback</p></object><embed src=\"x.swf\"><p>kept</p>",
        "<p>kept<p><b>un<i>closed <table><tr><td>cell",
        "<<p>>kept</p><!-- <script>alert(1)</script> --><![CDATA[<script>alert(1)</script>]]>",
        "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example/\"><base href=\"https://evil.example/\"><p>kept</p>",
    ])
    func aHostileSummaryComesOutInert(_ summary: String) {
        let html = MailSummary.html(summary, baseURL: "https://news.example/a", images: false)
        let lowered = html.lowercased()
        for bad in ["<script", "<style", "<iframe", "<form", "<input", "<svg", "<object", "<embed", "<meta", "<base", "javascript:", "data:", " on", "position:fixed", "<!--"] {
            #expect(!lowered.contains(bad), "\(bad) in \(html)")
        }
        #expect(html.contains("kept"), "\(html)")
    }

    @Test func tenThousandNestedTagsAreFlattenedAndTheTextAfterThemKept() {
        let summary = String(repeating: "<div><span>", count: 10_000) + "deep" + String(repeating: "</span></div>", count: 10_000) + "<p>after</p>"
        let html = MailSummary.html(summary, baseURL: nil, images: false)
        #expect(html.contains("deep") && html.contains("after"))
        #expect(html.components(separatedBy: "<div").count - 1 <= MailSummary.maximumDepth)
        // Every element opened is closed.
        #expect(html.components(separatedBy: "<div").count == html.components(separatedBy: "</div>").count)
    }

    @Test func linksAreMadeAbsoluteAndImagesLeftOutUnlessAsked() {
        let summary = #"<p>Read <a href="/story/2" title="more">the rest</a>, <a href="mailto:desk@news.example">write</a>.</p><img src="/pic.jpg" alt="A harbour"><img src="https://cdn.example/p.png">"#
        let html = MailSummary.html(summary, baseURL: "https://news.example/story/1", images: false)
        #expect(html.contains(#"<a href="https://news.example/story/2" title="more""#), "\(html)")
        #expect(html.contains(#"href="mailto:desk@news.example""#))
        #expect(!html.contains("<img") && html.contains("[A harbour]"), "\(html)")
        let withImages = MailSummary.html(summary, baseURL: "https://news.example/story/1", images: true)
        #expect(withImages.contains(#"<img src="https://news.example/pic.jpg" alt="A harbour""#), "\(withImages)")
        #expect(withImages.contains(#"<img src="https://cdn.example/p.png""#))
        // Without a base, a relative link is no link: its text stays.
        let unanchored = MailSummary.html(#"<a href="/x">text</a>"#, baseURL: nil, images: false)
        #expect(unanchored == "text")
    }

    @Test func plainTextKeepsItsLineBreaksAndNonLatinScripts() {
        let html = MailSummary.html("Привет & <мир>\nالسلام عليكم\n日本語のテキスト", baseURL: nil, images: false)
        #expect(html == "Привет &amp; &lt;мир&gt;<br>السلام عليكم<br>日本語のテキスト")
        let markup = MailSummary.html("<p>Ελληνικά <b>κείμενο</b> 👨‍👩‍👧‍👦</p>", baseURL: nil, images: false)
        #expect(markup == "<p>Ελληνικά <b>κείμενο</b> 👨‍👩‍👧‍👦</p>")
    }

    // MARK: The message

    @Test func anHTMLMailIsMultipartAlternativeWithTextFirstAndStableIDs() throws {
        let deliveries = [item("1", summary: "<p>Первая <script>x()</script>новость</p>"), item("2")]
        let message = EmailOutput.message(deliveries, settings: settings(), template: nil, date: Date())
        let head = message.components(separatedBy: "\r\n\r\n")[0]
        #expect(head.contains("List-Id: fetchrun inbox <inbox.fetchrun>"))
        #expect(head.contains("Content-Type: multipart/alternative; boundary=\""))
        let id = try #require(head.components(separatedBy: "\r\n").first { $0.hasPrefix("Message-ID: ") })
        #expect(id.hasSuffix(".inbox@news.example.org>"))
        // The same deliveries again (a retry) make the same id; others another.
        let again = EmailOutput.message(deliveries, settings: settings(), template: nil, date: Date().addingTimeInterval(60))
        #expect(again.contains(id))
        #expect(!EmailOutput.message([item("1")], settings: settings(), template: nil, date: Date()).contains(id))

        let parts = try parts(message)
        #expect(parts.map(\.type) == ["text/plain", "text/html"])
        #expect(parts[0].text.contains("Story 1\r\nhttps://news.example/1\r\n(news)"))
        let html = parts[1].text
        #expect(html.contains(#"<a href="https://news.example/1""#) && html.contains("Первая новость") && !html.contains("<script"))
        #expect(html.contains("Ана") && html.contains("prefers-color-scheme: dark"))
        #expect(message.components(separatedBy: "\r\n").allSatisfy { $0.utf8.count <= 998 })
        // The default subject counts and names where from.
        #expect(head.contains("Subject: fetchrun: 2 updates from news"))
    }

    @Test func manyItemsOfSeveralSourcesGetContentsAndASectionEach() throws {
        let deliveries = (1...4).map { item("a\($0)", source: "alpha") } + (1...3).map { item("b\($0)", source: "beta") }
        let html = try parts(EmailOutput.message(deliveries, settings: settings(), template: nil, date: Date()))[1].text
        #expect(html.contains(##"<a href="#source-alpha""##) && html.contains(##"<a href="#source-beta""##))
        #expect(html.contains(#"<h2 id="source-alpha""#) && html.contains(#"<h2 id="source-beta""#))
        // A few items of one source: neither.
        let few = try parts(EmailOutput.message([item("1"), item("2")], settings: settings(), template: nil, date: Date()))[1].text
        #expect(!few.contains("#source-") && !few.contains("<h2"))
        var subjectSettings = settings()
        subjectSettings.subject = try OutputTemplate("{count} new from {sources}")
        let subject = EmailOutput.message(deliveries, settings: subjectSettings, template: nil, date: Date())
        #expect(subject.contains("Subject: 7 new from alpha, beta"))
    }

    @Test func aWatchedSelectionsDiffIsMarkedAndTitlesAreEscaped() throws {
        var changed = Item(id: "price", title: "<b>Price</b> & \"more\"", link: "https://shop.example/p")
        changed.diff = "--- before\n+++ after\n@@ -1 +1 @@\n-<s>19.99 €</s>\n+17.49 €\n"
        let html = try parts(EmailOutput.message([Delivery.item(changed, source: "shop", sourceTitle: "Shop")], settings: settings(), template: nil, date: Date()))[1].text
        #expect(html.contains("&lt;b&gt;Price&lt;/b&gt; &amp; &quot;more&quot;"), "\(html)")
        #expect(html.contains(#"class="fr-removed""#) && html.contains("− &lt;s&gt;19.99 €&lt;/s&gt;"))
        #expect(html.contains(#"class="fr-added""#) && html.contains("+ 17.49 €"))
        #expect(!html.contains("+++ after"))
    }

    @Test func formatTextAndATemplateKeepTodaysPlainMail() throws {
        let message = EmailOutput.message([item("1")], settings: settings(format: .text), template: nil, date: Date())
        #expect(message.contains("Content-Type: text/plain; charset=utf-8") && !message.contains("multipart"))
        #expect(message.contains("List-Id: fetchrun inbox <inbox.fetchrun>"))
        let config = try ConfigLoader(environment: [:]).load(text: """
            outputs:
              - { name: a, type: email, url: "smtp://127.0.0.1", from: f@x.org, to: [t@x.org] }
              - { name: b, type: email, url: "smtp://127.0.0.1", from: f@x.org, to: [t@x.org], template: "{title}" }
              - { name: c, type: email, url: "smtp://127.0.0.1", from: f@x.org, to: [t@x.org], template: "{title}", format: html, images: true }
            sources:
              - { name: unused, type: traffic }
            """, file: "sources.yaml", directory: "/")
        let formats = config.outputs.compactMap { ($0.output as? EmailOutput)?.settings }
        #expect(formats.map(\.format) == [.html, .text, .html] && formats.map(\.images) == [false, false, true])
    }

    @Test func theLayoutTemplateParses() {
        #expect(!MailLayout.template.render(["subject": "x", "sections": [[String: Any]]()]).isEmpty)
    }

    // MARK: Digest schedules

    func schedule(_ text: String, _ zone: String = "UTC") throws -> DigestSchedule {
        try DigestSchedule(text, timeZone: try #require(TimeZone(identifier: zone)))
    }

    func date(_ text: String) throws -> Date {
        try #require(CalendarText.rfc3339(text))
    }

    @Test func aDigestsNextTimeIsItsFirstAfterTheDate() throws {
        #expect(try schedule("hourly").next(after: date("2026-12-04T19:15:00Z")) == (try date("2026-12-04T20:00:00Z")))
        #expect(try schedule("hourly@:30").next(after: date("2026-12-04T19:30:00Z")) == (try date("2026-12-04T20:30:00Z")))
        #expect(try schedule("daily@08:00").next(after: date("2026-12-04T07:59:59Z")) == (try date("2026-12-04T08:00:00Z")))
        #expect(try schedule("daily@08:00").next(after: date("2026-12-04T08:00:00Z")) == (try date("2026-12-05T08:00:00Z")))
        #expect(try schedule("daily").next(after: date("2026-12-04T08:00:00Z")) == (try date("2026-12-05T00:00:00Z")))
        // 2026-12-04 is a Friday.
        #expect(try schedule("weekly@mon 08:00").next(after: date("2026-12-04T19:00:00Z")) == (try date("2026-12-07T08:00:00Z")))
        #expect(try schedule("weekly@Friday 20:00").next(after: date("2026-12-04T19:00:00Z")) == (try date("2026-12-04T20:00:00Z")))
        // In the config's zone: 08:00 in Berlin is 07:00 UTC in winter and 06:00 in summer.
        #expect(try schedule("daily@08:00", "Europe/Berlin").next(after: date("2026-12-04T12:00:00Z")) == (try date("2026-12-05T07:00:00Z")))
        #expect(try schedule("daily@08:00", "Europe/Berlin").next(after: date("2026-07-04T12:00:00Z")) == (try date("2026-07-05T06:00:00Z")))
        // A time the change to summer time skips (02:30 on 29 March in Berlin) is taken at the next one.
        let skipped = try schedule("daily@02:30", "Europe/Berlin").next(after: date("2026-03-28T12:00:00Z"))
        #expect(skipped == (try date("2026-03-29T01:00:00Z")), "\(skipped)")
    }

    @Test(arguments: ["monthly", "daily@8", "daily@25:00", "daily@08:60", "weekly@someday 08:00", "weekly", "hourly@30", "hourly@:75", ""])
    func aScheduleThatIsNoneIsRefused(_ text: String) {
        #expect(throws: ValueError.self) { try schedule(text) }
    }

    @Test func aConfigSaysWhereADigestOrATimeZoneIsWrong() throws {
        func problems(_ text: String) -> [String] {
            do {
                _ = try ConfigLoader(environment: [:]).load(text: text, file: "sources.yaml", directory: "/")
                return []
            } catch {
                return error.diagnostics.map(\.description)
            }
        }
        let wrong = problems("""
            timezone: Mars/Olympus_Mons
            outputs:
              - { name: a, type: email, url: "smtp://127.0.0.1", from: f@x.org, to: [t@x.org], digest: "daily@8:0", format: pdf }
              - { name: b, type: ntfy, url: "https://ntfy.example/alerts", digest: fortnightly }
            sources:
              - { name: unused, type: traffic }
            """)
        #expect(wrong.contains { $0.hasPrefix("sources.yaml:1:11:") && $0.contains("unknown time zone 'Mars/Olympus_Mons'") }, "\(wrong)")
        #expect(wrong.contains { $0.hasPrefix("sources.yaml:3:") && $0.contains("'digest'") && $0.contains("not a time of day") }, "\(wrong)")
        #expect(wrong.contains { $0.hasPrefix("sources.yaml:3:") && $0.contains("'format' must be html or text") }, "\(wrong)")
        #expect(wrong.contains { $0.hasPrefix("sources.yaml:4:") && $0.contains("not a digest schedule") }, "\(wrong)")
        let config = try ConfigLoader(environment: [:]).load(text: """
            timezone: America/Sao_Paulo
            outputs:
              - { name: a, type: email, url: "smtp://127.0.0.1", from: f@x.org, to: [t@x.org], digest: "weekly@mon 08:00" }
              - { name: b, type: ntfy, url: "https://ntfy.example/alerts", digest: true }
            sources:
              - { name: unused, type: traffic }
            """, file: "sources.yaml", directory: "/")
        #expect(config.outputs[0].digest?.timeZone.identifier == "America/Sao_Paulo" && config.outputs[1].digest == nil)
    }
}
