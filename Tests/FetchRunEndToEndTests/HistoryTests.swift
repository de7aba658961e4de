import Foundation
import Testing
import FixtureServer
import TestSupport

/// `fetchrun history` over what runs recorded in state.db: items, a watched selection's diff, a
/// failure; filters; text made safe for a terminal. (Both stores alike: OneEngineTests.)
@Suite struct HistoryTests {
    static func feed(_ items: [(id: String, title: String)]) -> [UInt8] {
        let body = items.map { "<item><guid>\($0.id)</guid><title>\($0.title)</title><link>https://news.example/\($0.id)</link></item>" }.joined()
        return Array("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Новости</title>\(body)</channel></rss>".utf8)
    }

    static func page(_ price: String) -> [UInt8] {
        Array("<html><head><meta charset=utf-8></head><body><p class=price>\(price)</p><p>Прочее</p></body></html>".utf8)
    }

    @Test func whatRunsReportedIsListedNewestFirstFilteredAndSafe() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
              - { name: quiet, type: rss, url: "\(server.url("/files/news.xml"))", history: off }
              - { name: shop, type: page, url: "\(server.url("/files/shop.html"))", css: "p.price" }
              - { name: dead, type: rss, url: "http://127.0.0.1:1/feed.xml", deadline: 5s }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed([("1", "Первая")]))
        server.serve("shop.html", body: Self.page("Цена 1 399 ₽"), contentType: "text/html; charset=utf-8")
        _ = try await fetchrun.run([])
        // A baseline is no change; the failure is.
        let first = try events(try await fetchrun.run(["history", "--format", "json"]).stdout)
        #expect(first.map { "\($0["source"] ?? "") \($0["kind"] ?? "")" } == ["dead failing"], "\(first)")

        server.serve("news.xml", body: Self.feed([("2", "東京 — вторая &lt;script&gt;"), ("1", "Первая")]))
        // A terminal's escape sequences in the page's text: shown, never obeyed.
        server.serve("shop.html", body: Self.page("Цена 1 299 ₽ \u{1B}]0;owned\u{07}"), contentType: "text/html; charset=utf-8")
        _ = try await fetchrun.run([])

        let json = try events(try await fetchrun.run(["history", "--format", "json"]).stdout)
        let kinds = json.map { "\($0["source"] ?? "") \($0["kind"] ?? "")" }
        #expect(Set(kinds.prefix(2)) == ["news item", "shop change"], "\(kinds)")
        #expect(kinds.last == "dead failing" && kinds.count == 3, "\(kinds)")
        let item = try #require(json.first { $0["kind"] as? String == "item" })
        #expect((item["title"] as? String)?.hasPrefix("東京 — вторая") == true && item["link"] as? String == "https://news.example/2")
        let change = try #require(json.first { $0["kind"] as? String == "change" })
        #expect((change["diff"] as? String)?.contains("-Цена 1 399 ₽\n+Цена 1 299 ₽") == true, "\(change)")
        #expect(json.allSatisfy { ($0["at"] as? String)?.hasSuffix("Z") == true && $0["event"] as? String == "change" })

        let text = try await fetchrun.run(["history"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("news  item  東京 — вторая"), "\(text.stdout)")
        #expect(text.stdout.contains("+Цена 1 299 ₽") && text.stdout.contains("-Цена 1 399 ₽"), "\(text.stdout)")
        #expect(text.stdout.contains("dead  failing"), "\(text.stdout)")
        #expect(!text.stdout.contains("\u{1B}") && !text.stdout.contains("\u{07}"), "raw control characters reached the terminal")
        #expect(!text.stdout.contains("quiet"))

        let failures = try events(try await fetchrun.run(["history", "--kind", "failures", "--format", "json"]).stdout)
        #expect(failures.map { $0["source"] as? String } == ["dead"])
        let shop = try events(try await fetchrun.run(["history", "shop", "--format", "json"]).stdout)
        #expect(shop.map { $0["kind"] as? String } == ["change"])
        #expect(try events(try await fetchrun.run(["history", "--limit", "1", "--format", "json"]).stdout).count == 1)
        #expect(try events(try await fetchrun.run(["history", "--since", "1h", "--format", "json"]).stdout).count == 3)

        let unknown = try await fetchrun.run(["history", "nope"])
        #expect(unknown.status == 0 && unknown.stdout.isEmpty && unknown.stderr.contains("not in") && unknown.stderr.contains("'nope'"), "\(unknown.stderr)")
        let bad = try await fetchrun.run(["history", "--since", "soon"])
        #expect(bad.status == 64, "\(bad.stderr)")
    }
}

/// `type: feed`: a feed file of its sources' last changes, written after each run.
@Suite struct FeedFileOutputTests {
    @Test func aFeedFileHoldsTheLastChangesOfItsSourcesAfterEachRun() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: public, type: feed, path: public/changes.atom }
              - { name: latest, type: feed, path: public/latest.json, entries: 1, title: "Последнее" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
              - { name: shop, type: page, url: "\(server.url("/files/shop.html"))", css: "p.price", outputs: [public] }
            """, to: "sources.yaml")
        server.serve("news.xml", body: HistoryTests.feed([("1", "Первая")]))
        server.serve("shop.html", body: HistoryTests.page("Цена 1 399 ₽"), contentType: "text/html; charset=utf-8")
        #expect(try await fetchrun.run([]).status == 0)
        // A baseline is no change: nothing to write yet.
        #expect(!FileManager.default.fileExists(atPath: fetchrun.path("public/changes.atom")))

        server.serve("news.xml", body: HistoryTests.feed([("2", "Вторая"), ("1", "Первая")]))
        server.serve("shop.html", body: HistoryTests.page("Цена 1 299 ₽"), contentType: "text/html; charset=utf-8")
        let second = try await fetchrun.run([])
        #expect(second.status == 0, "\(second.stderr)")
        let atom = try await fetchrun.run(["probe", "public/changes.atom", "--format", "json"])
        let titles = try events(atom.stdout).filter { $0["event"] as? String == "item" }.compactMap { $0["title"] as? String }
        #expect(Set(titles) == ["[news] Вторая", "[shop] Цена 1 299 ₽"], "\(atom.stdout) \(atom.stderr)")
        // Only news sends to `latest`, and it keeps one entry.
        let json = try JSONSerialization.jsonObject(with: Data(fetchrun.read("public/latest.json").utf8)) as? [String: Any]
        #expect(json?["title"] as? String == "Последнее")
        #expect((json?["items"] as? [[String: Any]])?.compactMap { $0["title"] as? String } == ["[news] Вторая"])
        #expect(try await fetchrun.run(["outputs"]).stdout.contains("nothing pending"))

        try fetchrun.write("outputs:\n  - { name: bad, type: feed, path: public/changes.html }\nsources:\n  - { name: t, type: traffic }\n", to: "bad.yaml")
        let invalid = try await fetchrun.run(["validate", "-c", "bad.yaml"])
        #expect(invalid.status == 65 && invalid.stderr.contains("'path' must end in .atom (Atom) or .json (JSON Feed)"), "\(invalid.stderr)")
    }
}
