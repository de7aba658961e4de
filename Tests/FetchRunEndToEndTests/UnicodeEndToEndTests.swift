import FixtureServer
import Foundation
import Testing
import TestSupport

/// Text is UTF-8 end to end, through the built binary: a corpus of real-world scripts from a
/// feed's titles and HTML summaries, and a page without a declared charset, reaches every
/// surface unharmed — the terminal report, `show`, NDJSON, `status`, diffs, every output's
/// request, a mail's headers and body.
@Suite struct UnicodeEndToEndTests {
    /// One line per script; none holds a character a surface must escape (no controls, no
    /// Markdown of Discord's), so each must arrive exactly as written.
    static let corpus = [
        "漢字かな交じり文、한국어 텍스트", "مرحبا بالعالم — العربية", "שלום עולם עברית", "Привет, мир", "Καλημέρα κόσμε",
        "สวัสดีชาวโลก", "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈", "e\u{301}te\u{301} Ångström", "café ☕ 漢字",
    ]

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    /// An RSS feed whose item `n` is titled `corpus[n]`, its summary HTML holding the line again.
    static func feed(_ count: Int) -> [UInt8] {
        var xml = #"<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Мир новостей</title>"#
        for (index, line) in corpus.prefix(count).enumerated() {
            xml += "<item><title>\(escaped(line))</title><link>https://news.example/\(index)</link><guid>g\(index)</guid>"
            xml += "<description>\(escaped("<p>\(line) <b>café ☕ 漢字</b></p>"))</description></item>"
        }
        return Array((xml + "</channel></rss>").utf8)
    }

    func bodies(_ server: FixtureServer, _ path: String) -> [[String: Any]] {
        server.requests.filter { $0.path.hasPrefix(path) && ($0.method == "POST" || $0.method == "PUT") }
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
    }

