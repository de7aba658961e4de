import Foundation
import Testing
import TestSupport
import FixtureServer

/// Workers sharing state in a real PostgreSQL: leases, a late result, reloads, a lost database.
/// One at a time: each starts a PostgreSQL and workers of its own.
@Suite(.serialized) struct WorkerTests: ScriptedPlugins {
    @Test func aFailureMessageWithANulByteIsRecordedAndHarmsNoOtherSource() async throws {
        let postgres = try await PostgresServer.start()
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // PostgreSQL's text refuses NUL; commits go in batches, so one message with a NUL must
        // neither fail nor take the other sources' records with it. A 1 s interval spreads the
        // first round over a second (an hour's, over ten); soonest due first, every source's
        // first fetch comes before any second one.
        try script(fetchrun, "nul.sh", "printf 'broken\\000 plugin' >&2\nexit 3")
        var config = """
            state: "\(postgres.url)"
            defaults: { interval: 1s }
            sources:
              - { name: hostile, type: exec, command: [./nul.sh] }

            """
        for index in 0..<20 { config += "  - { name: s\(index), type: rss, url: \"\(server.url("/feed/\(index).xml?items=2"))\" }\n" }
        try fetchrun.write(config, to: "sources.yaml")
        let worker = try await fetchrun.run(["worker", "--fetches", "21"], timeout: .seconds(60))
        #expect(worker.status == 0, "\(worker.stderr)")
        let status = try events(try await fetchrun.run(["status", "--format", "json"]).stdout)
        #expect(status.filter { $0["health"] as? String == "ok" }.count == 20, "\(status)")
        let hostile = try #require(status.first { $0["source"] as? String == "hostile" })
        let failure = hostile["last_error"] as? [String: Any]
        // Kept as it was said (escaped inside the state document), as state.db keeps it.
        #expect((failure?["message"] as? String)?.contains("broken\u{0} plugin") == true, "\(hostile)")
        postgres.stop()
    }

    @Test func sighupSyncsTheReloadedConfigAndABrokenOneKeepsTheOld() async throws {
        let postgres = try await PostgresServer.start()
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        func config(_ names: [String], keep: Int = 100) -> String {
            "state: \"\(postgres.url)\"\ndefaults: { interval: 1s, keep: \(keep) }\nsources:\n" + names.map { "  - { name: \($0), type: rss, url: \"\(server.url("/feed/\($0.utf8.first!).xml"))\" }\n" }.joined()
        }
        func requested(_ name: String) -> Int { server.requests(to: "/feed/\(name.utf8.first!).xml").count }
        try fetchrun.write(config(["a"]), to: "sources.yaml")
        let worker = try fetchrun.start(["worker", "--lease", "3s"])
        defer { worker.process.signal(SIGKILL) }
        func stderr() -> String { (try? String(contentsOf: worker.stderr, encoding: .utf8)) ?? "" }
        try await waitUntil("a fetched") { requested("a") > 0 }

        try fetchrun.write(config(["a", "b"]), to: "sources.yaml")
        kill(worker.pid, SIGHUP)
        try await waitUntil("b fetched after the reload") { requested("b") > 0 }
        #expect(stderr().contains("added b, removed none, changed none; outputs: none"), "\(stderr())")

        // A broken config is not applied, and the worker goes on with the one it has.
        try fetchrun.write("state: \"\(postgres.url)\"\nsources:\n  - { name: broken, type: nope }\n", to: "sources.yaml")
        kill(worker.pid, SIGHUP)
        try await waitUntil("the broken config reported") { stderr().contains("still working with the previous config") }
        let before = requested("b")
        try await waitUntil("b fetched again") { requested("b") > before }

        // A source taken out is retired in PostgreSQL: no worker fetches it any more. One whose
        // settings changed is said to have changed.
        try fetchrun.write(config(["b"], keep: 50), to: "sources.yaml")
        kill(worker.pid, SIGHUP)
        try await waitUntil("a retired") { try postgres.query("SELECT retired FROM fetchrun_sources WHERE name = 'a'") == ["t"] }
        try await waitUntil("the last reload reported") { stderr().contains("added none, removed a, changed b") }

        kill(worker.pid, SIGTERM)
        await worker.waitForExit(timeout: .seconds(30))
        #expect(worker.process.terminationStatus == 0, "\(stderr())")
        postgres.stop()
    }

