import Foundation
import Testing
import FixtureServer

/// HTTP as users configure it, through the built binary: TLS trust, HTTP/2, per-host limits,
/// proxies and credentials, caching and permanent redirects.
@Suite struct HTTPEndToEndTests {
    func sources(_ result: FetchRunBinary.Result) throws -> [String: [String: Any]] {
        var found: [String: [String: Any]] = [:]
        for event in try events(result.stdout) where event["event"] as? String == "source" {
            found[event["source"] as! String] = event
        }
        return found
    }

    func failureMessage(_ source: [String: Any]?) -> String {
        ((source?["failure"] as? [String: Any])?["message"] as? String) ?? ""
    }

    @Test func tlsTrustsTheSystemCAsACAFileOrNothingWithAWarning() async throws {
        let server = try H2FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: untrusted, type: rss, url: "\(server.url("/feed/1.xml"))" }
              - { name: trusted, type: rss, url: "\(server.url("/feed/2.xml"))", ca_file: "\(server.caFile)" }
              - { name: careless, type: rss, url: "\(server.url("/feed/3.xml"))", insecure: true }
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 2, "\(result.stderr)")
        let found = try sources(result)
        #expect(found["untrusted"]?["outcome"] as? String == "failed")
        let message = failureMessage(found["untrusted"])
        #expect(message.contains("certificate is not trusted") && message.contains("ca_file"), "\(message)")
        #expect(found["trusted"]?["outcome"] as? String == "newData", "\(found["trusted"] ?? [:])")
        #expect(found["careless"]?["outcome"] as? String == "newData", "\(found["careless"] ?? [:])")
        #expect((found["careless"]?["notes"] as? [String])?.contains("TLS certificate not checked (insecure: true)") == true)
        #expect(found["trusted"]?["notes"] == nil)
        // The text report shows the warning too.
        let text = try await fetchrun.run(["--source", "careless"])
        #expect(text.stdout.contains("! TLS certificate not checked (insecure: true)"), "\(text.stdout)")
    }

    @Test func http2CarriesManyFeedsOfOneHostOverFewConnections() async throws {
        let server = try H2FixtureServer()
        let fetchrun = try FetchRunBinary()
        var config = "state_dir: state\nhttp: { per_host: 2 }\ndefaults:\n  ca_file: \"\(server.caFile)\"\nsources:\n"
        for index in 1...120 { config += "  - { name: feed-\(index), type: rss, url: \"\(server.url("/feed/\(index).xml?latency=200ms"))\" }\n" }
        try fetchrun.write(config, to: "sources.yaml")
        let result = try await fetchrun.run(["-v", "--format", "json"])
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(try sources(result).values.allSatisfy { $0["outcome"] as? String == "newData" })
        #expect(result.stderr.contains("over HTTP/2"))
        let stats = server.stop()
        // Two connections per host, and far more than two requests in flight on one of them.
        #expect((stats["connections"] ?? 99) <= 2, "\(stats)")
        #expect((stats["max_streams_on_a_connection"] ?? 0) > 10, "\(stats)")
        #expect(stats["requests"] == 120, "\(stats)")
    }

    @Test func priorKnowledgeSpeaksHTTP2OverPlainHTTP() async throws {
        let server = try H2FixtureServer(plain: true)
        let fetchrun = try FetchRunBinary()
        var config = "state_dir: state\nhttp: { per_host: 1 }\ndefaults:\n  http2: prior-knowledge\nsources:\n"
        for index in 1...20 { config += "  - { name: feed-\(index), type: rss, url: \"\(server.url("/feed/\(index).xml?latency=100ms"))\" }\n" }
        try fetchrun.write(config, to: "sources.yaml")
        let result = try await fetchrun.run(["-v"])
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(result.stderr.contains("over HTTP/2"))
        #expect(try sources(try await fetchrun.run(["--format", "json"])).values.allSatisfy { $0["outcome"] as? String == "noData" })
        let stats = server.stop()
        // libcurl 7.89 and later multiplex over one connection; 7.88 (Debian 12) cannot reuse
        // a prior-knowledge connection at all (curl #10634), so there each request has its own.
        let multiplexed = stats["connections"] == 1 && (stats["max_streams_on_a_connection"] ?? 0) > 1
        let oneEach = stats["connections"] == 40 && stats["max_streams_on_a_connection"] == 1
        #expect(multiplexed || oneEach, "\(stats)")
    }

    @Test func fiftySlowFeedsBesideAHangingOneAllSucceed() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // Five free connections for fifty 300 ms answers: the last ones wait ~3 s, longer than
        // their 2 s deadline, which covers their own request only.
        var config = "state_dir: state\ndefaults:\n  deadline: 2s\nsources:\n  - { name: hang, type: rss, url: \"\(server.url("/hang"))\" }\n"
        for index in 1...50 { config += "  - { name: slow-\(index), type: rss, url: \"\(server.url("/feed/\(index).xml?latency=300ms"))\" }\n" }
        try fetchrun.write(config, to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 2, "\(result.stderr)")
        let found = try sources(result)
        #expect((found["hang"]?["failure"] as? [String: Any])?["kind"] as? String == "deadlineExceeded")
        let slow = found.filter { $0.key.hasPrefix("slow-") }.values
        #expect(slow.count == 50)
        #expect(slow.allSatisfy { $0["outcome"] as? String == "newData" }, "\(slow.filter { $0["outcome"] as? String != "newData" })")
        // Their wait for the host's six connections is reported, with the host.
        let waited = slow.filter { ($0["queue_wait_ms"] as? Int ?? 0) > 0 }
        #expect(!waited.isEmpty)
        #expect(waited.allSatisfy { $0["queue_host"] as? String == "127.0.0.1:\(server.port)" })
        #expect(waited.contains { ($0["queue_wait_ms"] as? Int ?? 0) > 2000 }, "\(waited.map { $0["queue_wait_ms"] ?? 0 })")
        // The text report says so on the line of a source that waited.
        var single = "state_dir: one\nhttp: { per_host: 1 }\nsources:\n"
        for index in 1...3 { single += "  - { name: one-\(index), type: rss, url: \"\(server.url("/feed/\(index).xml?latency=300ms"))\" }\n" }
        try fetchrun.write(single, to: "one.yaml")
        let text = try await fetchrun.run(["--config", "one.yaml"])
        #expect(text.stdout.contains("(waited 0.") && text.stdout.contains("for 127.0.0.1:\(server.port))"), "\(text.stdout)")
    }

    @Test func proxyCredentialsCookiesAndHeadersArriveAndThePasswordStaysSecret() async throws {
        let proxy = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let password = "pw-\(UUID().uuidString)"
        try fetchrun.write("""
            state_dir: state
            defaults:
              proxy: http://127.0.0.1:\(proxy.port)
              headers: { X-Client: fetchrun-test }
            sources:
              - name: private
                type: rss
                url: http://feeds.invalid/feed/4.xml
                username: reader
                password: ${FEED_PASSWORD}
                cookies: { session: abc123, consent: "yes" }
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["-vv", "--format", "json"], environment: ["FEED_PASSWORD": password])
        #expect(result.status == 0, "\(result.stderr)")
        let request = try #require(proxy.requests.first { $0.path == "/feed/4.xml" })
        #expect(request.proxiedTo == "http://feeds.invalid")
        #expect(request.headers["authorization"] == "Basic " + Data("reader:\(password)".utf8).base64EncodedString())
        #expect(request.headers["cookie"] == "consent=yes; session=abc123")
        #expect(request.headers["x-client"] == "fetchrun-test")
        let status = try await fetchrun.run(["status", "--format", "json"])
        let show = try await fetchrun.run(["show", "private"])
        // Nowhere: output, logs, snapshots, the state database.
        var everything = result.stdout + result.stderr + status.stdout + status.stderr + show.stdout
        for file in fetchrun.files(in: "state/snapshots") { everything += (try? fetchrun.read("state/snapshots/\(file)")) ?? "" }
        for file in fetchrun.files(in: "state") where file.hasPrefix("state.db") {
            everything += String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: fetchrun.path("state/\(file)")))) ?? Data(), as: UTF8.self)
        }
        #expect(!everything.contains(password))
        #expect(!everything.contains(Data("reader:\(password)".utf8).base64EncodedString()))
        #expect(!everything.contains("abc123"))
    }

    @Test func headersCookiesAndCredentialsGoToTheirOwnOriginOnlyAfterARedirect() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: elsewhere
                type: rss
                url: "\(server.url("/redirect-to/localhost/feed/1.xml"))"
                headers: { X-Api-Key: key-123, Authorization: "Bearer tok-456" }
                cookies: { session: abc123 }
              - name: same
                type: rss
                url: "\(server.url("/redirect/1"))"
                username: reader
                password: pw-789
                headers: { X-Api-Key: key-123 }
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["-v"])
        #expect(result.status == 0, "\(result.stderr)")
        let first = try #require(server.requests.first { $0.path == "/redirect-to/localhost/feed/1.xml" })
        #expect(first.headers["x-api-key"] == "key-123" && first.headers["cookie"] == "session=abc123")
        // localhost is another origin than 127.0.0.1, though the same server: nothing follows.
        let followed = try #require(server.requests.first { $0.path == "/feed/1.xml" && $0.headers["host"]?.hasPrefix("localhost") == true })
        #expect(followed.headers["x-api-key"] == nil && followed.headers["authorization"] == nil && followed.headers["cookie"] == nil, "\(followed.headers)")
        #expect(followed.headers["accept"] != nil)
        #expect(result.stderr.contains("to another origin (http://localhost:\(server.port)): not sent there: Authorization, X-Api-Key, cookies"), "\(result.stderr)")
        #expect(!result.stderr.contains("key-123") && !result.stderr.contains("abc123"))
        // A redirect within the origin keeps them.
        let same = try #require(server.requests.first { $0.path == "/feed/1.xml" && $0.headers["host"]?.hasPrefix("127.0.0.1") == true })
        #expect(same.headers["x-api-key"] == "key-123" && same.headers["authorization"] == "Basic " + Data("reader:pw-789".utf8).base64EncodedString())
        let status = try events(try await fetchrun.run(["status", "--format", "json"]).stdout)
        #expect(status.allSatisfy { $0["health"] as? String != "failing" }, "\(status)")
    }

    @Test func aSourcesURLIsShownAsWrittenNeverWithTheSecretItExpandsTo() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let token = "tok-\(UUID().uuidString)"
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: api, type: rss, url: "\(server.url("/status/404"))?token=${FEED_TOKEN}" }
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["-vv"], environment: ["FEED_TOKEN": token])
        #expect(result.status == 3, "\(result.stderr)") // its only source failed
        #expect(server.requests(to: "/status/404").first?.query["token"] == token)
        #expect(result.stdout.contains("?token=${FEED_TOKEN}"), "\(result.stdout)")
        let status = try await fetchrun.run(["status", "--format", "json"], environment: ["FEED_TOKEN": token])
        var everything = result.stdout + result.stderr + status.stdout + status.stderr
        for file in fetchrun.files(in: "state") where file.hasPrefix("state.db") {
            everything += String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: fetchrun.path("state/\(file)")))) ?? Data(), as: UTF8.self)
        }
        #expect(!everything.contains(token))
    }

    @Test func theEnvironmentsProxyIsUsedUnlessASourceNamesOne() async throws {
        let proxy = try FixtureServer()
        let origin = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: via-env, type: rss, url: "http://feeds.invalid/feed/1.xml" }
              - { name: direct, type: rss, url: "\(origin.url("/feed/2.xml"))", no_proxy: "127.0.0.1" }
            """, to: "sources.yaml")
        let result = try await fetchrun.run([], environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": ""])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(proxy.requests.first { $0.path == "/feed/1.xml" }?.proxiedTo == "http://feeds.invalid")
        #expect(origin.requests(to: "/feed/2.xml").count == 1)
        #expect(proxy.requests(to: "/feed/2.xml").isEmpty)
    }

    @Test func enclosuresTravelThroughTheFeedsProxyWithoutItsCredentials() async throws {
        let proxy = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        proxy.serve("pod.xml", body: DownloadTests.podcast([("ep", "http://media.invalid/enclosures/ep.mp3?size=5000", "audio/mpeg")]))
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: pod
                type: rss
                url: http://feeds.invalid/files/pod.xml
                proxy: http://127.0.0.1:\(proxy.port)
                username: reader
                password: secret-pw
                cookies: { session: abc123 }
                download: { dir: media }
            """, to: "sources.yaml")
        let result = try await fetchrun.run([])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(fetchrun.files(in: "media") == ["ep.mp3"])
        let feed = try #require(proxy.requests(to: "/files/pod.xml").first)
        #expect(feed.proxiedTo == "http://feeds.invalid" && feed.headers["authorization"] != nil)
        let enclosure = try #require(proxy.requests(to: "/enclosures/ep.mp3").first)
        #expect(enclosure.proxiedTo == "http://media.invalid")
        // The feed's credentials stay with the feed's host.
        #expect(enclosure.headers["authorization"] == nil && enclosure.headers["cookie"] == nil)
    }

    /// Also across a flood of repeated header lines (a hostile server's): they are joined, and
    /// read to the last, so 16,000 lines of `Cache-Control: a` and then `max-age=600` keep
    /// `flooded` from being due again; past libcurl's 300 KB of headers the response is refused,
    /// and only that source fails. (What the join costs the curl thread is for
    /// `Benchmarks/hostile.sh` to show, not a test.)
    @Test func cacheControlPushesTheNextDueTimeEvenAfterAHeaderFloodAndNoStoreKeepsNoValidators() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            defaults: { interval: 1s, max_interval: 1h }
            sources:
              - { name: cached, type: rss, url: "\(server.url("/feed/1.xml?cache-control=max-age%3D600"))" }
              - { name: plain, type: rss, url: "\(server.url("/feed/2.xml"))" }
              - { name: unstored, type: rss, url: "\(server.url("/conditional/3.xml?cache-control=no-store"))" }
              - { name: flooded, type: rss, url: "\(server.url("/header-flood?lines=16000"))" }
              - { name: overflowing, type: rss, url: "\(server.url("/header-flood?lines=60000&name=X"))" }
            """, to: "sources.yaml")
        let first = try sources(try await fetchrun.run(["run", "--due", "--format", "json"]))
        #expect(first["flooded"]?["outcome"] as? String == "newData")
        #expect(failureMessage(first["overflowing"]).contains("Too large response headers"), "\(first["overflowing"] ?? [:])")
        #expect(first.values.filter { $0["outcome"] as? String == "newData" }.count == 4)
        // Real time: the sources' interval passes between two runs of the binary.
        try await Task.sleep(for: .milliseconds(1600))
        let second = try await fetchrun.run(["run", "--due", "--format", "json"])
        let found = try sources(second)
        // plain's 1 s interval has passed (stretched to 1.5 s at most); cached said fresh for 10 minutes.
        #expect(found["cached"] == nil, "\(second.stdout)")
        #expect(found["flooded"] == nil, "max-age=600 after 16,000 other lines was not read: \(second.stdout)")
        #expect(found["plain"] != nil, "\(second.stdout)")
        #expect(server.requests(to: "/feed/1.xml").count == 1)
        #expect(server.requests(to: "/header-flood").filter { $0.query["name"] == nil }.count == 1)
        // no-store: the ETag was not kept, so none went back.
        #expect(server.requests(to: "/conditional/3.xml").count == 2)
        #expect(server.requests(to: "/conditional/3.xml").allSatisfy { $0.headers["if-none-match"] == nil })
    }

    @Test func aPermanentRedirectSeenThreeTimesIsHintedInTheReportAndStatus() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: moved, type: rss, url: "\(server.url("/moved/2.xml"))" }
              - { name: temporary, type: rss, url: "\(server.url("/redirect/1"))" }
            """, to: "sources.yaml")
        let target = server.url("/feed/2.xml")
        for run in 1...3 {
            let result = try await fetchrun.run([])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("moved permanently to \(target)") == (run == 3), "run \(run): \(result.stdout)")
        }
        let status = try await fetchrun.run(["status"])
        #expect(status.stdout.contains("moved permanently to \(target) (3 fetches in a row): update its 'url' in the config"), "\(status.stdout)")
        #expect(!status.stdout.contains("temporary  ok") || !status.stdout.components(separatedBy: "temporary").last!.contains("moved"))
        let json = try events(try await fetchrun.run(["status", "--format", "json"]).stdout)
        let moved = json.first { $0["source"] as? String == "moved" }?["moved"] as? [String: Any]
        #expect(moved?["to"] as? String == target && moved?["fetches"] as? Int == 3)
        #expect(json.first { $0["source"] as? String == "temporary" }?["moved"] == nil)
    }
}