    /// A mail as Python's `email` package reads it: its subject and its text.
    func parsed(mail: String) throws -> (subject: String, body: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mail-\(UUID().uuidString).eml")
        try Data(mail.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import email, sys
            from email import policy
            message = email.message_from_bytes(open(sys.argv[1], 'rb').read(), policy=policy.default)
            # The text part, and the HTML one beside it when the mail has both.
            body = message.get_body(preferencelist=('plain',)).get_content()
            html = message.get_body(preferencelist=('html',))
            body += html.get_content() if html is not None else ''
            sys.stdout.buffer.write((str(message['subject']) + '\\n---\\n' + body).encode('utf-8'))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let parts = output.components(separatedBy: "\n---\n")
        return (parts.first ?? "", parts.dropFirst().joined(separator: "\n---\n"))
    }

    @Test func everySurfaceCarriesEveryScript() async throws {
        let server = try FixtureServer()
        let smtp = try SMTPFixture()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: phone, type: ntfy, url: "\(server.url("/ntfy/alerts"))" }
              - { name: gotify, type: gotify, url: "\(server.url("/gotify"))", token: gotify-token }
              - { name: slack, type: slack, url: "\(server.url("/slack/T0/B0/x"))" }
              - { name: discord, type: discord, url: "\(server.url("/discord/1/x"))" }
              - { name: telegram, type: telegram, api_url: "\(server.url("/tg"))", token: "1:tg", chat_id: "42" }
              - { name: matrix, type: matrix, homeserver: "\(server.url(""))", token: mx, room: "!room:example.org" }
              - { name: hook, type: webhook, url: "\(server.url("/hook"))" }
              - { name: script, type: command, command: [sh, -c, "cat >> delivered.ndjson"] }
              - { name: mail, type: email, url: "\(smtp.url)", from: f@example.org, to: [me@example.org], starttls: off, per_item: true, subject: "{title}" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
              - { name: shop, type: page, url: "\(server.url("/files/shop.html"))", css: "#price", outputs: [] }
              - { name: broken, type: exec, command: [sh, -c, "echo 'ошибка: 漢字 سلام' >&2; exit 3"], outputs: [] }
            """, to: "sources.yaml")
        // A page served as text/html without a charset, nor a <meta>: valid UTF-8 is UTF-8.
        func shop(_ price: String) -> [UInt8] { Array("<html><body><p id=price>価格 \(price) €</p></body></html>".utf8) }
        server.serve("news.xml", body: Self.feed(1))
        server.serve("shop.html", body: shop("1.299,00"), contentType: "text/html")
        _ = try await fetchrun.run([])
        server.serve("news.xml", body: Self.feed(Self.corpus.count))
        server.serve("shop.html", body: shop("1.399,00"), contentType: "text/html")
        let run = try await fetchrun.run(["--format", "json"])

        // NDJSON: every title as written, the diff in the page's script.
        let events = run.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let titles = events.filter { $0["event"] as? String == "item" && $0["source"] as? String == "news" }.compactMap { $0["title"] as? String }
        #expect(Set(titles) == Set(Self.corpus.dropFirst()), "\(titles)")
        let diff = try #require(events.first { $0["event"] as? String == "changed" }?["diff"] as? String)
        #expect(diff.contains("-価格 1.299,00 €") && diff.contains("+価格 1.399,00 €"), "\(diff)")

        // The terminal report and `show`.
        let shown = try await fetchrun.run(["show", "news"])
        for line in Self.corpus { #expect(shown.stdout.contains(line), "show: \(line)") }
        let test = try await fetchrun.run(["test-source", "shop"])
        #expect(test.stdout.contains("価格 1.399,00 €"), "\(test.stdout)")
        server.serve("news.xml", body: Array(String(decoding: Self.feed(Self.corpus.count), as: UTF8.self).replacingOccurrences(of: "g0<", with: "g-new<").utf8))
        let text = try await fetchrun.run([])
        #expect(text.stdout.contains(Self.corpus[0]), "\(text.stdout)")
        let status = try await fetchrun.run(["status"])
        #expect(status.stdout.contains("ошибка: 漢字 سلام"), "\(status.stdout)")

        // Every output's request: the title and the summary's text, decoded as the UTF-8 it is.
        let summary = "café ☕ 漢字"
        for line in Self.corpus.dropFirst() {
            func carried(_ text: String?) -> Bool { text.map { $0.contains(line) && $0.contains(summary) } ?? false }
            #expect(bodies(server, "/ntfy/").contains { carried($0["message"] as? String) }, "ntfy: \(line)")
            #expect(bodies(server, "/gotify/message").contains { carried($0["message"] as? String) }, "gotify: \(line)")
            #expect(bodies(server, "/slack/T0/B0/x").contains { carried($0["text"] as? String) }, "slack: \(line)")
            #expect(bodies(server, "/discord/1/x").contains { carried(($0["content"] as? String)?.replacingOccurrences(of: "\\", with: "")) }, "discord: \(line)")
            #expect(bodies(server, "/tg/bot1:tg/sendMessage").contains { carried($0["text"] as? String) }, "telegram: \(line)")
            let matrix = bodies(server, "/_matrix/")
            #expect(matrix.contains { carried($0["body"] as? String) && carried($0["formatted_body"] as? String) }, "matrix: \(line)")
            #expect(bodies(server, "/hook").contains { ($0["title"] as? String) == line }, "webhook: \(line)")
        }
        let script = try fetchrun.read("delivered.ndjson")
        for line in Self.corpus.dropFirst() { #expect(script.contains("\"title\":\"\(line)\""), "command: \(line)") }
        // No mojibake anywhere: the marks of UTF-8 read as Latin-1.
        for request in server.requests { #expect(!String(decoding: request.body, as: UTF8.self).contains("Ã"), "\(request.path)") }

        // Mail: the subject (RFC 2047) and the body, as a mail reader decodes them.
        let mails = try smtp.messages.map { try parsed(mail: $0.data) }
        for line in Self.corpus.dropFirst() {
            // In the text part and, escaped as HTML writes it, in the HTML part too.
            let escaped = line.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
                .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
            #expect(mails.contains { $0.subject == line && $0.body.contains(line) && $0.body.contains(">" + escaped + "<") }, "mail: \(line) in \(mails.map(\.subject))")
        }
        for message in smtp.messages {
            #expect(message.data.components(separatedBy: "\r\n").allSatisfy { $0.utf8.count <= 998 })
        }
    }

    @Test func aLongCJKSummaryMakesAMatrixEventWithinSixtyFourKibibytes() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: matrix, type: matrix, homeserver: "\(server.url(""))", token: mx, room: "!room:example.org" }
              - { name: digest, type: matrix, homeserver: "\(server.url("/d"))", token: mx, room: "!room:example.org", digest: true }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))", outputs: [matrix] }
              - { name: many, type: rss, url: "\(server.url("/files/many.xml"))", outputs: [digest] }
            """, to: "sources.yaml")
        // 120 KB of Japanese in each summary; and 1,500 items for a digest.
        let long = String(repeating: "長い要約の文章です。", count: 4_000)
        func feed(_ count: Int, summary: String) -> [UInt8] {
            var xml = #"<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>"#
            for index in 0..<count {
                xml += "<item><title>記事の見出し \(index) — 漢字</title><link>https://news.example/\(index)</link><guid>\(index)</guid><description>\(Self.escaped("<p>\(summary)</p>"))</description></item>"
            }
            return Array((xml + "</channel></rss>").utf8)
        }
        server.serve("news.xml", body: feed(1, summary: long))
        server.serve("many.xml", body: feed(1, summary: "短い"))
        _ = try await fetchrun.run([])
        server.serve("news.xml", body: feed(8, summary: long))
        server.serve("many.xml", body: feed(1_500, summary: "短い"))
        let run = try await fetchrun.run([])
        #expect(run.status == 0, "\(run.stderr)")
        let puts = server.requests.filter { $0.method == "PUT" }
        #expect(puts.count > 1)
        for put in puts {
            // The homeserver adds its envelope (sender, ids, time: well under 1 KiB).
            #expect(put.body.count < 64 * 1024 - 1024, "\(put.path): \(put.body.count) bytes")
            let event = try #require(try JSONSerialization.jsonObject(with: Data(put.body)) as? [String: Any])
            let formatted = try #require(event["formatted_body"] as? String)
            #expect(formatted.utf8.count <= 30_000 && (event["body"] as? String)?.utf8.count ?? .max <= 30_000)
            #expect(!formatted.contains("Ã") && (event["body"] as? String)?.contains("漢字") == true)
        }
    }
}
