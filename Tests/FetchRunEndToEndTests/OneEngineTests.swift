import Foundation
import Testing
import FixtureServer
import TestSupport

/// One engine, two stores: the same scenario — feeds that gain items, update one, answer 304,
/// fail, redirect permanently — through `fetchrun run` on state.db and through `fetchrun
/// worker` on PostgreSQL gives the same items, events, deliveries and `status` figures — and a
/// `watch` on the one and a `worker` on the other serve the same dashboard and feeds.
@Suite(.serialized) struct OneEngineTests {
    /// What a setup saw, with what differs by nature (times, ports) taken out.
    struct Seen: Equatable {
        /// Per round, the events of every fetch, sorted.
        var rounds: [[String]] = []
        /// Every delivery id each output took, sorted.
        var delivered: [String: [String]] = [:]
        var status: [String] = []
        /// What `fetchrun history` lists, sorted (a round's fetches end in either order).
        var history: [String] = []
        /// The entries of the `type: feed` output's file, sorted.
        var feed: [String] = []
        /// The dashboard's pages and the feed of all changes as the setup's `watch` or `worker`
        /// serves them, times, ports and form tokens taken out.
        var served: [String: String] = [:]
    }

    static let rounds = 4

    /// The feed `gains` serves before each round: items added, one title corrected.
    static func gains(_ round: Int) -> [UInt8] {
        let items: [(String, String)] = switch round {
        case 1: [("a", "A"), ("b", "B")]
        case 2: [("c", "C"), ("a", "A"), ("b", "B")]
        case 3: [("c", "C"), ("a", "A"), ("b", "B, corrected")]
        default: [("d", "D"), ("c", "C"), ("a", "A"), ("b", "B, corrected")]
        }
        let body = items.map { "<item><guid>\($0.0)</guid><title>\($0.1)</title><link>https://example.org/\($0.0)</link></item>" }.joined()
        return Array("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Gains</title>\(body)</channel></rss>".utf8)
    }

    /// The feed `long` serves: 500 items, more than `keep` (200); one more from round 2, in
    /// another order in round 3.
    static func long(_ round: Int) -> [UInt8] {
        var ids = Array((0..<(round == 1 ? 500 : 501)).reversed())
        if round == 3 { ids.reverse() }
        let body = ids.map { "<item><guid>l\($0)</guid><title>L\($0)</title></item>" }.joined()
        return Array("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Long</title>\(body)</channel></rss>".utf8)
    }

    /// The feeds that change between rounds, as they are before `round`.
    static func serve(round: Int, on server: FixtureServer) {
        server.serve("gains.xml", body: gains(round))
        server.serve("long.xml", body: long(round))
    }

    func config(_ server: FixtureServer, state: String) -> String {
        """
        \(state)
        outputs:
          - { name: hook, type: webhook, url: "\(server.url("/hook"))" }
          - { name: pager, type: webhook, url: "\(server.url("/pager"))", events: [failures], alert_after: 2 }
          - { name: changes, type: feed, path: changes.json, entries: 100, events: [items, failures] }
        defaults: { interval: 1h }
        sources:
          - { name: gains, type: rss, url: "\(server.url("/files/gains.xml"))", report_updates: true }
          - { name: cond, type: rss, url: "\(server.url("/conditional/3.xml"))" }
          - { name: broken, type: rss, url: "\(server.url("/status/500"))" }
          - { name: moved, type: rss, url: "\(server.url("/moved/5.xml"))" }
          - { name: long, type: rss, url: "\(server.url("/files/long.xml"))" }
        """
    }

    /// The events of one round, each reduced to what both setups must agree on.
    func normalized(_ output: String, server: FixtureServer) throws -> [String] {
        let base = server.url("/").dropLast()
        return try events(output).compactMap { event -> String? in
            func text(_ key: String) -> String { "\(event[key] ?? "-")".replacingOccurrences(of: base, with: "SERVER") }
            switch event["event"] as? String {
            case "item": return "item \(text("source")) \(text("id")) \(text("title")) \(text("source_title"))"
            case "updated": return "updated \(text("source")) \(text("id")) \(text("title"))"
            case "source":
                let failure = (event["failure"] as? [String: Any])?["kind"] as? String ?? "-"
                let notes = ((event["notes"] as? [String]) ?? []).sorted().joined(separator: "; ").replacingOccurrences(of: base, with: "SERVER")
                return "source \(text("source")) \(text("outcome")) new=\(text("new")) total=\(text("total")) updated=\(text("updated")) baseline=\(text("baseline")) failure=\(failure) notes=\(notes)"
            default: return nil  // run, delivery, summary: not per fetch
            }
        }.sorted()
    }

