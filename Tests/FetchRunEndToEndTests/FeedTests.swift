import Foundation
import Testing
import FixtureServer

/// Parses NDJSON output into objects.
func events(_ output: String) throws -> [[String: Any]] {
    try output.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
}

@Suite struct FeedTests {
    /// Every fault the fixture server can play, and what fetchrun must make of it.
    static let faults: [(name: String, path: String, outcome: String, kind: String?, says: String)] = [
        ("hang", "/hang", "failed", "deadlineExceeded", "deadline exceeded after 5s"),
        ("drip", "/drip?interval=300ms", "failed", "deadlineExceeded", "deadline exceeded"),
        ("reset", "/reset", "failed", "network", "Connection reset"),
        ("huge", "/huge", "failed", "network", "larger than the 10 MiB limit"),
        ("huge-announced", "/huge?length=1", "failed", "network", "larger than the 10 MiB limit"),
        ("gzip-bomb", "/gzip-bomb", "failed", "network", "larger than the 10 MiB limit"),
        ("redirect-loop", "/redirect-loop", "failed", "network", "more than 5 redirects"),
        ("redirect-to-file", "/redirect-to-file", "failed", "network", "not http or https"),
        ("not-found", "/status/404", "failed", "httpStatus", "HTTP 404"),
        ("server-error", "/status/500", "failed", "httpStatus", "HTTP 500"),
        ("rate-limited", "/status/429?retry-after=120", "failed", "httpStatus", "retry after 2m"),
        ("billion-laughs", "/billion-laughs", "failed", "parse", "refused: entities nest deeper than 8"),
        ("not-a-feed", "/not-a-feed", "failed", "parse", "not a feed"),
        ("malformed", "/malformed", "newData", nil, "recovered from broken XML"),
        ("wrong-charset", "/wrong-charset", "newData", nil, "read as Windows-1252"),
        ("xxe", "/xxe", "failed", "parse", "declares an external entity 'secret'"),
        ("redirected", "/redirect/3", "newData", nil, ""),
        ("gzip", "/gzip/4.xml", "newData", nil, ""),
        ("brotli", "/brotli/5.xml", "newData", nil, ""),
        ("atom", "/atom/6.xml", "newData", nil, ""),
    ]

    @Test func everyFaultFailsOnlyItsOwnSourceWithAClearReason() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        var config = "state_dir: state\ndefaults:\n  deadline: 5s\nsources:\n"
        for fault in Self.faults {
            // The 429 backs off its whole host for two minutes: another name for the same server
            // keeps the other faults out of that.
            let url = fault.name == "rate-limited" ? server.url(fault.path).replacingOccurrences(of: "127.0.0.1", with: "localhost") : server.url(fault.path)
            config += "  - name: \(fault.name)\n    type: rss\n    url: \"\(url)\"\n"
        }
        try fetchrun.write(config, to: "sources.yaml")
        // Every source starts with a snapshot; the failing ones must keep theirs byte for byte.
        for fault in Self.faults {
            try fetchrun.write(#"{"version":1,"source":"\#(fault.name)","type":"rss","updated_at":"2026-01-01T00:00:00Z","items":[{"id":"old","title":"Old item"}]}"#, to: "state/snapshots/\(fault.name).json")
        }

        let result = try await fetchrun.run(["--format", "json"], timeout: .seconds(30))
        #expect(result.status == 2, "\(result.stderr)")
        // Bounded by the 5s deadline, not by the hang or the drip.
        #expect(result.duration < .seconds(10), "took \(result.duration)")
        let sources = try events(result.stdout).filter { $0["event"] as? String == "source" }
        #expect(sources.count == Self.faults.count)
        for fault in Self.faults {
            let source = try #require(sources.first { $0["source"] as? String == fault.name }, "\(fault.name)")
            #expect(source["outcome"] as? String == fault.outcome, "\(fault.name): \(source)")
            let failure = source["failure"] as? [String: Any]
            #expect(failure?["kind"] as? String == fault.kind, "\(fault.name): \(source)")
            let said = (failure?["message"] as? String ?? "") + ((source["notes"] as? [String])?.joined() ?? "")
            if !fault.says.isEmpty { #expect(said.contains(fault.says), "\(fault.name) said: \(said)") }
            let snapshot = try fetchrun.read("state/snapshots/\(fault.name).json")
            if fault.outcome == "failed" {
                #expect(snapshot.contains(#""title":"Old item""#), "\(fault.name)'s snapshot changed")
            } else {
                #expect(!snapshot.contains(#""title":"Old item"}]}"#), "\(fault.name)'s snapshot not rewritten")
            }
        }
        let rateLimited = try #require(sources.first { $0["source"] as? String == "rate-limited" }?["failure"] as? [String: Any])
        #expect(rateLimited["retry_after_ms"] as? Int == 120_000)
        // No file content, no entity expansion, ever reaches an item.
        for name in ["xxe", "billion-laughs", "malformed"] {
            let snapshot = try fetchrun.read("state/snapshots/\(name).json")
            #expect(!snapshot.contains("root:"))
            #expect(!snapshot.contains("lollol"))
        }
        #expect(try fetchrun.read("state/snapshots/wrong-charset.json").contains("Menü"))
    }

    @Test func secondRunSendsValidatorsAndGetsNoDataFromA304() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("sources:\n  - name: cond\n    type: rss\n    url: \(server.url("/conditional/12.xml"))\n", to: "sources.yaml")
        let first = try await fetchrun.run([])
        #expect(first.status == 0)
        #expect(first.stdout.contains("cond  newData"))
        #expect(server.requests(to: "/conditional/12.xml").first?.headers["if-none-match"] == nil)

        let second = try await fetchrun.run([])
        #expect(second.status == 0)
        #expect(second.stdout.contains("cond  noData"))
        let sent = try #require(server.requests(to: "/conditional/12.xml").last)
        #expect(sent.headers["if-none-match"] == "\"feed-12.xml-v1\"")
        #expect(sent.headers["if-modified-since"] == "Wed, 21 Oct 2026 07:28:00 GMT")
    }

