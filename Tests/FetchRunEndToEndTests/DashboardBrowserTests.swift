import Foundation
import Testing
import FixtureServer
import TestSupport

/// The dashboard of a running watch, opened in Debian's headless Chromium through Playwright
/// (Tests/Fixtures/dashboard-browser.py, from the venv `make test` makes): what a person does
/// with it, a hostile feed, the console and every request the pages make.
@Suite struct DashboardBrowserTests {
    static let chromium = "/usr/bin/chromium"

    /// A feed whose one new item carries script in its title, link and summary, and an image
    /// from another origin (the fixture server's) in its summary.
    static func hostileFeed(_ fixture: String, withItem: Bool) -> [UInt8] {
        let item = """
            <item><guid>h2</guid>
            <title>&lt;img src=x onerror="window.pwned=1"&gt;&lt;script&gt;window.pwned2=1&lt;/script&gt; Ωmega</title>
            <link>javascript:window.pwned3=1</link>
            <description><![CDATA[<img src="\(fixture)/tracker.gif" onerror="window.pwned=1"><script>window.pwned2=1</script><a href="javascript:window.pwned3=1">x</a>]]></description>
            </item>
            """
        return Array("""
            <?xml version="1.0"?><rss version="2.0"><channel><title>&lt;b&gt;Hostile&lt;/b&gt;</title>
            \(withItem ? item : "")<item><guid>h1</guid><title>Calm</title><link>https://calm.example/1</link></item>
            </channel></rss>
            """.utf8)
    }

    @Test func theDashboardWorksInARealBrowserAndHostileValuesStayInert() async throws {
        let python = FeedEndpointTests.packageRoot.appendingPathComponent(".build/test-venv/bin/python3").path
        guard FileManager.default.isExecutableFile(atPath: python), FileManager.default.isExecutableFile(atPath: Self.chromium) else {
            throw FixtureError("no \(python) or \(Self.chromium): `make test` installs Debian's chromium and Playwright (PyPI, in .build/test-venv)")
        }
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        try fetchrun.write("""
            state_dir: state
            listen: { address: "127.0.0.1:\(port)" }
            defaults: { interval: 1h }
            sources:
              - { name: hostile, type: rss, url: "\(server.url("/files/hostile.xml"))" }
              - { name: shop, type: page, url: "\(server.url("/files/shop.html"))", css: "p.price" }
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))", tags: [press] }
              - { name: broken, type: rss, url: "\(server.url("/status/500"))", interval: 2h }
            outputs:
              - { name: hook, type: webhook, url: "\(server.url("/picky-receiver/pwned"))" }
            """, to: "sources.yaml")
        let fixture = server.url("").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        server.serve("hostile.xml", body: Self.hostileFeed(fixture, withItem: false))
        server.serve("news.xml", body: HistoryTests.feed([("1", "Первая")]))
        server.serve("shop.html", body: HistoryTests.page("Цена 1 399 ₽"), contentType: "text/html; charset=utf-8")
        _ = try await fetchrun.run([])
        server.serve("hostile.xml", body: Self.hostileFeed(fixture, withItem: true))
        // The change's diff carries markup as text: the page escapes it, the selection reads it back.
        server.serve("shop.html", body: HistoryTests.page("Цена 1 299 ₽ &lt;img src=x onerror=&quot;window.pwned=1&quot;&gt;&lt;script&gt;window.pwned2=1&lt;/script&gt;"), contentType: "text/html; charset=utf-8")
        _ = try await fetchrun.run([])

        let watch = try fetchrun.start(["watch", "--for", "180s"])
        defer { kill(watch.pid, SIGKILL) }
        // The endpoint lists the four sources. The two runs fetched them, so the watch waits an
        // hour for each: nothing is in flight when "check now" is pressed.
        try await waitUntil("the endpoint", timeout: .seconds(60)) {
            guard let status = MonitoringTests.get(port: port, "/status"), status.status == 200 else { return false }
            return status.body.split(separator: "\n").count == 4
        }
        // What "check now" will find.
        server.serve("shop.html", body: HistoryTests.page("Цена 999 ₽ — скидка"), contentType: "text/html; charset=utf-8")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dashboard-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("out").path, errors = folder.appendingPathComponent("err").path
        let child = try ChildProcess(
            executable: python,
            arguments: [FeedEndpointTests.packageRoot.appendingPathComponent("Tests/Fixtures/dashboard-browser.py").path, "http://127.0.0.1:\(port)", Self.chromium, "Цена 999 ₽ — скидка"],
            environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": folder.path], directory: folder.path, stdout: output, stderr: errors
        )
        await child.waitForExit(timeout: .seconds(120))
        let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(child.terminationStatus == 0, "\(stderr)")
        let checks = try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any] ?? [:]
        #expect(checks.count >= 25, "\(printed)\(stderr)")
        for (name, result) in checks.sorted(by: { $0.key < $1.key }) {
            #expect(result as? Bool == true, "\(name): \(result)")
        }
        // The tracker image on the fixture server was never asked for.
        #expect(!server.requests.contains { $0.path.contains("tracker.gif") })
    }
}