    func finish(_ fetchrun: FetchRunBinary, _ server: FixtureServer, into seen: inout Seen) async throws {
        // Whatever waits in the outbox is sent now, in either setup.
        let retried = try await fetchrun.run(["outputs", "--retry"])
        #expect(retried.status == 0, "\(retried.stderr)")
        for output in ["hook", "pager"] {
            seen.delivered[output] = try server.requests(to: "/\(output)").flatMap { request -> [String] in
                let body = try JSONSerialization.jsonObject(with: Data(request.body))
                let objects = body as? [[String: Any]] ?? [body as? [String: Any] ?? [:]]
                // An alert's id carries when the failures began: the same rule, another moment.
                return objects.map { ($0["delivery_id"] as? String ?? "?").replacingOccurrences(of: #"/\d+$"#, with: "/T", options: .regularExpression) }
            }.sorted()
        }
        let base = server.url("/").dropLast()
        let history = try await fetchrun.run(["history", "--format", "json", "--limit", "1000"])
        #expect(history.status == 0, "\(history.stderr)")
        seen.history = try events(history.stdout).map { event in
            // A failure's id carries when it began, a move's a hash of the server's address.
            let id = "\(event["id"] ?? "")".replacingOccurrences(of: #"/\d+$"#, with: "/T", options: .regularExpression)
                .replacingOccurrences(of: #"/moved/[0-9a-f]{16}$"#, with: "/moved/H", options: .regularExpression)
            return "\(event["kind"] ?? "") \(id) \(event["title"] ?? "-")".replacingOccurrences(of: base, with: "SERVER")
        }.sorted()
        let file = try JSONSerialization.jsonObject(with: Data(fetchrun.read("changes.json").utf8)) as? [String: Any]
        seen.feed = ((file?["items"] as? [[String: Any]]) ?? []).map { item in
            let id = "\(item["id"] ?? "")".replacingOccurrences(of: #"/\d+$"#, with: "/T", options: .regularExpression)
                .replacingOccurrences(of: #"/moved/[0-9a-f]{16}$"#, with: "/moved/H", options: .regularExpression)
            return "\(id) \(item["title"] ?? "-")".replacingOccurrences(of: base, with: "SERVER")
        }.sorted()
        let status = try await fetchrun.run(["status", "--format", "json"])
        seen.status = try events(status.stdout).map { event in
            let moved = event["moved"] as? [String: Any]
            return "\(event["source"] ?? "") \(event["health"] ?? "") failures=\(event["consecutive_failures"] ?? "") items=\(event["items"] ?? "") last=\(event["last_outcome"] ?? "") moved=\("\(moved?["to"] ?? "-")".replacingOccurrences(of: base, with: "SERVER"))x\(moved?["fetches"] ?? 0) error=\((event["last_error"] as? [String: Any])?["kind"] ?? "-")"
        }.sorted()
    }

    /// What `command` (`watch` or `worker`) serves on `--listen` once started on the setup's
    /// state: every source is due an hour later, so nothing is fetched meanwhile.
    func served(_ fetchrun: FetchRunBinary, _ server: FixtureServer, _ command: String) async throws -> [String: String] {
        let port = try PostgresServer.freePort()
        let running = try fetchrun.start([command, "--listen", "127.0.0.1:\(port)", "--for", "60s"])
        defer { kill(running.pid, SIGKILL) }
        try await waitUntil("the endpoint") { MonitoringTests.get(port: port, "/healthz")?.status == 200 }
        let base = server.url("/").dropLast()
        var pages: [String: String] = [:]
        for path in ["/", "/sources/gains", "/sources/broken", "/sources/moved", "/outputs", "/feeds/all.json"] {
            let answer = MonitoringTests.get(port: port, path)
            #expect(answer?.status == 200, "\(command) \(path)")
            var text = (answer?.body ?? "").replacingOccurrences(of: base, with: "SERVER").replacingOccurrences(of: "127.0.0.1:\(port)", with: "ENDPOINT")
            for (pattern, replacement) in [
                (#"<time[^>]*>[^<]*</time>( \([^)]*\))?"#, "TIME"), (#"name="csrf" value="[0-9a-f]+""#, "CSRF"),
                (#"<figure class="chart">[\s\S]*?</figure>"#, "CHART"), (#"/\d{10,}\b"#, "/T"), (#"/moved/[0-9a-f]{16}\b"#, "/moved/H"),
                (#"\b(in )?\d+ (s|min|h|d)( ago)?\b"#, "WHEN"), (#""date_published":"[^"]*""#, "DATE"), (#""date_modified":"[^"]*""#, "DATE"),
            ] {
                text = text.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
            }
            if path.hasPrefix("/feeds/") {
                // The entries, sorted: a round's fetches end in either order, and so do their records.
                let feed = try JSONSerialization.jsonObject(with: Data(text.replacingOccurrences(of: "DATE", with: #""date":"D""#).utf8)) as? [String: Any]
                #expect((feed?["items"] as? [Any])?.isEmpty == false, "\(command) \(path): \(text)")
                text = ((feed?["items"] as? [[String: Any]]) ?? []).map { item in
                    String(decoding: (try? JSONSerialization.data(withJSONObject: item, options: .sortedKeys)) ?? Data(), as: UTF8.self)
                }.sorted().joined(separator: "\n")
            }
            pages[path] = text
        }
        return pages
    }

    func runOnStateDB() async throws -> Seen {
        let server = try FixtureServer()
        defer { server.stop() }
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(config(server, state: "state_dir: state"), to: "sources.yaml")
        var seen = Seen()
        for round in 1...Self.rounds {
            Self.serve(round: round, on: server)
            let result = try await fetchrun.run(["run", "--format", "json"])
            #expect(result.status == 2, "round \(round): \(result.stderr)")
            seen.rounds.append(try normalized(result.stdout, server: server))
        }
        try await finish(fetchrun, server, into: &seen)
        seen.served = try await served(fetchrun, server, "watch")
        return seen
    }

    func workOnPostgreSQL() async throws -> Seen {
        let postgres = try await PostgresServer.start()
        defer { postgres.stop() }
        let server = try FixtureServer()
        defer { server.stop() }
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(config(server, state: "state: \"\(postgres.url)\""), to: "sources.yaml")
        var seen = Seen()
        for round in 1...Self.rounds {
            Self.serve(round: round, on: server)
            // The hour between two rounds, passed at once: every source is due (the first round's
            // are, within the ten seconds a new schedule spreads them over).
            if round > 1 { _ = try postgres.query("UPDATE fetchrun_sources SET due_at = now()") }
            let result = try await fetchrun.run(["worker", "--format", "json", "--fetches", "5"], timeout: .seconds(90))
            #expect(result.status == 0, "round \(round): \(result.stderr)")
            seen.rounds.append(try normalized(result.stdout, server: server))
        }
        try await finish(fetchrun, server, into: &seen)
        seen.served = try await served(fetchrun, server, "worker")
        return seen
    }

    @Test func runOnStateDBAndAWorkerOnPostgreSQLSeeTheSameScenarioAlike() async throws {
        let run = try await runOnStateDB()
        let worker = try await workOnPostgreSQL()
        #expect(run.rounds.count == Self.rounds && worker.rounds.count == Self.rounds)
        for (round, (byRun, byWorker)) in zip(run.rounds, worker.rounds).enumerated() {
            #expect(byRun == byWorker, "round \(round + 1): run \(byRun)\nworker \(byWorker)")
        }
        #expect(run.delivered == worker.delivered)
        #expect(run.status == worker.status)
        #expect(run.history == worker.history, "run \(run.history)\nworker \(worker.history)")
        #expect(run.feed == worker.feed, "run \(run.feed)\nworker \(worker.feed)")
        // The same dashboard and feeds, whichever store and command serve them.
        #expect(run.served.count == 6)
        for (path, page) in run.served.sorted(by: { $0.key < $1.key }) {
            #expect(page == worker.served[path], "\(path): watch on state.db\n\(page)\nworker on PostgreSQL\n\(worker.served[path] ?? "-")")
        }
        #expect(run.served["/sources/gains"]?.contains(#"<article class="record item""#) == true)
        // The feed file lists what the history holds.
        #expect(run.feed.count == run.history.count && run.feed.contains("urn:fetchrun:change:gains/item/d [gains] D"), "\(run.feed)")
        // And the scenario did what it says: new items sent once, the baseline not, one alert,
        // an update reported, the redirect hinted.
        #expect(run.delivered == ["hook": ["gains/c", "gains/d", "long/l500"], "pager": ["broken/failing/T"]])
        // A feed longer than `keep` that gains one item has one new item, whatever its order.
        #expect(run.rounds[1].contains("source long newData new=1 total=501 updated=- baseline=- failure=- notes="))
        #expect(run.rounds[2].contains("source long noData new=0 total=501 updated=- baseline=- failure=- notes="))
        #expect(run.rounds[2].contains("updated gains b B, corrected"))
        #expect(run.rounds[3].contains { $0.hasPrefix("source moved noData") && $0.contains("moved permanently to SERVER/feed/5.xml (4 fetches in a row)") })
        #expect(run.status.contains("broken failing failures=4 items=0 last=failed moved=-x0 error=httpStatus"))
        // The history: the items that were new (not the baselines), the failure once, the move
        // once it was worth a hint.
        #expect(run.history.filter { !$0.hasPrefix("failing") && !$0.hasPrefix("moved") } == ["item gains/item/c C", "item gains/item/d D", "item long/item/l500 L500"], "\(run.history)")
        #expect(run.history.contains("failing broken/failing/T failing: HTTP 500 from SERVER/status/500"), "\(run.history)")
        #expect(run.history.contains("moved moved/moved/H moved permanently to SERVER/feed/5.xml"), "\(run.history)")
        #expect(run.history.count == 5, "\(run.history)")
    }
}
