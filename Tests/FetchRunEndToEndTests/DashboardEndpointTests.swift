import Foundation
import Testing
import FixtureServer
import TestSupport

/// The dashboard over HTTP, as the built binary serves it: signing in with the listener's
/// token, the two actions and what refuses them, `dashboard: read_only` and `off`.
@Suite struct DashboardEndpointTests {
    /// The form token a page carries.
    static func formToken(_ page: String) -> String? {
        page.firstMatch(of: /name="csrf" value="([0-9a-f]{64})"/).map { String($0.1) }
    }

    @Test func signingInWithTheTokenOpensThePagesAndNothingElse() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        try fetchrun.write("""
            state_dir: state
            listen: { address: "127.0.0.1:\(port)", token: "${DASH_TOKEN}" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/feed/1.xml"))", interval: 1h }
              - { name: keyed, type: rss, url: "https://user:pass@feeds.example/${FEED_KEY}.xml", interval: 1h }
            """, to: "sources.yaml")
        let watch = try fetchrun.start(["watch", "--for", "120s"], environment: ["DASH_TOKEN": "s3cret-token", "FEED_KEY": "k-123-secret"])
        defer { kill(watch.pid, SIGKILL) }
        try await waitUntil("the endpoint") { MonitoringTests.get(port: port, "/healthz", token: "s3cret-token")?.status == 200 }
        let own = [("Origin", "http://127.0.0.1:\(port)")]

        // Without the token: a browser is sent to sign in, anything else refused.
        #expect(MonitoringTests.request(port: port, path: "/")?.status == 401)
        let browser = try #require(MonitoringTests.request(port: port, path: "/sources/news", headers: [("Accept", "text/html,*/*")]))
        #expect(browser.status == 303 && browser.headers["location"] == "/login")
        #expect(MonitoringTests.request(port: port, path: "/login")?.status == 200)
        #expect(MonitoringTests.request(port: port, path: "/assets/dashboard.css")?.status == 200)