    @Test func hundredHangingSourcesEndAtTheirDeadline() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // A connection each: a source's deadline covers its own request, not its wait for one of
        // the host's connections, so at the default 6 per host this run would last 17 rounds.
        var config = "http:\n  per_host: 100\nsources:\n"
        for index in 0..<100 { config += "  - name: hang-\(index)\n    type: rss\n    deadline: 1s\n    url: \(server.url("/hang?n=\(index)"))\n" }
        try fetchrun.write(config, to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 3)
        let sources = try events(result.stdout).filter { $0["event"] as? String == "source" }
        #expect(sources.count == 100)
        #expect(sources.allSatisfy { ($0["failure"] as? [String: Any])?["kind"] as? String == "deadlineExceeded" }, "\(sources.filter { ($0["failure"] as? [String: Any])?["kind"] as? String != "deadlineExceeded" })")
        // The benchmark measures this precisely; here it only must not wait out the hangs.
        #expect(result.duration < .seconds(5), "took \(result.duration)")
    }

    @Test func aHostThatNeverAnswersCostsOneDeadlineNotOnePerSource() async throws {
        let dead = try FixtureServer()
        let healthy = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // The default six connections per host: without the breaker, 17 rounds of 1 s.
        var config = "sources:\n  - { name: healthy, type: rss, url: \"\(healthy.url("/feed/1.xml?latency=1500ms"))\" }\n"
        for index in 0..<100 { config += "  - { name: hang-\(index), type: rss, deadline: 1s, url: \"\(dead.url("/hang?n=\(index)"))\" }\n" }
        try fetchrun.write(config, to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 2, "\(result.stderr)")
        let found = try events(result.stdout).filter { $0["event"] as? String == "source" }
        let kinds = found.compactMap { ($0["failure"] as? [String: Any])?["kind"] as? String }
        // The first round (six connections) waits its deadline; nothing new starts once one
        // of them got nothing, and when three have, the sources still queued are skipped at once.
        let waited = kinds.filter { $0 == "deadlineExceeded" }.count
        #expect(kinds.count == 100 && waited == 6 && kinds.filter { $0 == "unreachable" }.count == 94, "\(kinds)")
        #expect(dead.requests.filter { $0.path == "/hang" }.count == waited)
        let skipped = found.compactMap { ($0["failure"] as? [String: Any])?["message"] as? String }.filter { $0.contains("is not answering") }
        #expect(skipped.count == 100 - waited && skipped.allSatisfy { $0.contains("127.0.0.1:\(dead.port) is not answering (") && $0.contains(" requests in a row refused or unanswered); not sent, ") }, "\(skipped.first ?? "")")
        #expect(skipped.contains { $0.contains("\(100 - waited - 1) other requests to it") }, "\(skipped)")
        // Another host is another breaker: its slow answer arrives.
        #expect(found.first { $0["source"] as? String == "healthy" }?["outcome"] as? String == "newData")
        #expect(result.duration < .seconds(10), "took \(result.duration)")
    }

    @Test func bundledFeedIsReadThroughARelativeFileURL() async throws {
        let fetchrun = try FetchRunBinary()
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        try fetchrun.write(try String(contentsOf: repository.appendingPathComponent("feeds/reuters-technology.xml"), encoding: .utf8), to: "config/feeds/reuters-technology.xml")
        try fetchrun.write("sources:\n  - name: reuters-technology\n    type: rss\n    url: file:feeds/reuters-technology.xml\n", to: "config/sources.yaml")
        let result = try await fetchrun.run(["--config", "config/sources.yaml", "--list-all"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("reuters-technology  newData    10 new"))
        #expect(result.stdout.contains("Chip designer unveils low-power AI accelerator for laptops"))
        #expect(try await fetchrun.run(["--config", "config/sources.yaml"]).stdout.contains("reuters-technology  noData"))
    }

    @Test func aJSONFeedIsReadByTheRSSAdapterAndProbed() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let feed = #"""
        {"version":"https://jsonfeed.org/version/1.1","title":"JSON News","home_page_url":"https://news.example/",
         "items":[{"id":"j1","url":"/a","title":"Jay one \u001b[31mred","date_published":"2026-11-20T10:00:00Z","tags":["swift","feeds"],
                   "attachments":[{"url":"/ep.mp3","mime_type":"audio/mpeg","size_in_bytes":100}]},
                  {"id":"j2","title":"Jay two","date_published":"not a date"}]}
        """#
        server.serve("news.json", body: Array(feed.utf8), contentType: "application/feed+json")
        try fetchrun.write("sources:\n  - name: jf\n    type: rss\n    url: \(server.url("/files/news.json"))\n", to: "sources.yaml")
        let result = try await fetchrun.run([])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("jf  newData     2 new"), "\(result.stdout)")
        #expect(!result.stdout.contains("\u{1b}"))
        #expect(server.requests(to: "/files/news.json").first?.headers["accept"]?.contains("application/feed+json") == true)
        let shown = try await fetchrun.run(["show", "jf", "--format", "json"])
        #expect(shown.stdout.contains(#""link":"\#(server.url("/a"))""#), "\(shown.stdout)")
        #expect(shown.stdout.contains(#""url":"\#(server.url("/ep.mp3"))""#), "\(shown.stdout)")
        #expect(shown.stdout.contains(#""source_title":"JSON News""#), "\(shown.stdout)")
        #expect(shown.stdout.contains(#""tags":["swift","feeds"]"#), "\(shown.stdout)")
        let shownText = try await fetchrun.run(["show", "jf"])
        #expect(shownText.stdout.contains("jf  JSON News  rss"), "\(shownText.stdout)")
        #expect(shownText.stdout.contains("# swift, feeds"), "\(shownText.stdout)")

        let probe = try await fetchrun.run(["probe", server.url("/files/news.json")])
        #expect(probe.status == 0, "\(probe.stderr)")
        #expect(probe.stdoutLines[1].contains("JSON Feed 1.1, 2 items: JSON News"), "\(probe.stdout)")
        #expect(probe.stdout.contains("unreadable date 'not a date'") || probe.stderr.contains("unreadable date 'not a date'"), "\(probe.stdout)\(probe.stderr)")
    }

    @Test func probePrintsStatusFormatAndItems() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let text = try await fetchrun.run(["probe", server.url("/atom/8.xml")])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdoutLines[1].hasPrefix("HTTP 200, "))
        #expect(text.stdoutLines[1].contains("Atom 1.0, 28 items: Fixture Technology News 8"))

        let json = try await fetchrun.run(["probe", "--format", "json", server.url("/feed/8.xml")])
        let lines = try events(json.stdout)
        #expect(lines.first?["event"] as? String == "probe")
        #expect(lines.first?["status"] as? Int == 200)
        #expect(lines.first?["format"] as? String == "RSS 2.0")
        let items = lines.dropFirst()
        #expect(items.count == 28)
        let item = try #require(items.first)
        for field in ["id", "title", "link", "published", "summary", "author"] { #expect(item[field] != nil, "\(field)") }
        #expect((item["published"] as? String)?.hasSuffix("Z") == true)
        #expect(items.allSatisfy { $0["event"] as? String == "item" })

        let failing = try await fetchrun.run(["probe", "--deadline", "500ms", server.url("/hang")])
        #expect(failing.status == 2)
        #expect(failing.stderr.contains("deadline exceeded after 500ms"))
        let local = try await fetchrun.run(["probe", "missing.xml"])
        #expect(local.status == 2)
        #expect(local.stderr.contains("missing.xml"))
    }
}

/// `-v` and `-vv` say what happened on the wire, and never a secret.
@Suite struct WireLoggingTests {
    @Test func verboseShowsEachRequestAndVeryVerboseItsHeadersMasked() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let url = server.url("/conditional/4.xml").replacingOccurrences(of: "http://", with: "http://reader:${FEED_PASSWORD}@")
        try fetchrun.write("""
            sources:
              - name: wire
                type: rss
                url: "\(url)"
                headers: { Authorization: "Bearer ${TOKEN}", X-Api-Key: "${TOKEN}", X-Plain: visible }
            """, to: "sources.yaml")
        let secrets = ["FEED_PASSWORD": "hunter2-s3cret", "TOKEN": "t0k3n-value"]
        let quiet = try await fetchrun.run([], environment: secrets)
        #expect(!quiet.stderr.contains("GET "))

        let verbose = try await fetchrun.run(["-v"], environment: secrets)
        #expect(verbose.status == 0, "\(verbose.stderr)")
        // Method, the URL as written (credentials removed), status, bytes, time.
        let line = try #require(verbose.stderr.split(separator: "\n").first { $0.contains("GET ") })
        #expect(line.contains("GET http://127.0.0.1:") && line.contains("/conditional/4.xml → 304, 0 bytes in"), "\(line)")
        #expect(!verbose.stderr.contains("> "))

        let debug = try await fetchrun.run(["-vv"], environment: secrets)
        #expect(debug.stderr.contains("> Authorization: ***"), "\(debug.stderr)")
        #expect(debug.stderr.contains("> X-Api-Key: ***"))
        #expect(debug.stderr.contains("> X-Plain: visible"))
        #expect(debug.stderr.contains("> If-None-Match: \"feed-4.xml-v1\""))
        #expect(debug.stderr.contains("< etag: \"feed-4.xml-v1\""), "\(debug.stderr)")
        for output in [quiet.stderr, verbose.stderr, debug.stderr, debug.stdout] {
            #expect(!output.contains("hunter2-s3cret") && !output.contains("t0k3n-value"))
        }
    }
}

@Suite struct UpdatedItemsTests {
    func feed(_ title: String) -> [UInt8] {
        Array("""
        <rss version="2.0"><channel><title>U</title>
          <item><guid>story-1</guid><title>\(title)</title><link>https://u.example/1</link></item>
          <item><guid>story-2</guid><title>Steady</title><link>https://u.example/2</link></item>
        </channel></rss>
        """.utf8)
    }

    @Test func aChangedTitleUnderAKnownIDIsReportedAsUpdatedWhenAsked() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        server.serve("u.xml", body: feed("First headline"))
        try fetchrun.write("""
            sources:
              - name: watched
                type: rss
                url: "\(server.url("/files/u.xml"))"
                report_updates: true
              - name: quiet
                type: rss
                url: "\(server.url("/files/u.xml"))"
            """, to: "sources.yaml")
        _ = try await fetchrun.run(["--state-dir", "state"])
        server.serve("u.xml", body: feed("Corrected headline"))
        let text = try await fetchrun.run(["--state-dir", "state"])
        #expect(text.status == 0, "\(text.stderr)")
        let watched = try #require(text.stdoutLines.first { $0.hasPrefix("watched") })
        #expect(watched.contains("noData") && watched.hasSuffix("1 updated"), "\(watched)")
        #expect(text.stdout.contains("    ~ Corrected headline  https://u.example/1  (updated)"), "\(text.stdout)")
        #expect(!(text.stdoutLines.first { $0.hasPrefix("quiet") } ?? "").contains("updated"))

        server.serve("u.xml", body: feed("Third headline"))
        let json = try await fetchrun.run(["--state-dir", "state", "--format", "json"])
        let updates = try events(json.stdout).filter { $0["event"] as? String == "updated" }
        #expect(updates.count == 1)
        #expect(updates.first?["source"] as? String == "watched")
        #expect(updates.first?["title"] as? String == "Third headline")
        let source = try events(json.stdout).first { $0["event"] as? String == "source" && $0["source"] as? String == "watched" }
        #expect(source?["updated"] as? Int == 1)
    }
}
