import Foundation
import Testing
import FixtureServer
import TestSupport

/// `render: browser` with the built binary and Debian's real Chromium: pages a script builds,
/// pages that misbehave (never settle, loop, alert, open popups, navigate away, run out of
/// memory), the source's headers and cookies, blocking, screenshots, a browser killed in the
/// middle of a fetch, and a browser that runs elsewhere. After every command, no Chromium of
/// the test's is left.
///
/// Each test points `TMPDIR` at a folder of its own, where fetchrun makes its browsers'
/// profiles: a process whose command line names that folder is one of the test's.
///
/// `make test` runs this suite on its own, after the others: a Chromium takes most of a core to
/// start and more to render, and on two cores the suites that bound times missed beside it.
@Suite struct BrowserRenderTests {
    static let chromium = "/usr/bin/chromium"

    struct Setup {
        let server: FixtureServer
        let fetchrun: FetchRunBinary
        let temporary: String
        var environment: [String: String] { ["TMPDIR": temporary] }
    }

    static func setUp() throws -> Setup {
        guard FileManager.default.isExecutableFile(atPath: chromium) else {
            throw FixtureError("no \(chromium): `make test` installs Debian's chromium")
        }
        let fetchrun = try FetchRunBinary()
        let temporary = fetchrun.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        return Setup(server: try FixtureServer(), fetchrun: fetchrun, temporary: temporary)
    }

    /// A `browser: { command: }` that writes the pid of each browser it starts to `pids` (one
    /// a line; `exec` keeps the pid), then is Debian's chromium.
    /// - Returns: the `command:` list, as YAML.
    static func loggingBrowser(in fetchrun: FetchRunBinary, arguments: [String] = []) throws -> String {
        try fetchrun.write("#!/bin/sh\necho $$ >> \"\(fetchrun.path("pids"))\"\nexec \(chromium) \"$@\"\n", to: "browser.sh")
        chmod(fetchrun.path("browser.sh"), 0o755)
        return "[" + ([fetchrun.path("browser.sh")] + arguments).map { "\"\($0)\"" }.joined(separator: ", ") + "]"
    }

    /// The pids `loggingBrowser` wrote, first started first.
    static func browserPids(in fetchrun: FetchRunBinary) -> [Int32] {
        ((try? fetchrun.read("pids")) ?? "").split(separator: "\n").compactMap { Int32($0) }
    }

