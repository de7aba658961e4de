import Foundation
import Testing
import FixtureServer
@testable import FetchRunKit
@testable import FetchRunTransport
import TestSupport

/// The `http:` limits, the per-source HTTP options and what responses say about caching.
@Suite struct HTTPOptionsTests {
    func load(_ text: String, environment: [String: String] = [:]) throws(ConfigError) -> FetchConfig {
        try ConfigLoader(environment: environment).load(text: text, file: "sources.yaml", directory: "/etc/fetchrun")
    }

    func problems(_ text: String, environment: [String: String] = [:]) -> [String] {
        do {
            _ = try load(text, environment: environment)
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    func transport(of source: SourceConfig) throws -> SourceFetcher {
        try #require(source.adapter as? RSSAdapter).fetcher
    }

    @Test func httpLimitsAndSourceOptionsWithDefaults() throws {
        let config = try load("""
            http:
              per_host: 12
              per_host_streams: 50
              min_delay: 250ms
              queue_timeout: 1m
            defaults:
              proxy: socks5h://127.0.0.1:1080
              headers: { X-Team: news, X-Shared: default }
              cookies: { consent: "yes" }
              user_agent: reader/1
            sources:
              - name: a
                type: rss
                url: https://a.example/feed
                headers: { X-Shared: mine }
                cookies: { session: abc }
                username: reader
                password: ${PW}
                http2: prior-knowledge
                timeout_connect: 2s
                insecure: true
              - name: b
                type: rss
                url: https://b.example/feed
                no_proxy: b.example
              - name: t
                type: traffic
            """, environment: ["PW": "hunter2"])
        #expect(config.http.maxConnectionsPerHost == 12)
        #expect(config.http.streamsPerConnection == 50)
        #expect(config.http.minDelayPerHost == .milliseconds(250))
        #expect(config.http.queueTimeout == .seconds(60))
        let a = try transport(of: config.sources[0])
        #expect(a.transport.proxy == "socks5h://127.0.0.1:1080")
        #expect(a.headers.map(\.name) == ["X-Shared", "X-Team"])
        #expect(a.headers.first { $0.name == "X-Shared" }?.value == "mine")
        #expect(a.transport.cookies == ["consent": "yes", "session": "abc"])
        #expect(a.transport.username == "reader" && a.transport.password == "hunter2")
        #expect(a.transport.version == .priorKnowledge)
        #expect(a.transport.insecure)
        #expect(a.connectTimeout == .seconds(2))
        #expect(a.userAgent == "reader/1")
        // The description a log may show masks the secrets.
        #expect(!a.transport.description.contains("hunter2") && !a.transport.description.contains("abc"))
        let b = try transport(of: config.sources[1])
        #expect(b.transport.noProxy == "b.example" && b.transport.username == nil && !b.transport.insecure)
        // A change of the HTTP defaults is a change of every source that uses them.
        let changed = try load("defaults:\n  proxy: http://127.0.0.1:3128\nsources:\n  - name: b\n    type: rss\n    url: https://b.example/feed\n")
        let plain = try load("sources:\n  - name: b\n    type: rss\n    url: https://b.example/feed\n")
        #expect(changed.sources[0].fingerprint != plain.sources[0].fingerprint)
    }

    @Test func everyBadHTTPOptionIsReportedWithItsPlaceAndNoSecret() {
        let found = problems("""
            http:
              per_host: 0
              min_delay: soon
              burst: 3
            defaults:
              proxy: ftp://user:pa55@proxy.example
            sources:
              - name: a
                type: rss
                url: https://a.example/feed
                http2: maybe
                ca_file: /nonexistent/ca.pem
                password: pa55word
                cookies: { session: "a;b" }
                timeout_connect: 0s
                insecure: sometimes
              - name: t
                type: traffic
                proxy: http://127.0.0.1:3128
            """)
        let expected = [
            "sources.yaml:2:13: 'per_host': invalid whole number '0': must be between 1 and 256",
            "sources.yaml:3:14: 'min_delay': invalid duration 'soon'",
            "sources.yaml:4:3: unknown key 'burst' in 'http'",
            "sources.yaml:6:10: 'proxy': not a usable proxy URL: the scheme must be one of",
            "sources.yaml:11:12: source 'a': 'http2': invalid HTTP version 'maybe': use one of auto, prior-knowledge, 1.1",
            "sources.yaml:12:14: source 'a': 'ca_file': no file at /nonexistent/ca.pem",
            "sources.yaml:14:25: source 'a': cookie 'session': its value holds",
            "sources.yaml:15:22: source 'a': 'timeout_connect'",
            "sources.yaml:16:15: source 'a': 'insecure'",
            "sources.yaml:13:15: source 'a': 'password' without 'username'",
            "sources.yaml:19:5: source 't': unknown key 'proxy'",
        ]
        for prefix in expected {
            #expect(found.contains { $0.hasPrefix(prefix) }, "\(prefix) not in \(found)")
        }
        #expect(!found.joined().contains("pa55"), "\(found)")
    }

    @Test func cacheControlAndExpires() {
        let date = "Mon, 02 Nov 2026 10:00:00 GMT"
        #expect(CacheControl(headers: ["cache-control": "public, max-age=600"], now: Date()).freshFor == .seconds(600))
        #expect(CacheControl(headers: ["cache-control": "max-age=600", "age": "100"], now: Date()).freshFor == .seconds(500))
        #expect(CacheControl(headers: ["cache-control": "max-age=\"90\""], now: Date()).freshFor == .seconds(90))
        #expect(CacheControl(headers: ["expires": "Mon, 02 Nov 2026 11:00:00 GMT", "date": date], now: Date()).freshFor == .seconds(3600))
        // max-age wins over Expires; an Expires that is no date means expired.
        #expect(CacheControl(headers: ["cache-control": "max-age=60", "expires": "Mon, 02 Nov 2026 11:00:00 GMT", "date": date], now: Date()).freshFor == .seconds(60))
        #expect(CacheControl(headers: ["expires": "0"], now: Date()).freshFor == nil)
        #expect(CacheControl(headers: ["cache-control": "max-age=-5"], now: Date()).freshFor == nil)
        #expect(CacheControl(headers: ["cache-control": "no-cache"], now: Date()).freshFor == nil)
        // Hostile numbers are clamped to a week, never overflow.
        #expect(CacheControl(headers: ["cache-control": "max-age=99999999999999999999999"], now: Date()).freshFor == CacheControl.longestFreshness)
        #expect(CacheControl(headers: ["expires": "Fri, 31 Dec 9999 23:59:59 GMT", "date": date], now: Date()).freshFor == CacheControl.longestFreshness)
        #expect(CacheControl(headers: ["cache-control": "private, no-store"], now: Date()).noStore)
        #expect(!CacheControl(headers: ["cache-control": "no-cache"], now: Date()).noStore)
        // A directive that is only "=" has an empty name: ignored, not a trap (found by fuzzing).
        #expect(CacheControl(headers: ["cache-control": "="], now: Date()).freshFor == nil)
        #expect(CacheControl(headers: ["cache-control": "max-age=60, =, ="], now: Date()).freshFor == .seconds(60))
        #expect(CacheControl(headers: ["cache-control": "=60, no-store"], now: Date()).noStore)
    }

    @Test func freshnessPushesTheNextFetchUpToMaxInterval() {
        var schedule = FetchSchedule(interval: .seconds(60), maxInterval: .seconds(600))
        #expect(schedule.delay(after: .newData([]), jitter: 0, freshFor: .seconds(300)) == .seconds(300))
        #expect(schedule.delay(after: .newData([]), jitter: 0, freshFor: .seconds(10)) == .seconds(60))
        #expect(schedule.delay(after: .newData([]), jitter: 0, freshFor: .seconds(86_400)) == .seconds(600))
        // A failure is not fresh: backoff as before.
        #expect(schedule.delay(after: .failed(FetchFailure(.network, "x")), jitter: 0, freshFor: .seconds(300)) == .seconds(60))
    }

    @Test func hostKeys() {
        #expect(HTTPText.hostKey(of: "https://Example.org/feed") == "example.org")
        #expect(HTTPText.hostKey(of: "https://example.org:443/feed") == "example.org")
        #expect(HTTPText.hostKey(of: "http://user:pw@127.0.0.1:8080/x?y") == "127.0.0.1:8080")
        #expect(HTTPText.hostKey(of: "file:///etc/feed.xml") == nil)
    }

    /// What headers and credentials are bound to: https to http on the same host is another
    /// origin, and so is another port; a default port written out is not.
    @Test func origins() {
        #expect(HTTPText.origin(of: "https://Example.org/feed") == "https://example.org")
        #expect(HTTPText.origin(of: "https://example.org:443/x") == HTTPText.origin(of: "https://example.org/y"))
        #expect(HTTPText.origin(of: "http://example.org/feed") != HTTPText.origin(of: "https://example.org/feed"))
        #expect(HTTPText.origin(of: "https://example.org:8443/feed") != HTTPText.origin(of: "https://example.org/feed"))
        #expect(HTTPText.origin(of: "http://user:pw@example.org:80/x") == "http://example.org")
        #expect(HTTPText.origin(of: "file:///etc/feed.xml") == nil)
    }
}

/// fetchrun's own per-host queue, against a real server.
@Suite struct HostLimitTests {
    let server: FixtureServer
    let other: FixtureServer

    init() throws {
        server = try FixtureServer()
        other = try FixtureServer()
    }

    func client(perHost: Int = 6, minDelay: Duration = .zero, queueTimeout: Duration = .seconds(300)) -> CurlHTTPClient {
        var configuration = CurlHTTPClient.Configuration()
        configuration.maxConnectionsPerHost = perHost
        configuration.minDelayPerHost = minDelay
        configuration.queueTimeout = queueTimeout
        return CurlHTTPClient.started(configuration: configuration)
    }

    func get(_ url: String, with client: CurlHTTPClient, within: Duration = .seconds(60)) async throws -> HTTPResponse {
        try await client.execute(HTTPRequest(url: url, deadline: .now + within))
    }

    @Test func aHostThatNeverAnswersIsSkippedAfterThreeSilentRequestsAndAnotherHostIsNot() async throws {
        let client = client(perHost: 2)
        let outcomes = await withTaskGroup(of: Result<Int, HTTPError>.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    do { return .success(try await get(server.url("/hang"), with: client, within: .seconds(1)).status) } catch let error as HTTPError { return .failure(error) } catch { return .failure(HTTPError(.network, "\(error)")) }
                }
            }
            group.addTask {
                do { return .success(try await get(other.url("/feed/1.xml"), with: client).status) } catch { return .failure(HTTPError(.network, "\(error)")) }
            }
            var outcomes: [Result<Int, HTTPError>] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        let skipped = outcomes.compactMap { outcome -> HTTPError? in
            if case .failure(let error) = outcome, error.kind == .hostUnreachable { return error }
            return nil
        }
        // Two slots: two silent requests, then two more (the third opens the breaker), and
        // nothing else is sent — the rest fail without waiting a deadline each.
        #expect(server.requests(to: "/hang").count <= 4, "\(server.requests(to: "/hang").count) sent")
        #expect(skipped.count >= 26, "\(outcomes)")
        #expect(skipped.allSatisfy { $0.message.contains("127.0.0.1:\(server.port) is not answering (") }, "\(skipped.first?.message ?? "")")
        #expect(outcomes.contains { if case .success(200) = $0 { true } else { false } })
    }

    /// Half-open: after its opening one request tries the host; silence opens it again for
    /// twice as long, an answer closes it.
    @Test func theBreakerLetsOneTryThroughAndAnAnswerClosesIt() async throws {
        let clock = TestClock()
        let scheduler = HostScheduler(limits: .init(perHost: 2, streamsPerConnection: 1, minDelay: .zero, queueTimeout: .seconds(600)), clock: clock)
        for _ in 0..<3 {
            let permit = try await scheduler.acquire(host: "h")
            await scheduler.release(permit, multiplexed: false, retryAfter: nil, status: 0, answer: .silent)
        }
        await #expect(throws: HostScheduler.Refusal.self) { try await scheduler.acquire(host: "h") }
        // Another host is another breaker.
        await scheduler.release(try await scheduler.acquire(host: "other"), multiplexed: false, retryAfter: nil, status: 200)

        // Open for 30 s, to the instant.
        clock.advance(by: .seconds(29))
        await #expect(throws: HostScheduler.Refusal.self) { try await scheduler.acquire(host: "h") }
        clock.advance(by: .seconds(1))
        let probe = try await scheduler.acquire(host: "h")
        // While the try is out, the next one waits for its outcome…
        let waiting = Task { try await scheduler.acquire(host: "h") }
        try await waitUntil("the second request in the host's queue") { await scheduler.waiting(on: "h") == 1 }
        await scheduler.release(probe, multiplexed: false, retryAfter: nil, status: 0, answer: .silent)
        // …and fails with it: the host is open again, for twice as long (60 s).
        await #expect(throws: HostScheduler.Refusal.self) { try await waiting.value }
        clock.advance(by: .seconds(59))
        await #expect(throws: HostScheduler.Refusal.self) { try await scheduler.acquire(host: "h") }

        clock.advance(by: .seconds(1))
        let second = try await scheduler.acquire(host: "h")
        await scheduler.release(second, multiplexed: false, retryAfter: nil, status: 200, answer: .answered)
        // Closed: both slots at once, no waiting.
        let a = try await scheduler.acquire(host: "h"), b = try await scheduler.acquire(host: "h")
        #expect(a.waited == .zero && b.waited == .zero)
    }

    @Test func theBreakersOpeningDoublesWithEachFailedTryUpToTenMinutes() {
        #expect((1...7).map { HostScheduler.Breaker.openFor(trips: $0) } == [30, 60, 120, 240, 480, 600, 600].map { Duration.seconds($0) })
    }

    @Test func requestsToAHostKeepMinDelayApartAndAQueueBoundFailsTheRest() async throws {
        let clock = TestClock()
        let scheduler = HostScheduler(limits: .init(perHost: 6, streamsPerConnection: 1, minDelay: .seconds(2), queueTimeout: .seconds(5)), clock: clock)
        let first = try await scheduler.acquire(host: "h")
        #expect(first.waited == .zero)
        let queued = (0..<3).map { _ in Task { try await scheduler.acquire(host: "h") } }
        try await waitUntil("three requests queued behind the first") { await scheduler.waiting(on: "h") == 3 }
        // Each starts min_delay after the one before it…
        clock.advance(by: .seconds(2))
        try await waitUntil("the second request let through") { await scheduler.waiting(on: "h") == 2 }
        clock.advance(by: .seconds(2))
        try await waitUntil("the third request let through") { await scheduler.waiting(on: "h") == 1 }
        // …and the last would start at 6 s, past its 5 s bound: it fails at the bound.
        clock.advance(by: .seconds(1))
        var waits: [Duration] = [], refusals = 0
        for request in queued {
            do { waits.append(try await request.value.waited) } catch is HostScheduler.Refusal { refusals += 1 }
        }
        #expect(waits == [.seconds(2), .seconds(4)])
        #expect(refusals == 1)
    }

    @Test func aRetryAfterHoldsTheHostBackUntilItsTimeAndLongerOnesFailAtOnce() async throws {
        let clock = TestClock()
        let scheduler = HostScheduler(limits: .init(perHost: 6, streamsPerConnection: 1, minDelay: .zero, queueTimeout: .seconds(60)), clock: clock)
        await scheduler.release(try await scheduler.acquire(host: "h"), multiplexed: false, retryAfter: .seconds(30), status: 429)
        let held = Task { try await scheduler.acquire(host: "h") }
        try await waitUntil("a request held back by the Retry-After") { await scheduler.waiting(on: "h") == 1 }
        clock.advance(by: .seconds(29))
        #expect(await scheduler.waiting(on: "h") == 1)
        clock.advance(by: .seconds(1))
        #expect(try await held.value.waited == .seconds(30))
        // A wait past the queue's bound is not waited out: the request fails at once.
        await scheduler.release(try await scheduler.acquire(host: "h"), multiplexed: false, retryAfter: .seconds(120), status: 503)
        await #expect(throws: HostScheduler.Refusal.self) { try await scheduler.acquire(host: "h") }
        #expect(try await scheduler.acquire(host: "other").waited == .zero)
    }

    /// Requests that hang are the host's fault only if it said nothing since they were sent: a
    /// host that answers most URLs and hangs on a few is not cut off when the few end together.
    @Test func silenceCountsAgainstAHostOnlyIfItAnsweredNothingSinceTheRequestWasSent() async throws {
        // A short queue bound: were the host taken for suspect, the acquires below would wait
        // for a slot and fail after it instead of hanging the test.
        let clock = TestClock()
        let scheduler = HostScheduler(limits: .init(perHost: 6, streamsPerConnection: 1, minDelay: .zero, queueTimeout: .seconds(2)), clock: clock)
        var hanging: [HostScheduler.Permit] = []
        for _ in 0..<3 { hanging.append(try await scheduler.acquire(host: "h")) }
        // The host answers another request after those were sent.
        clock.advance(by: .milliseconds(1))
        await scheduler.release(try await scheduler.acquire(host: "h"), multiplexed: false, retryAfter: nil, status: 200)
        for permit in hanging { await scheduler.release(permit, multiplexed: false, retryAfter: nil, status: 0, answer: .silent) }
        // Neither open nor suspect: six requests go out at once.
        var next: [HostScheduler.Permit] = []
        for _ in 0..<6 { next.append(try await scheduler.acquire(host: "h")) }
        #expect(next.allSatisfy { $0.waited == .zero })
        // Silence from requests sent after the last answer still counts: three open the breaker.
        for permit in next.prefix(3) { await scheduler.release(permit, multiplexed: false, retryAfter: nil, status: 0, answer: .silent) }
        await #expect(throws: HostScheduler.Refusal.self) { try await scheduler.acquire(host: "h") }
    }

    @Test func aURLThatHangsOnItsOwnCannotOpenTheBreakerEvenWhileItsHostIsSuspect() async throws {
        let clock = TestClock()
        let scheduler = HostScheduler(limits: .init(perHost: 6, streamsPerConnection: 1, minDelay: .zero, queueTimeout: .seconds(2)), clock: clock)
        func release(_ permit: HostScheduler.Permit, _ answer: HostScheduler.Answer) async {
            await scheduler.release(permit, multiplexed: false, retryAfter: nil, status: answer == .answered ? 200 : 0, answer: answer)
        }
        // Three URLs hang while the host answers another: each is remembered as hanging alone.
        var hanging: [HostScheduler.Permit] = []
        for index in 0..<3 { hanging.append(try await scheduler.acquire(host: "h", url: "/hang/\(index)")) }
        clock.advance(by: .milliseconds(1))
        await release(try await scheduler.acquire(host: "h", url: "/feed"), .answered)
        for permit in hanging { await release(permit, .silent) }
        // A URL not known to hang goes silent with nothing else out: it counts, and the host is
        // suspect (one request at a time, so nothing else can answer while one hangs).
        await release(try await scheduler.acquire(host: "h", url: "/new"), .silent)
        // The known ones, one at a time: their silence still does not count.
        for index in 0..<3 { await release(try await scheduler.acquire(host: "h", url: "/hang/\(index)"), .silent) }
        let after = try await scheduler.acquire(host: "h", url: "/feed")
        #expect(after.waited == .zero)
        await release(after, .answered)
        // A URL that answers is forgotten: its silence counts again, and three open the breaker.
        await release(try await scheduler.acquire(host: "h", url: "/hang/0"), .answered)
        for url in ["/hang/0", "/new", "/other"] { await release(try await scheduler.acquire(host: "h", url: url), .silent) }
        await #expect(throws: HostScheduler.Refusal.self) { try await scheduler.acquire(host: "h", url: "/feed") }
    }

    @Test func aRetryAfterHoldsBackTheWholeHostButNoOtherHost() async throws {
        let client = client()
        let limited = try await get(server.url("/status/429?retry-after=2"), with: client)
        #expect(limited.status == 429)
        async let sameHost = get(server.url("/feed/1.xml"), with: client)
        async let otherHost = get(other.url("/feed/1.xml"), with: client)
        let (held, free) = try await (sameHost, otherHost)
        #expect(held.status == 200 && free.status == 200)
        // Retry-After is whole seconds from the answer: the wait is most of 2 s, never none.
        #expect(held.queueWait > .milliseconds(1500), "\(held.queueWait)")
        #expect(free.queueWait == .zero)
    }

    @Test func aBackOffLongerThanTheQueueWaitsFailsAtOnce() async throws {
        let client = client(queueTimeout: .seconds(5))
        _ = try await get(server.url("/status/503?retry-after=120"), with: client)
        let start = ContinuousClock.now
        do {
            _ = try await get(server.url("/feed/2.xml"), with: client)
            Issue.record("expected the host's back-off to refuse the request")
        } catch let error as HTTPError {
            guard case .hostBackingOff(let status) = error.kind else { throw error }
            #expect(status == 503)
            #expect(error.retryAfter.map { $0 > .seconds(100) } == true)
        }
        #expect(ContinuousClock.now - start < .seconds(4))
        #expect(server.requests(to: "/feed/2.xml").isEmpty)
    }

    @Test func aRequestWaitsForItsHostsSlotAtMostTheQueueTimeout() async throws {
        let client = client(perHost: 1, queueTimeout: .milliseconds(500))
        let hanging = Task { try await get(server.url("/hang"), with: client, within: .seconds(60)) }
        defer { hanging.cancel() }
        // The hang holds the one slot once the server has seen it.
        try await waitUntil("the hang at the server") { !server.requests(to: "/hang").isEmpty }
        do {
            _ = try await get(server.url("/feed/3.xml"), with: client)
            Issue.record("expected a queue time-out")
        } catch let error as HTTPError {
            #expect(error.kind == .queueTimeout)
            #expect(error.message.contains("for a connection to 127.0.0.1:\(server.port)"))
        }
        // Another host has slots of its own.
        #expect(try await get(other.url("/feed/3.xml"), with: client).queueWait == .zero)
    }

    @Test func minDelaySpacesTheStartsOfRequestsToAHost() async throws {
        let client = client(minDelay: .milliseconds(300))
        try await withThrowingTaskGroup(of: HTTPResponse.self) { group in
            for index in 1...3 { group.addTask { try await get(server.url("/feed/\(index).xml"), with: client) } }
            for try await response in group { #expect(response.status == 200) }
        }
        let arrivals = server.requests.map(\.receivedAt).sorted()
        #expect(arrivals.count == 3)
        // A lower bound only: spacing can be longer on a busy machine, never shorter.
        #expect(arrivals[2] - arrivals[0] >= .milliseconds(590), "\(arrivals)")
    }
}
