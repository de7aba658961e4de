import FixtureServer
import Foundation
import Testing

/// What users of pages and JSON APIs meet in their first week, through the built binary:
/// ids past 2^53, presets and anchors of `ignore:`, readable list titles, long lists, long
/// lines, deep markup, deep XPath, a runaway pattern, and a page without a charset in `probe`.
@Suite struct SelectionLimitsEndToEndTests {
    func items(_ output: String, source: String) throws -> [[String: Any]] {
        try events(output).filter { $0["event"] as? String == "item" && $0["source"] as? String == source }
    }

    @Test func snowflakeIdsStayApartAndANewEntryPutFirstIsReported() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: posts, type: json, url: "\(server.url("/files/posts.json"))", items: { each: "$.posts[*]", id: id, title: title } }
            """, to: "sources.yaml")
        func posts(_ ids: [String]) -> [UInt8] {
            Array(#"{"posts": [\#(ids.map { #"{"id": \#($0), "title": "post \#($0)"}"# }.joined(separator: ","))]}"#.utf8)
        }
        server.serve("posts.json", body: posts(["1311111111111111112", "1311111111111111111"]), contentType: "application/json")
        let first = try await fetchrun.run(["--format", "json", "--list-all"])
        #expect(first.status == 0, "\(first.stderr)")
        server.serve("posts.json", body: posts(["1311111111111111113", "1311111111111111112", "1311111111111111111"]), contentType: "application/json")
        let second = try await fetchrun.run(["--format", "json"])
        let new = try items(second.stdout, source: "posts")
        #expect(new.map { $0["id"] as? String } == ["1311111111111111113"], "\(new)")
        #expect(new.first?["title"] as? String == "post 1311111111111111113")
        let shown = try await fetchrun.run(["show", "posts"])
        #expect(!shown.stdout.contains("e+18") && !shown.stdout.contains("#2"), "\(shown.stdout)")
    }

    @Test func presetsLeaveAddressesAloneAndPatternsSeeLines() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: page
                type: page
                url: "\(server.url("/files/page.html"))"
                css: main
                ignore: [dates, times, "^Updated.*$"]
            """, to: "sources.yaml")
        func page(link: String, updated: String, when: String) -> [UInt8] {
            Array("<main><p>Mirror: \(link)</p><p>Updated \(updated)</p><p>Built 2026-03-05 \(when)</p></main>".utf8)
        }
        server.serve("page.html", body: page(link: "http://127.0.0.1:18777/n/1", updated: "by Ana", when: "10:32"), contentType: "text/html")
        #expect(try await fetchrun.run([]).status == 0)
        // Only the time and the "Updated" line change: nothing to report.
        server.serve("page.html", body: page(link: "http://127.0.0.1:18777/n/1", updated: "by Bo at 11:00", when: "11:45"), contentType: "text/html")
        let quiet = try await fetchrun.run(["--format", "json"])
        #expect(quiet.stdout.contains(#""outcome":"noData""#), "\(quiet.stdout)")
        // The address changes: the diff shows it whole.
        server.serve("page.html", body: page(link: "http://127.0.0.1:18778/n/1", updated: "by Bo", when: "12:00"), contentType: "text/html")
        let changed = try await fetchrun.run(["--format", "json"])
        let diff = try #require(try events(changed.stdout).first { $0["event"] as? String == "changed" }?["diff"] as? String)
        #expect(diff.contains("-Mirror: http://127.0.0.1:18777/n/1") && diff.contains("+Mirror: http://127.0.0.1:18778/n/1"), "\(diff)")
        #expect(!diff.contains("Updated"), "\(diff)")
    }

    @Test func listTitlesAreReadableAndALongListKeepsItsFirstTenThousand() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: releases, type: page, url: "\(server.url("/files/releases.html"))", items: { each: li } }
              - { name: api, type: json, url: "\(server.url("/files/long.json"))", items: { each: "$[*]", id: id } }
            """, to: "sources.yaml")
        server.serve("releases.html", body: Array(#"<ul><li><a href="v1.0.html">Version 1.0</a></li><li><a href="v1.1.html">Версия 1.1</a></li></ul>"#.utf8), contentType: "text/html")
        let entries = (0..<10_500).map { #"{"id": "e\#($0)"}"# }.joined(separator: ",")
        server.serve("long.json", body: Array("[\(entries)]".utf8), contentType: "application/json")
        let run = try await fetchrun.run(["--format", "json", "--list-all"])
        #expect(run.status == 0, "\(run.stderr)")
        let releases = try items(run.stdout, source: "releases")
        #expect(releases.map { $0["title"] as? String } == ["Version 1.0", "Версия 1.1"], "\(releases)")
        #expect(releases.first?["link"] as? String == server.url("/files/v1.0.html"))
        let api = try #require(try events(run.stdout).first { $0["event"] as? String == "source" && $0["source"] as? String == "api" })
        #expect(api["outcome"] as? String == "newData" && api["total"] as? Int == 10_000, "\(api)")
        #expect((api["notes"] as? [String])?.contains("500 entries past the first 10000 dropped") == true, "\(api)")
    }

    @Test func aFirstLineOverAMebibyteAndTagSoupStillShowTheirChanges() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: long, type: page, url: "\(server.url("/files/long.html"))", css: pre, max_bytes: 4194304 }
              - { name: soup, type: page, url: "\(server.url("/files/soup.html"))", css: body }
            """, to: "sources.yaml")
        let paragraph = String(repeating: "ログ行の内容 ", count: 90_000)  // 1.7 MB on one line
        func long(_ head: String) -> [UInt8] { Array("<pre>\(head) \(paragraph)</pre>".utf8) }
        func soup(_ price: String) -> [UInt8] { Array(("<body>" + String(repeating: "<font>", count: 300) + "deep" + "<p>price \(price)</p></body>").utf8) }
        server.serve("long.html", body: long("v1"), contentType: "text/html")
        server.serve("soup.html", body: soup("10"), contentType: "text/html")
        let baseline = try await fetchrun.run([])
        #expect(baseline.status == 0, "\(baseline.stdout)\(baseline.stderr)")
        server.serve("long.html", body: long("v2"), contentType: "text/html")
        server.serve("soup.html", body: soup("12"), contentType: "text/html")
        let run = try await fetchrun.run(["--format", "json"])
        let sources = try events(run.stdout).filter { $0["event"] as? String == "source" }
        for name in ["long", "soup"] {
            #expect(sources.first { $0["source"] as? String == name }?["outcome"] as? String == "newData", "\(name): \(run.stdout)")
        }
        let notes = sources.compactMap { $0["notes"] as? [String] }.flatMap { $0 }
        #expect(notes.contains { $0.contains("cut inside line 1") }, "\(notes)")
        #expect(notes.contains { $0.contains("flattened") }, "\(notes)")
    }

    @Test func aDeepXPathIsRefusedWithItsPlaceNotACrash() async throws {
        let fetchrun = try FetchRunBinary()
        let deep = String(repeating: "(", count: 50_000) + "1" + String(repeating: ")", count: 50_000)
        try fetchrun.write("sources:\n  - { name: p, type: page, url: \"http://127.0.0.1:9/\", xpath: \"\(deep)\" }\n", to: "sources.yaml")
        for command in [["validate"], ["run"], ["watch", "--for", "1s"]] {
            let result = try await fetchrun.run(command)
            #expect(result.status == 65, "\(command): \(result.status)")
            #expect(result.stderr.contains("sources.yaml:2:") && result.stderr.contains("nested more than 64 deep"), "\(command): \(result.stderr.prefix(300))")
        }
    }

    @Test func aRunawayPatternCostsNoMoreThanItsDeadline() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: runaway, type: page, url: "\(server.url("/files/a.html"))", ignore: ["(a+)+$"], deadline: 300ms, interval: 1s }
            """, to: "sources.yaml")
        server.serve("a.html", body: Array(("<p>" + String(repeating: "a", count: 64) + "!</p>").utf8), contentType: "text/html")
        // Long enough to outlast the measurement however late a busy test pool wakes this test
        // from its sleeps (an 8 s watch had exited before the second reading); stopped after it.
        let watch = try fetchrun.start(["watch", "--for", "60s", "-v"])
        func cpuSeconds() -> Double? {
            guard let stat = try? String(contentsOfFile: "/proc/\(watch.pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
            return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
        // Real time: CPU seconds of a running process, measured over wall-clock seconds.
        try await Task.sleep(for: .seconds(2))
        let early = try #require(cpuSeconds())
        try await Task.sleep(for: .seconds(4))
        let late = try #require(cpuSeconds())
        // Unbounded, every fetch left a thread spinning: at least a whole core for these four
        // seconds, and more with each fetch. Bounded, each fetch costs at most its 300 ms.
        #expect(late - early < 2.5, "\(late - early) s of CPU in 4 s")
        kill(watch.pid, SIGTERM)
        await watch.waitForExit(timeout: .seconds(30))
        let stderr = try String(contentsOf: watch.stderr, encoding: .utf8)
        #expect(stderr.contains("runaway: deadlineExceeded") || stderr.contains("deadline exceeded"), "\(stderr.prefix(500))")
    }

    @Test func aPageWithoutACharsetReadsAsUTF8InProbe() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        server.serve("shop.html", body: Array("<html><head><title>Магазин</title></head><body><p class=price>€ 1.299,00</p></body></html>".utf8), contentType: "text/html")
        let probe = try await fetchrun.run(["probe", server.url("/files/shop.html")])
        #expect(probe.stdout.contains("Магазин") && !probe.stdout.contains("Ã") && !probe.stdout.contains("â"), "\(probe.stdout)")
    }
}