        // A wrong token, a form from another site, then the right one.
        #expect(MonitoringTests.request(port: port, method: "POST", path: "/login", headers: own, body: "token=wrong")?.status == 401)
        #expect(MonitoringTests.request(port: port, method: "POST", path: "/login", headers: [("Origin", "http://evil.example")], body: "token=s3cret-token")?.status == 403)
        let signedIn = try #require(MonitoringTests.request(port: port, method: "POST", path: "/login", headers: own, body: "token=s3cret-token"))
        #expect(signedIn.status == 303 && signedIn.headers["location"] == "/")
        let setCookie = try #require(signedIn.headers["set-cookie"])
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && !setCookie.contains("s3cret-token"))
        let cookie = [("Cookie", String(setCookie.prefix { $0 != ";" }))]

        // The cookie opens the pages and the feeds they link to, not the metrics or the status.
        let page = try #require(MonitoringTests.request(port: port, path: "/sources/news", headers: cookie))
        #expect(page.status == 200 && page.body.contains("<h1>news"))
        #expect(MonitoringTests.request(port: port, path: "/feeds/all.atom", headers: cookie)?.status == 200)
        #expect(MonitoringTests.request(port: port, path: "/metrics", headers: cookie)?.status == 401)
        #expect(MonitoringTests.request(port: port, path: "/status", headers: cookie)?.status == 401)
        #expect(MonitoringTests.request(port: port, path: "/", headers: [("Cookie", "fetchrun_dashboard=00")])?.status == 401)
        // URLs as the config writes them: `${VAR}` unexpanded, no credentials.
        let sources = try #require(MonitoringTests.request(port: port, path: "/", headers: cookie))
        #expect(sources.body.contains("https://feeds.example/${FEED_KEY}.xml") && !sources.body.contains("k-123-secret") && !sources.body.contains("pass@"))
        // The bearer token still opens everything.
        #expect(MonitoringTests.request(port: port, path: "/", headers: [("Authorization", "Bearer s3cret-token")])?.status == 200)

        // Check now, with the page's form token and from the page's origin.
        let token = try #require(Self.formToken(page.body))
        #expect(MonitoringTests.request(port: port, method: "POST", path: "/sources/news/check", headers: cookie, body: "csrf=\(token)")?.status == 403)
        #expect(MonitoringTests.request(port: port, method: "POST", path: "/sources/news/check", headers: cookie + own, body: "csrf=\(String(token.reversed()))")?.status == 403)
        #expect(MonitoringTests.request(port: port, method: "POST", path: "/sources/nope/check", headers: cookie + own, body: "csrf=\(token)")?.status == 404)
        // Once its first fetch has ended (else "check now" finds it in flight, or not yet started).
        try await waitUntil("the first fetch") {
            MonitoringTests.get(port: port, "/status", token: "s3cret-token")?.body.split(separator: "\n")
                .contains { $0.contains(#""source":"news""#) && $0.contains(#""last_fetch""#) } == true
        }
        let before = server.requests(to: "/feed/1.xml").count
        let checked = try #require(MonitoringTests.request(port: port, method: "POST", path: "/sources/news/check", headers: cookie + own, body: "csrf=\(token)"))
        #expect(checked.status == 303 && checked.headers["location"] == "/sources/news?done=due", "\(checked)")
        try await waitUntil("the source fetched again") {
            server.requests(to: "/feed/1.xml").count > before
        }
        // The token is never printed.
        let logged = (try? String(contentsOf: watch.stderr, encoding: .utf8)) ?? ""
        #expect(!logged.contains("s3cret-token"))
    }

    /// A SIGHUP that adds a source and removes another: the pages, `/status` and the feeds show
    /// the new config at once, and the added source can be checked now.
    @Test func aReloadedConfigIsWhatThePagesShow() async throws {
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        func config(_ names: [String]) -> String {
            "state_dir: state\nlisten: { address: \"127.0.0.1:\(port)\" }\nsources:\n"
                + names.map { "  - { name: \($0), type: traffic, interval: 1h, tags: [t-\($0)] }\n" }.joined()
        }
        try fetchrun.write(config(["first", "gone"]), to: "sources.yaml")
        let watch = try fetchrun.start(["watch", "--for", "120s"])
        defer { kill(watch.pid, SIGKILL) }
        try await waitUntil("the endpoint") { MonitoringTests.get(port: port, "/healthz")?.status == 200 }
        #expect(MonitoringTests.get(port: port, "/sources/added")?.status == 404)

        try fetchrun.write(config(["first", "added"]), to: "sources.yaml")
        kill(watch.pid, SIGHUP)
        try await waitUntil("the reload") { MonitoringTests.get(port: port, "/sources/added")?.status == 200 }
        #expect(MonitoringTests.get(port: port, "/sources/gone")?.status == 404)
        let status = MonitoringTests.get(port: port, "/status")?.body ?? ""
        #expect(status.contains(#""source":"added""#) && !status.contains(#""source":"gone""#), "\(status)")
        #expect(MonitoringTests.get(port: port, "/feeds/sources/added.atom")?.status == 200)
        #expect(MonitoringTests.get(port: port, "/feeds/tags/t-added.json")?.status == 200)
        #expect(MonitoringTests.get(port: port, "/feeds/tags/t-gone.json")?.status == 404)
        let page = try #require(MonitoringTests.get(port: port, "/sources/added"))
        let token = try #require(Self.formToken(page.body))
        let checked = MonitoringTests.request(
            port: port, method: "POST", path: "/sources/added/check", headers: [("Origin", "http://127.0.0.1:\(port)")], body: "csrf=\(token)"
        )
        #expect(checked?.status == 303 && checked?.headers["location"]?.hasPrefix("/sources/added?done=") == true, "\(String(describing: checked))")
    }

    @Test func retryMakesGivenUpDeliveriesDueAndReadOnlyAndOffRefuseWhatTheySay() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        func config(_ dashboard: String) -> String {
            """
            state_dir: state
            listen: { address: "127.0.0.1:\(port)", dashboard: \(dashboard) }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))", interval: 1h }
            outputs:
              - { name: picky, type: webhook, url: "\(server.url("/picky-receiver/Zweite"))", give_up_attempts: 1, give_up_after: 1ms }
            """
        }
        try fetchrun.write(config("on"), to: "sources.yaml")
        server.serve("news.xml", body: HistoryTests.feed([("1", "Erste")]))
        _ = try await fetchrun.run([])
        server.serve("news.xml", body: HistoryTests.feed([("2", "Zweite"), ("1", "Erste")]))
        // Refused at its first attempt, and given up at once (one attempt, 1 ms of age: less than the attempt takes).
        _ = try await fetchrun.run([])

        let watch = try fetchrun.start(["watch", "--for", "120s"])
        try await waitUntil("the endpoint") { MonitoringTests.get(port: port, "/healthz")?.status == 200 }
        let outputs = try #require(MonitoringTests.request(port: port, path: "/outputs"))
        #expect(outputs.body.contains("/outputs/picky/retry") && outputs.body.contains("Zweite"), "\(outputs.body)")
        let token = try #require(Self.formToken(outputs.body))
        let own = [("Origin", "http://127.0.0.1:\(port)")]
        let before = server.requests(to: "/picky-receiver/Zweite").count
        let retried = try #require(MonitoringTests.request(port: port, method: "POST", path: "/outputs/picky/retry", headers: own, body: "csrf=\(token)"))
        #expect(retried.status == 303 && retried.headers["location"] == "/outputs?done=retried&count=1", "\(retried)")
        try await waitUntil("the delivery tried again") { server.requests(to: "/picky-receiver/Zweite").count > before }
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()

        // read_only: the pages, no forms, and the actions refused.
        try fetchrun.write(config("read_only"), to: "sources.yaml")
        let readOnly = try fetchrun.start(["watch", "--for", "120s"])
        try await waitUntil("the endpoint") { MonitoringTests.get(port: port, "/healthz")?.status == 200 }
        let page = try #require(MonitoringTests.request(port: port, path: "/sources/news"))
        #expect(page.status == 200 && !page.body.contains("<form method=\"post\""))
        #expect(MonitoringTests.request(port: port, method: "POST", path: "/sources/news/check", headers: own, body: "csrf=\(token)")?.status == 403)
        kill(readOnly.pid, SIGTERM)
        await readOnly.waitForExit()

        // off: no pages at all; the rest of the endpoint as before.
        try fetchrun.write(config("off"), to: "sources.yaml")
        let off = try fetchrun.start(["watch", "--for", "120s"])
        defer { kill(off.pid, SIGKILL) }
        try await waitUntil("the endpoint") { MonitoringTests.get(port: port, "/healthz")?.status == 200 }
        #expect(MonitoringTests.request(port: port, path: "/")?.status == 404)
        #expect(MonitoringTests.request(port: port, path: "/login")?.status == 404)
        #expect(MonitoringTests.request(port: port, path: "/feeds/all.atom")?.status == 200)
    }
}
