import Foundation
import TestSupport
import Testing
import FixtureServer

/// HTML mail through the built binary, to local SMTP receivers (with STARTTLS and without):
/// each message read back by Python's `email` package, as a mail program would, and its HTML
/// part opened in Debian's headless Chromium, which also takes the screenshots the README shows.
@Suite struct HTMLMailTests {
    static let chromium = "/usr/bin/chromium"
    static let python = FeedEndpointTests.packageRoot.appendingPathComponent(".build/test-venv/bin/python3").path

    /// An RSS feed titled `title` whose items carry their summaries as CDATA.
    static func feed(title: String, _ items: [(id: String, title: String, summary: String)]) -> [UInt8] {
        var xml = #"<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>"# + title + "</title>"
        for (index, item) in items.enumerated() {
            xml += "<item><guid>\(item.id)</guid><title>\(item.title)</title><link>https://news.example/\(item.id)</link>"
            xml += "<pubDate>Fri, 04 Dec 2026 \(10 + index):15:00 GMT</pubDate><author>desk@news.example (Редакция)</author>"
            xml += "<description><![CDATA[\(item.summary)]]></description></item>"
        }
        return Array((xml + "</channel></rss>").utf8)
    }

    /// A shop's page whose title names it, with the price in `p.price`.
    static func shop(_ price: String) -> [UInt8] {
        Array("<html><head><meta charset=utf-8><title>Кофемолка — цена</title></head><body><p class=price>\(price)</p></body></html>".utf8)
    }

