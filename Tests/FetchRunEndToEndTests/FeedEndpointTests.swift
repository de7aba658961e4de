import Foundation
import Testing
import FixtureServer
import TestSupport

/// `/feeds/*` on a watch's `--listen` endpoint, read as feed readers read them: the Atom feeds
/// by Python's feedparser (from PyPI, in the venv `make test` makes), the JSON Feeds by
/// Python's json against JSON Feed 1.1's rules (feedparser 6 reads no JSON Feed), and both by
/// fetchrun's own reader (`probe`).
@Suite struct FeedEndpointTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs Tests/Fixtures/feed-reader.py over `requests` (url, headers); its results in order.
    static func read(_ requests: [[String: Any]], sourceLocation: SourceLocation = #_sourceLocation) async throws -> [[String: Any]] {
        let python = packageRoot.appendingPathComponent(".build/test-venv/bin/python3").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw FixtureError("no \(python): `make test` (make test-venv) installs feedparser there from PyPI")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("feed-reader-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("out").path
        let requestsJSON = String(decoding: try JSONSerialization.data(withJSONObject: requests), as: UTF8.self)
        let child = try ChildProcess(
            executable: python, arguments: [packageRoot.appendingPathComponent("Tests/Fixtures/feed-reader.py").path, requestsJSON],
            environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], directory: folder.path, stdout: output, stderr: folder.appendingPathComponent("err").path
        )
        await child.waitForExit(timeout: .seconds(60), sourceLocation: sourceLocation)
        guard child.terminationStatus == 0 else {
            throw FixtureError("feed-reader.py failed: \((try? String(contentsOfFile: folder.appendingPathComponent("err").path, encoding: .utf8)) ?? "")")
        }
        return try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output))) as? [[String: Any]] ?? []
    }

    @Test func feedsOfChangesAreReadByFeedReadersWithTheirTokenAndAnswer304WhenUnchanged() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        try fetchrun.write("""
            state_dir: state
            listen: { address: "127.0.0.1:\(port)", token: "${METRICS_TOKEN}", feed_token: "${FEED_TOKEN}" }
            defaults: { interval: 1h }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))", tags: [press] }
              - { name: shop, type: page, url: "\(server.url("/files/shop.html"))", css: "p.price", tags: [shops] }
            """, to: "sources.yaml")
        let environment = ["METRICS_TOKEN": "metrics-secret", "FEED_TOKEN": "feed-secret"]
        server.serve("news.xml", body: HistoryTests.feed([("1", "Первая")]))
        server.serve("shop.html", body: HistoryTests.page("Цена 1 399 ₽"), contentType: "text/html; charset=utf-8")
        _ = try await fetchrun.run([], environment: environment)
        server.serve("news.xml", body: HistoryTests.feed([("2", "東京 &lt;script&gt;alert(1)&lt;/script&gt;"), ("1", "Первая")]))
        server.serve("shop.html", body: HistoryTests.page("Цена 1 299 ₽"), contentType: "text/html; charset=utf-8")
        _ = try await fetchrun.run([], environment: environment)

        let watch = try fetchrun.start(["watch", "--for", "120s"], environment: environment)
        defer { kill(watch.pid, SIGKILL) }
        try await waitUntil("the endpoint") { MonitoringTests.get(port: port, "/healthz", token: "metrics-secret")?.status == 200 }
        let base = "http://127.0.0.1:\(port)"
        let results = try await Self.read([
            ["url": "\(base)/feeds/all.atom"],
            ["url": "\(base)/feeds/all.atom?token=wrong"],
            ["url": "\(base)/feeds/all.atom?token=feed-secret"],
            ["url": "\(base)/feeds/all.json?token=feed-secret"],
            ["url": "\(base)/feeds/sources/news.atom", "headers": ["Authorization": "Bearer metrics-secret"]],
            ["url": "\(base)/feeds/tags/shops.json?token=feed-secret"],
            ["url": "\(base)/feeds/sources/nope.atom?token=feed-secret"],
            ["url": "\(base)/metrics?token=feed-secret"],
        ])
        #expect(results.map { $0["status"] as? Int } == [401, 401, 200, 200, 200, 200, 404, 401], "\(results.map { $0["status"] ?? "?" })")
        guard results.count == 8 else { return }

        for (index, version) in [(2, "atom10"), (3, "json11")] {
            let feed = results[index]
            #expect(feed["bozo"] as? Bool == false, "\(feed["bozo_reason"] ?? "")")
            #expect(feed["version"] as? String == version)
            let entries = feed["entries"] as? [[String: Any]] ?? []
            #expect(entries.count == 2, "\(entries)")
            #expect(Set(entries.compactMap { $0["id"] as? String }).count == entries.count)
            #expect(entries.allSatisfy { ($0["updated"] as? String).flatMap { $0.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"#, options: .regularExpression) } != nil }, "\(entries)")
            let change = entries.first { ($0["title"] as? String)?.hasPrefix("[shop]") == true }
            #expect((change?["content"] as? String)?.contains("+Цена 1 299 ₽") == true && (change?["content"] as? String)?.contains("<ins") == true, "\(change ?? [:])")
            let item = entries.first { ($0["title"] as? String)?.hasPrefix("[news]") == true }
            #expect(item?["link"] as? String == "https://news.example/2", "\(item ?? [:])")
        }
        #expect(((results[4]["entries"] as? [[String: Any]]) ?? []).compactMap { $0["title"] as? String }.allSatisfy { $0.hasPrefix("[news]") })
        #expect(((results[5]["entries"] as? [[String: Any]]) ?? []).compactMap { $0["title"] as? String } == ["[shop] Цена 1 299 ₽"])
        let atom = results[2]["headers"] as? [String: String] ?? [:]
        #expect(atom["content-type"] == "application/atom+xml; charset=utf-8")

        // A reader that has it already is told so.
        let etag = try #require(atom["etag"]), modified = try #require(atom["last-modified"])
        let again = try await Self.read([
            ["url": "\(base)/feeds/all.atom?token=feed-secret", "headers": ["If-None-Match": etag]],
            ["url": "\(base)/feeds/all.atom?token=feed-secret", "headers": ["If-Modified-Since": modified]],
            ["url": "\(base)/feeds/all.atom?token=feed-secret", "headers": ["If-None-Match": "\"other\""]],
        ])
        #expect(again.map { $0["status"] as? Int } == [304, 304, 200])

        // fetchrun's own reader.
        let probe = try await fetchrun.run(["probe", "\(base)/feeds/all.json?token=feed-secret", "--format", "json"])
        #expect(probe.status == 0, "\(probe.stderr)")
        let items = try events(probe.stdout).filter { $0["event"] as? String == "item" }
        #expect(items.count == 2 && items.contains { ($0["title"] as? String)?.hasPrefix("[news] 東京 <script>") == true }, "\(probe.stdout)")
        // The tokens are never printed.
        let logged = (try? String(contentsOf: watch.stderr, encoding: .utf8)) ?? ""
        #expect(!logged.contains("feed-secret") && !logged.contains("metrics-secret"))
    }
}