    /// The processes whose command line mentions `text`.
    static func processes(mentioning text: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: data, as: UTF8.self).contains(text)
        }
    }

    /// No Chromium of the test's runs (a browser that is being stopped gets a moment).
    static func expectNoBrowserLeft(_ setup: Setup, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await waitUntil("no browser of the test's left", timeout: .seconds(10), sourceLocation: sourceLocation) {
            processes(mentioning: setup.temporary).isEmpty
        }
        let profiles = ((try? FileManager.default.contentsOfDirectory(atPath: setup.temporary)) ?? []).filter { $0.hasPrefix("fetchrun-chromium-") }
        #expect(profiles.isEmpty, "profiles left: \(profiles)", sourceLocation: sourceLocation)
    }

    static func sourceEvents(_ output: String) throws -> [String: [String: Any]] {
        var bySource: [String: [String: Any]] = [:]
        for event in try events(output) where event["event"] as? String == "source" {
            if let name = event["source"] as? String { bySource[name] = event }
        }
        return bySource
    }

    @Test func aRunRendersScriptBuiltPagesAndOutlastsPagesThatMisbehave() async throws {
        let setup = try Self.setUp()
        let (server, fetchrun) = (setup.server, setup.fetchrun)
        let other = try FixtureServer()
        func url(_ path: String) -> String { server.url(path) }
        try fetchrun.write("""
            state_dir: state
            browser: { tabs: 4 }
            defaults: { deadline: 30s }
            sources:
              - { name: built, type: page, url: "\(url("/js/list?items=3&v=Ωmega"))", render: browser, css: "#list" }
              - { name: plain, type: page, url: "\(url("/js/list?items=3"))", css: "h1" }
              - { name: never, type: page, url: "\(url("/js/never-settles"))", render: browser, css: "#list", deadline: 4s }
              - { name: waited, type: page, url: "\(url("/js/never-settles?items=4"))", render: browser, css: "#list", wait_for: "#list li:nth-child(4)", wait: 200ms }
              - { name: loop, type: page, url: "\(url("/js/loop"))", render: browser, css: "#before", deadline: 2s }
              - { name: alert, type: page, url: "\(url("/js/alert"))", render: browser, css: "#after" }
              - { name: popup, type: page, url: "\(url("/js/popup"))", render: browser, css: "#list" }
              - { name: moving, type: page, url: "\(url("/js/navigates"))", render: browser, css: "#list" }
              - { name: missing, type: page, url: "\(url("/js/status?code=404"))", render: browser }
              - { name: images, type: page, url: "\(url("/js/images?v=blocked"))", render: browser, css: "#list" }
              - { name: unblocked, type: page, url: "\(url("/js/images?v=unblocked"))", render: browser, css: "#list", block: [] }
              - name: headers
                type: page
                url: "\(url("/js/headers?other=\(other.port)"))"
                render: browser
                css: "p"
                headers: { X-Token: secret-\u{3b1} }
                cookies: { session: "s-1" }
                user_agent: "fetchrun-test/1"
              - { name: hostile, type: page, url: "\(url("/js/hostile"))", render: browser, css: "#out" }
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["run", "--format", "json"], environment: setup.environment)
        #expect(result.status == 2, "\(result.stderr)")
        // Nothing keeps the run past its longest deadline, and the loop and the page that never
        // settles are cut off at theirs (a loaded machine gets slack).
        #expect(result.duration < .seconds(40), "\(result.duration)")
        let sources = try Self.sourceEvents(result.stdout)
        for name in ["never", "loop"] {
            #expect((sources[name]?["duration_ms"] as? Int ?? .max) < 6000, "\(sources[name] ?? [:])")
        }
        let items = try events(result.stdout).filter { $0["event"] as? String == "item" }
        func summary(_ source: String) -> String {
            items.first { $0["source"] as? String == source }.map { "\($0["title"] ?? "") \($0["summary"] ?? "")" } ?? ""
        }
        func failure(_ source: String) -> String { (sources[source]?["failure"] as? [String: Any])?["message"] as? String ?? "" }

        // What the script built is there when rendered; the plain fetch of the same page has the heading only.
        #expect(summary("built").contains("Story 1 (Ωmega)") && summary("built").contains("Story 3 (Ωmega)"), "\(summary("built"))")
        #expect(sources["plain"]?["outcome"] as? String == "newData" && !summary("plain").contains("Story"), "\(summary("plain"))")
        #expect(summary("waited").contains("Story 4 (1)"), "\(summary("waited")) \(failure("waited"))")
        #expect(sources["never"]?["outcome"] as? String == "failed" && failure("never").contains("deadline exceeded after 4s"), "\(failure("never"))")
        #expect(sources["loop"]?["outcome"] as? String == "failed" && failure("loop").contains("deadline exceeded after 2s"), "\(failure("loop"))")
        #expect(summary("alert").contains("after the alert"), "\(summary("alert")) \(failure("alert"))")
        let alertNotes = (sources["alert"]?["notes"] as? [String] ?? []).joined(separator: "; ")
        #expect(alertNotes.contains("a dialog dismissed: 'Hello \\x07 from the page'") && alertNotes.contains("'Sure?'"), "\(alertNotes)")
        #expect(summary("popup").contains("Story 1 (1)") && !summary("popup").contains("popup"), "\(summary("popup"))")
        #expect(summary("moving").contains("Story 1 (moved)"), "\(summary("moving")) \(failure("moving"))")
        #expect(failure("missing").contains("HTTP 404") && failure("missing").contains("rendered in the browser"), "\(failure("missing"))")

        // Images, fonts and media are not asked for unless `block: []` says so.
        let assets = server.requests.filter { $0.path.hasPrefix("/files/asset-") }
        #expect(!assets.contains { $0.headers["referer"]?.contains("v=blocked") == true }, "\(assets.map(\.path))")
        #expect(assets.contains { $0.path == "/files/asset-image.png" && $0.headers["referer"]?.contains("v=unblocked") == true }, "\(assets.map(\.path))")
        #expect((sources["images"]?["notes"] as? [String] ?? []).contains { $0.contains("blocked (block:)") })

        // The source's header, cookie and user agent reach the page's own origin; the header
        // does not reach another origin the page loads a script from.
        #expect(summary("headers").contains("secret-α") && summary("headers").contains("s-1") && summary("headers").contains("fetchrun-test/1"), "\(summary("headers"))")
        let elsewhere = other.requests.filter { $0.path == "/js/other-origin.js" }
        #expect(elsewhere.count == 1 && elsewhere.allSatisfy { $0.headers["x-token"] == nil }, "\(elsewhere.map(\.headers))")

        // A page's control characters never reach the terminal, and it cannot read a file.
        let shown = try await fetchrun.run(["show", "hostile"], environment: setup.environment)
        #expect(!shown.stdout.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" } && shown.stdout.contains("bell"), "\(shown.stdout.debugDescription)")
        #expect(!result.stdout.contains("root:x:0"))

        // test-source says what the browser saw.
        let tested = try await fetchrun.run(["test-source", "built"], environment: setup.environment)
        #expect(tested.status == 0 && tested.stdout.contains("rendered in the browser:") && tested.stdout.contains("Story 2 (Ωmega)"), "\(tested.stdout)\(tested.stderr)")
        let probed = try await fetchrun.run(["probe", "--render", "browser", url("/js/list?items=2&v=probed")], environment: setup.environment)
        #expect(probed.status == 0 && probed.stdout.contains("Story 2 (probed)") && probed.stdout.contains("render: \"browser\""), "\(probed.stdout)\(probed.stderr)")
        try await Self.expectNoBrowserLeft(setup)
    }

    /// The browser is started through `browser: { command: }` only when a source asks for it;
    /// a page that allocates until its tab dies (within a heap the command keeps small) fails
    /// saying so.
    @Test func noBrowserStartsUnlessASourceRendersAndAPageThatDiesIsReported() async throws {
        let setup = try Self.setUp()
        let (server, fetchrun) = (setup.server, setup.fetchrun)
        let command = try Self.loggingBrowser(in: fetchrun, arguments: ["--js-flags=--max-old-space-size=64"])
        func config(rendered: Bool) -> String {
            """
            state_dir: state
            browser: { command: \(command) }
            sources:
              - { name: plain, type: page, url: "\(server.url("/js/list"))", css: h1 }
            \(rendered ? "  - { name: oom, type: page, url: \"\(server.url("/js/oom"))\", render: browser, deadline: 60s }" : "")
            """
        }
        try fetchrun.write(config(rendered: false), to: "sources.yaml")
        let plain = try await fetchrun.run(["run"], environment: setup.environment)
        #expect(plain.status == 0 && Self.browserPids(in: fetchrun).isEmpty, "\(plain.stderr)")

        try fetchrun.write(config(rendered: true), to: "sources.yaml")
        let rendered = try await fetchrun.run(["run", "--format", "json"], environment: setup.environment, timeout: .seconds(90))
        #expect(Self.browserPids(in: fetchrun).count == 1)
        let error = (try Self.sourceEvents(rendered.stdout)["oom"]?["failure"] as? [String: Any])?["message"] as? String ?? ""
        #expect(error.contains("the page's renderer crashed"), "\(error) \(rendered.stderr)")
        try await Self.expectNoBrowserLeft(setup)
    }

    /// A browser killed while it renders: the fetch fails saying so, the next one starts a new
    /// browser; the watch's stop leaves none behind.
    @Test func aBrowserKilledMidFetchIsStartedAgainForTheNextFetch() async throws {
        let setup = try Self.setUp()
        let (server, fetchrun) = (setup.server, setup.fetchrun)
        let command = try Self.loggingBrowser(in: fetchrun)
        try fetchrun.write("""
            state_dir: state
            browser: { command: \(command) }
            sources:
              - { name: slow, type: page, url: "\(server.url("/js/list?latency=2s"))", render: browser, css: "#list", interval: 1s, deadline: 20s }
            """, to: "sources.yaml")
        let watch = try fetchrun.start(["watch", "--for", "60s", "--format", "json"], environment: setup.environment)
        defer { kill(watch.pid, SIGKILL) }
        // The first page is asked for and answered 2 s later: the browser dies in between.
        try await waitUntil("the page asked for") { server.requests.contains { $0.path == "/js/list" } }
        let first = try #require(Self.browserPids(in: fetchrun).first)
        kill(-first, SIGKILL)
        try await waitUntil("a second browser and a rendered fetch", timeout: .seconds(45)) {
            let output = (try? String(contentsOf: watch.stdout, encoding: .utf8)) ?? ""
            return output.contains("the browser stopped during the fetch") && output.contains("Story 1 (1)")
        }
        let pids = Self.browserPids(in: fetchrun)
        #expect(pids.count == 2, "\(pids)")
        // Stopped while a page renders, the watch lets that fetch finish: the browser stops
        // after it, not under it.
        let asked = server.requests(to: "/js/list").count
        try await waitUntil("another fetch in flight") { server.requests(to: "/js/list").count > asked }
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()
        #expect(watch.process.terminationStatus == 0)
        let output = try String(contentsOf: watch.stdout, encoding: .utf8)
        #expect(output.components(separatedBy: "the browser stopped during the fetch").count == 2, "\(output)")
        try await Self.expectNoBrowserLeft(setup)
    }

    /// A browser that stops answering (stopped with SIGSTOP): the fetch fails at its deadline,
    /// and the next one starts a new browser; the frozen one is killed with its group.
    @Test func aBrowserThatStopsAnsweringIsReplaced() async throws {
        let setup = try Self.setUp()
        let (server, fetchrun) = (setup.server, setup.fetchrun)
        let command = try Self.loggingBrowser(in: fetchrun)
        try fetchrun.write("""
            state_dir: state
            browser: { command: \(command) }
            sources:
              - { name: page, type: page, url: "\(server.url("/js/list"))", render: browser, css: "#list", interval: 1s, deadline: 2s }
            """, to: "sources.yaml")
        let watch = try fetchrun.start(["watch", "--for", "60s", "--format", "json"], environment: setup.environment)
        defer { kill(watch.pid, SIGKILL) }
        func outcomes() -> [String] {
            let output = (try? String(contentsOf: watch.stdout, encoding: .utf8)) ?? ""
            return ((try? events(output)) ?? []).filter { $0["event"] as? String == "source" }.map { event in
                let message = (event["failure"] as? [String: Any])?["message"] as? String
                return message ?? (event["outcome"] as? String ?? "")
            }
        }
        try await waitUntil("a first rendered fetch") { outcomes().contains("newData") }
        let first = try #require(Self.browserPids(in: fetchrun).first)
        kill(-first, SIGSTOP)
        // Failed at its deadline, then rendered again by a second browser.
        try await waitUntil("a second browser and a rendered fetch", timeout: .seconds(45)) {
            let pids = Self.browserPids(in: fetchrun)
            let seen = outcomes()
            guard pids.count == 2, let failed = seen.lastIndex(of: "deadline exceeded after 2s") else { return false }
            return seen[failed...].contains("noData")
        }
        // The frozen browser is gone: the restart killed its group.
        try await waitUntil("the stopped browser killed") { kill(first, 0) != 0 }
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()
        try await Self.expectNoBrowserLeft(setup)
    }

    /// Each fetch starts from a fresh context — no cookies, no storage — unless the source says
    /// `keep_session: true`: then what the page stored is there at its next fetch.
    @Test func aSourceThatKeepsItsSessionFindsItsCookiesAndStorageAgain() async throws {
        let setup = try Self.setUp()
        let (server, fetchrun) = (setup.server, setup.fetchrun)
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: kept, type: page, url: "\(server.url("/js/visits"))", render: browser, css: "#visits", keep_session: true, interval: 1s }
              - { name: fresh, type: page, url: "\(server.url("/js/visits"))", render: browser, css: "#visits", interval: 1s }
            """, to: "sources.yaml")
        // Eight fetches between the two sources: `kept` needs three of them. Six were too few
        // once, in a clean-clone CI run with the other browser tests beside it (two of `kept`).
        let result = try await fetchrun.run(["watch", "--fetches", "8", "--format", "json"], environment: setup.environment)
        #expect(result.status == 0, "\(result.stderr)")
        // A first fetch's selection is an `item` event; each change of it, a `changed` one.
        let titles = try events(result.stdout).filter { ["item", "changed"].contains($0["event"] as? String) }.map { "\($0["source"] ?? ""): \($0["title"] ?? "")" }
        // Each fetch's outcome, to tell a failed fetch from one that did not come.
        let fetches = try events(result.stdout).filter { $0["event"] as? String == "source" }.map {
            "\($0["source"] ?? ""): \(($0["failure"] as? [String: Any])?["message"] as? String ?? ($0["outcome"] as? String ?? ""))"
        }
        #expect(titles.contains("kept: visit 3, stored 3"), "\(titles); fetches: \(fetches)")
        #expect(titles.filter { $0.hasPrefix("fresh:") } == ["fresh: visit 1, stored 1"], "\(titles)")
        try await Self.expectNoBrowserLeft(setup)
    }

    /// fetchrun killed outright (SIGKILL: no chance to stop anything) takes its browser with it.
    @Test func aBrowserDoesNotOutliveAKilledFetchrun() async throws {
        let setup = try Self.setUp()
        let (server, fetchrun) = (setup.server, setup.fetchrun)
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: never, type: page, url: "\(server.url("/js/never-settles"))", render: browser, deadline: 60s }
            """, to: "sources.yaml")
        let run = try fetchrun.start(["run"], environment: setup.environment)
        try await waitUntil("the page asked for") { server.requests.contains { $0.path == "/js/never-settles" } }
        #expect(!Self.processes(mentioning: setup.temporary).isEmpty)
        kill(run.pid, SIGKILL)
        await run.waitForExit()
        try await waitUntil("no browser of the test's left", timeout: .seconds(10)) { Self.processes(mentioning: setup.temporary).isEmpty }
    }

    /// `browser: { url: }`: a Chromium the test started with `--remote-debugging-port`; the
    /// page cannot reach its DevTools, and fetchrun leaves it running.
    @Test func aBrowserThatRunsElsewhereIsUsedAndLeftRunning() async throws {
        let setup = try Self.setUp()
        let (server, fetchrun) = (setup.server, setup.fetchrun)
        let profile = setup.temporary + "/remote-profile"
        let browser = try ChildProcess(
            executable: Self.chromium,
            arguments: ["--headless", "--no-sandbox", "--remote-debugging-port=0", "--remote-allow-origins=ws://127.0.0.1", "--user-data-dir=\(profile)", "about:blank"],
            environment: ProcessInfo.processInfo.environment, directory: setup.temporary, stderr: fetchrun.path("remote.log")
        )
        defer {
            browser.signal(SIGKILL)
            _ = browser.blockUntilExit(timeout: .seconds(10))
        }
        var port = ""
        try await waitUntil("the browser's DevTools address") {
            let log = (try? fetchrun.read("remote.log")) ?? ""
            guard let range = log.range(of: "DevTools listening on ws://127.0.0.1:") else { return false }
            port = String(log[range.upperBound...].prefix { $0.isNumber })
            return !port.isEmpty
        }
        try fetchrun.write("""
            state_dir: state
            browser: { url: "http://127.0.0.1:\(port)" }
            sources:
              - { name: built, type: page, url: "\(server.url("/js/list?items=2&v=remote"))", render: browser, css: "#list" }
              - { name: hostile, type: page, url: "\(server.url("/js/hostile?devtools=\(port)"))", render: browser, css: "#reached", wait: 1s }
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["run", "--format", "json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let items = try events(result.stdout).filter { $0["event"] as? String == "item" }
        #expect(items.contains { ($0["summary"] as? String ?? "").contains("Story 2 (remote)") || ($0["title"] as? String ?? "").contains("Story 1 (remote)") }, "\(items)")
        #expect(items.contains { $0["source"] as? String == "hostile" && $0["title"] as? String == "nothing" }, "\(items)")
        #expect(browser.isRunning)
    }

    /// `screenshot: true`: a PNG of the selection's element with each change, named in its history
    /// record; `notify_when` on a rendered price, sent once — a watch on state.db, and a
    /// worker on PostgreSQL.
    @Test(arguments: [false, true]) func aChangeKeepsItsScreenshotAndAConditionOnARenderedPriceIsSentOnce(onPostgres: Bool) async throws {
        let setup = try Self.setUp()
        let (server, fetchrun) = (setup.server, setup.fetchrun)
        let state = onPostgres ? "state: \"\(try await PostgresServer.shared().createDatabase())\"\nstate_dir: state" : "state_dir: state"
        try fetchrun.write("""
            \(state)
            outputs:
              - { name: hook, type: webhook, url: "\(server.url("/hook"))" }
            defaults: { interval: 1s }
            sources:
              - { name: shop, type: page, url: "\(server.url("/files/shop.html"))", render: browser, css: "#price", screenshot: true, notify_when: { value: { below: 1000 } } }
            """, to: "sources.yaml")
        func serve(_ price: String) {
            // The price is written by a script: nothing of it is in the HTML served.
            let page = "<html><body><p id=\"price\"></p><script>document.getElementById('price').textContent = 'Цена ' + (\(price)).toLocaleString('de-DE') + ',00 €';</script></body></html>"
            server.serve("shop.html", body: Array(page.utf8), contentType: "text/html; charset=utf-8")
        }
        // One watch (or worker) of four fetches, a second apart, with one browser: each price
        // is served once the fetch before has taken the last.
        let prices = ["1299", "1199", "999", "989"]
        serve(prices[0])
        let running = try fetchrun.start([onPostgres ? "worker" : "watch", "--fetches", "4"], environment: setup.environment)
        for (index, price) in prices.enumerated().dropFirst() {
            try await waitUntil("fetch \(index)") { server.requests(to: "/files/shop.html").count >= index }
            serve(price)
        }
        await running.waitForExit()
        #expect(running.process.terminationStatus == 0, "\((try? String(contentsOf: running.stderr, encoding: .utf8)) ?? "")")
        let sent = server.requests(to: "/hook").map { String(decoding: $0.body, as: UTF8.self) }
        #expect(sent.count == 1 && sent.first?.contains("999,00 €") == true, "\(sent)")
        let history = try await fetchrun.run(["history", "--format", "json"], environment: setup.environment)
        let changes = try events(history.stdout).filter { $0["kind"] as? String == "change" }
        #expect(changes.count == 3, "\(history.stdout)")
        let shown = try await fetchrun.run(["history", "shop"], environment: setup.environment)
        #expect(shown.stdout.components(separatedBy: "screenshot: screenshots/shop/").count == 4, "\(shown.stdout)")
        for change in changes {
            let name = try #require(change["screenshot"] as? String, "\(change)")
            let png = try #require(FileManager.default.contents(atPath: fetchrun.path("state/screenshots/\(name)")))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count < 4 << 20)
        }
        if !onPostgres {
            // The dashboard shows the newest change's screenshot and serves it.
            let port = try PostgresServer.freePort()
            let config = try fetchrun.read("sources.yaml")
            try fetchrun.write(config + "\nlisten: { address: \"127.0.0.1:\(port)\" }\n", to: "sources.yaml")
            let watch = try fetchrun.start(["watch", "--for", "60s"], environment: setup.environment)
            defer { kill(watch.pid, SIGKILL) }
            try await waitUntil("the endpoint") { MonitoringTests.get(port: port, "/healthz")?.status == 200 }
            let page = try #require(MonitoringTests.get(port: port, "/sources/shop"))
            let source = try #require(page.body.firstMatch(of: /<img src="(\/screenshots\/shop\/[0-9]+-[a-z0-9]+\.png)"/).map { String($0.1) }, "\(page.body)")
            let image = try #require(MonitoringTests.request(port: port, path: source))
            #expect(image.status == 200 && image.headers["content-type"] == "image/png" && image.body.contains("PNG"))
            #expect(MonitoringTests.request(port: port, path: "/screenshots/shop/..%2F..%2Fsources.yaml")?.status == 404)
            kill(watch.pid, SIGTERM)
            await watch.waitForExit()
        }
        try await Self.expectNoBrowserLeft(setup)
    }
}