    @Test func aStoppingWorkerWhoseDatabaseIsGoneEndsAfterTheLeaseTime() async throws {
        let postgres = try await PostgresServer.start()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state: "\(postgres.url)"
            defaults: { interval: 1s }
            sources:
              - { name: t, type: traffic }
            """, to: "sources.yaml")
        let worker = try fetchrun.start(["worker", "--lease", "2s"])
        defer { worker.process.signal(SIGKILL) }
        try await waitUntil("the source's first fetch recorded") {
            (try? postgres.query("SELECT count(*) FROM fetchrun_sources WHERE state::jsonb ? 'last_success'")) == ["1"]
        }
        // Its database gone, then stopped: the stop cannot give its leases back, and must not
        // wait for PostgreSQL for ever (it did, before the bound) — at most about the lease time.
        postgres.stop()
        let stopped = ContinuousClock.now
        kill(worker.pid, SIGTERM)
        await worker.waitForExit(timeout: .seconds(30))
        #expect(ContinuousClock.now - stopped < .seconds(10), "stopped after \(ContinuousClock.now - stopped)")
        let stderr = try String(contentsOf: worker.stderr, encoding: .utf8)
        #expect(stderr.contains("they lapse after the lease time"), "\(stderr)")
    }

    @Test func aLeaseThatRanOutCannotOverwriteNewerState() async throws {
        let postgres = try await PostgresServer.start()
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // One slow source: the first worker's fetch outlives its 1 s lease (its heartbeat is
        // stopped by SIGSTOP), a second worker takes the source, and the first one's late result
        // is dropped.
        try fetchrun.write("""
            state: "\(postgres.url)"
            defaults: { interval: 1h }
            sources:
              - { name: slow, type: rss, url: "\(server.url("/feed/1.xml?latency=2500ms"))", deadline: 10s }
            """, to: "sources.yaml")
        let first = try fetchrun.start(["worker", "--lease", "1s"])
        guard try await waitUntil("the first worker's request", { !server.requests.isEmpty }) else {
            kill(first.pid, SIGKILL)
            Issue.record("the worker never fetched: \((try? String(contentsOf: first.stderr, encoding: .utf8)) ?? "")")
            return
        }
        kill(first.pid, SIGSTOP)
        // The stopped worker's 1 s lease lapses on PostgreSQL's clock, as PostgreSQL says.
        try await waitUntil("the stopped worker's lease to lapse") {
            (try? postgres.query("SELECT lease_until < now() FROM fetchrun_sources WHERE name = 'slow'")) == ["t"]
        }
        let second = try await fetchrun.run(["worker", "--lease", "5s", "--fetches", "1"], timeout: .seconds(30))
        #expect(second.status == 0, "\(second.stderr)")
        let token = try postgres.query("SELECT lease_token, state::jsonb->>'last_outcome' FROM fetchrun_sources WHERE name = 'slow'")
        kill(first.pid, SIGCONT)
        // The late worker tries its commit, is refused, and says so.
        try await waitUntil("the late worker's refused commit", timeout: .seconds(30)) {
            ((try? String(contentsOf: first.stderr, encoding: .utf8)) ?? "").contains("its lease ran out before the fetch was recorded")
        }
        kill(first.pid, SIGTERM)
        await first.waitForExit(timeout: .seconds(30))
        // The second worker's record stands: the token it completed with is still the row's.
        #expect(try postgres.query("SELECT lease_token, state::jsonb->>'last_outcome' FROM fetchrun_sources WHERE name = 'slow'") == token)
        #expect(token.first?.hasPrefix("2|") == true, "\(token)")
        let show = try await fetchrun.run(["show", "slow"])
        #expect(show.status == 0 && show.stdout.contains("Fixture"), "\(show.stderr)")
    }
}