    /// What `mail-parts.py` read of `message`; the HTML part is written to `html` when given.
    func parsed(_ message: String, in folder: URL, html: URL? = nil) async throws -> [String: Any] {
        let file = folder.appendingPathComponent("message-\(UUID().uuidString).eml")
        try Data(message.utf8).write(to: file)
        let (status, out, err) = try await python(["mail-parts.py", file.path] + (html.map { [$0.path] } ?? []), in: folder)
        #expect(status == 0, "\(err)")
        return try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)\(err)")
    }

    /// Runs a script of Tests/Fixtures with the test venv's Python.
    func python(_ arguments: [String], in folder: URL) async throws -> (status: Int32, stdout: String, stderr: String) {
        guard FileManager.default.isExecutableFile(atPath: Self.python), FileManager.default.isExecutableFile(atPath: Self.chromium) else {
            throw FixtureError("no \(Self.python) or \(Self.chromium): `make test` installs Debian's chromium and Playwright (PyPI, in .build/test-venv)")
        }
        let script = FeedEndpointTests.packageRoot.appendingPathComponent("Tests/Fixtures").appendingPathComponent(arguments[0]).path
        let output = folder.appendingPathComponent("out-\(UUID().uuidString)").path, errors = folder.appendingPathComponent("err-\(UUID().uuidString)").path
        let child = try ChildProcess(
            executable: Self.python, arguments: [script] + arguments.dropFirst(),
            environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": folder.path], directory: folder.path, stdout: output, stderr: errors
        )
        await child.waitForExit(timeout: .seconds(120))
        return (child.terminationStatus, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "", (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")
    }

    /// Opens `html` in Chromium (mail-render.py) and expects every check to pass; with
    /// `FETCHRUN_SCREENSHOTS` set (`make screenshots`), the pictures of a mail that is `shown`
    /// in the README are copied there, named `PREFIX-light.png` and `PREFIX-dark.png`.
    func rendered(_ html: URL, in folder: URL, prefix: String, shown: Bool = false) async throws {
        let shots = folder.appendingPathComponent("shots-\(prefix)")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let (status, out, err) = try await python(["mail-render.py", html.path, Self.chromium, shots.path], in: folder)
        #expect(status == 0, "\(err)")
        let checks = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any] ?? [:]
        #expect(checks.count >= 16, "\(out)\(err)")
        for (name, result) in checks.sorted(by: { $0.key < $1.key }) {
            #expect(result as? Bool == true, "\(name): \(result)")
        }
        for scheme in ["light", "dark"] {
            let shot = shots.appendingPathComponent("mail-\(scheme).png")
            let png = try Data(contentsOf: shot)
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 5_000)
            if shown, let keep = ProcessInfo.processInfo.environment["FETCHRUN_SCREENSHOTS"] {
                let target = URL(fileURLWithPath: keep).appendingPathComponent("\(prefix)-\(scheme).png")
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: shot, to: target)
            }
        }
    }

    func scratch() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("html-mail-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func aMailOverSTARTTLSParsesIntoTextAndHTMLAndHostileSummariesComeOutInert() async throws {
        let server = try FixtureServer()
        let smtp = try SMTPTLSFixture()
        defer { smtp.stop() }
        let folder = try scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            timezone: Europe/Moscow
            outputs:
              - { name: mail, type: email, url: "\(smtp.url)", ca_file: "\(smtp.caFile)", from: fetchrun@example.org, to: [me@example.org], username: me, password: "${SMTP_PASSWORD}" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        let tracker = server.url("/files/tracker.gif")
        // 10,000 nested tags within the summary's 64 KiB, closed or not.
        let nested = String(repeating: "<b>", count: 10_000) + "глубоко" + String(repeating: "</b>", count: 5_000)
        let items: [(id: String, title: String, summary: String)] = [
            ("ru", "Рынок растёт", "<p>Текст <b>жирный</b></p><script>window.pwned=1</script><style>body{display:none}</style>"),
            ("ar", "عاجل: خبر مهم", #"<a href="javascript:window.pwned=1">انقر</a><img src="\#(tracker)" onerror="window.pwned=1"><p onclick="window.pwned=1" style="position:fixed;top:0">نص عربي</p>"#),
            ("ja", "日本語の見出し", nested + "<table><tr><td>未閉<p><b>壊れた<i>マークアップ"),
            ("rel", "Relative &amp; &lt;odd&gt; links", #"<a href="/more" onmouseover="window.pwned2=1">続き</a><iframe src="\#(tracker)"></iframe><form action="\#(tracker)"><input name=q><button>Go</button></form><svg onload="window.pwned=1"></svg>"#),
        ]
        server.serve("news.xml", body: Self.feed(title: "Мир новостей", []))
        #expect(try await fetchrun.run([], environment: ["SMTP_PASSWORD": "mail-secret-3"]).status == 0)
        server.serve("news.xml", body: Self.feed(title: "Мир новостей", items))
        let result = try await fetchrun.run([], environment: ["SMTP_PASSWORD": "mail-secret-3"])
        #expect(result.status == 0 && result.stderr.contains("outputs: mail: 4 sent"), "\(result.stderr)")

        let received = smtp.messages
        #expect(received.count == 1 && received.allSatisfy(\.tls))
        let message = try #require(received.first?.message)
        let htmlFile = folder.appendingPathComponent("mail.html")
        let mail = try await parsed(message.data, in: folder, html: htmlFile)
        #expect(mail["content_type"] as? String == "multipart/alternative")
        #expect((mail["defects"] as? [String])?.isEmpty == true, "\(mail["defects"] ?? "")")
        let headers = try #require(mail["headers"] as? [String: String])
        #expect(headers["Subject"] == "fetchrun: 4 updates from Мир новостей", "\(headers)")
        #expect(headers["List-Id"] == "fetchrun mail <mail.fetchrun>")
        #expect(headers["Message-ID"]?.hasSuffix(".mail@example.org>") == true)
        let parts = try #require(mail["parts"] as? [[String: Any]])
        #expect(parts.map { $0["type"] as? String } == ["text/plain", "text/html"])
        #expect(parts.allSatisfy { $0["charset"] as? String == "utf-8" && ($0["defects"] as? [String])?.isEmpty == true })
        let text = parts[0]["text"] as? String ?? "", html = parts[1]["text"] as? String ?? ""
        #expect(text.contains("日本語の見出し\nhttps://news.example/ja\n(news)"), "\(text)")
        for inert in ["<script", "onclick", "onerror", "onmouseover", "onload", "javascript:", "display:none", "position:fixed", "tracker.gif", "<iframe", "<form", "<input", "<svg"] {
            #expect(!html.contains(inert), "\(inert)")
        }
        #expect(html.contains("Текст <b>жирный</b>") && html.contains("نص عربي") && html.contains("глубоко") && html.contains("マークアップ"))
        #expect(html.contains(#"<a href="https://news.example/more" style="#) && html.contains("Relative &amp; &lt;odd&gt; links"))
        // Dates in the config's time zone (Moscow is UTC+3) and the author as the feed names it.
        #expect(html.contains("2026-12-04 13:15") && html.contains("Редакция"), "\(html)")
        #expect(!(result.stdout + result.stderr).contains("mail-secret-3"))

        try await rendered(htmlFile, in: folder, prefix: "mail-hostile")
        #expect(!server.requests.contains { $0.path.contains("tracker.gif") })
    }

    /// Without STARTTLS (a local relay): a digest of two sources — a feed and a watched price —
    /// in one mail with its contents and a section each; the picture the README shows.
    @Test func aMailOfTwoSourcesWithoutTLSHasContentsSectionsAndTheDiff() async throws {
        let server = try FixtureServer()
        let smtp = try SMTPFixture()
        defer { smtp.stop() }
        let folder = try scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            timezone: UTC
            outputs:
              - { name: inbox, type: email, url: "\(smtp.url)", starttls: off, from: fetchrun@example.org, to: [me@example.org] }
              - { name: plain, type: email, url: "\(smtp.url)", starttls: off, from: fetchrun@example.org, to: [me@example.org], format: text, per_item: true }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))", outputs: [inbox, plain] }
              - { name: shop, type: page, url: "\(server.url("/files/shop.html"))", css: "p.price", outputs: [inbox] }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(title: "Tech Review", []))
        server.serve("shop.html", body: Self.shop("Цена 1 399 ₽"), contentType: "text/html; charset=utf-8")
        #expect(try await fetchrun.run([]).status == 0)
        let stories: [(id: String, title: String, summary: String)] = [
            ("chips", "New chips double battery life", "<p>The <b>new generation</b> of mobile chips uses <a href=\"/chips/details\">a smaller process</a>.</p>"),
            ("quake", "Землетрясение в Японии: 東京でも揺れ", "<p>Толчки ощущались в Токио. <i>Подробности уточняются.</i></p>"),
            ("rust", "مؤتمر البرمجيات في دبي", "<blockquote>البرمجيات الحرة للجميع</blockquote>"),
            ("swift", "Swift 6.3 released", "<ul><li>Faster builds</li><li>Better diagnostics</li></ul>"),
            ("space", "A probe reaches the outer planets", "Plain text summary,\nover two lines."),
        ]
        server.serve("news.xml", body: Self.feed(title: "Tech Review", stories))
        server.serve("shop.html", body: Self.shop("Цена 1 199 ₽"), contentType: "text/html; charset=utf-8")
        let result = try await fetchrun.run([])
        #expect(result.status == 0 && result.stderr.contains("outputs: inbox: 6 sent") && result.stderr.contains("outputs: plain: 5 sent"), "\(result.stderr)")

        let messages = smtp.messages
        #expect(messages.count == 6 && messages.allSatisfy { $0.login == nil })
        let plain = messages.filter { $0.header("List-Id") == "fetchrun plain <plain.fetchrun>" }
        #expect(plain.count == 5 && plain.allSatisfy { $0.header("Content-Type") == "text/plain; charset=utf-8" })
        #expect(Set(plain.compactMap { $0.header("Message-ID") }).count == 5)
        let digest = try #require(messages.first { $0.header("List-Id") == "fetchrun inbox <inbox.fetchrun>" })
        let htmlFile = folder.appendingPathComponent("digest.html")
        let mail = try await parsed(digest.data, in: folder, html: htmlFile)
        let headers = try #require(mail["headers"] as? [String: String])
        // The sources in the order their news was queued: whichever fetch ended first.
        #expect(["fetchrun: 6 updates from shop, Tech Review", "fetchrun: 6 updates from Tech Review, shop"].contains(headers["Subject"] ?? ""), "\(headers)")
        let html = try #require((mail["parts"] as? [[String: Any]])?.last?["text"] as? String)
        #expect(html.contains(##"<a href="#source-news""##) && html.contains(##"<a href="#source-shop""##), "\(html)")
        #expect(html.contains(#"<h2 id="source-shop""#) && html.contains(#"<h2 id="source-news""#) && html.contains("Tech Review"))
        #expect(html.contains(#"class="fr-removed""#) && html.contains("1 399 ₽") && html.contains(#"class="fr-added""#) && html.contains("1 199 ₽"))
        #expect(html.contains(#"href="https://news.example/chips/details""#) && html.contains("Plain text summary,<br>over two lines."))
        try await rendered(htmlFile, in: folder, prefix: "mail-digest", shown: true)
    }
}
