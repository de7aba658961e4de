import Foundation
import Testing
import TestSupport
import FixtureServer

/// Workers sharing state in a real PostgreSQL: leases, failover, the shared outbox.
@Suite(.serialized) struct WorkerTests: ScriptedPlugins {
    @Test func threeWorkersShareTwoThousandSourcesAndTakeOverFromOneKilled() async throws {
        let postgres = try PostgresServer()
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // 2,000 sources every 2 s: 1,000 fetches a second from three debug-built workers, with
        // the fixture server and PostgreSQL on the same two cores.
        let sourceCount = 2000
        var config = """
            state: "\(postgres.url)"
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))", batch: 200 }
            defaults: { interval: 2s, max_interval: 2s, send_baseline: true }
            sources:

            """
        for index in 0..<sourceCount { config += "  - { name: s\(index), type: rss, url: \"\(server.url("/feed/\(index).xml?items=3"))\" }\n" }
        try fetchrun.write(config, to: "sources.yaml")

        let workers = try (0..<3).map { _ in try fetchrun.start(["worker", "--lease", "3s", "--format", "json"]) }
        defer { for worker in workers { worker.process.signal(SIGKILL) } }
        // The first round is every source's baseline (the fixture server makes 2,000 feeds, the
        // workers parse them and write snapshots and outbox rows): slower than the steady state
        // the schedule is about, so the schedule is watched from when every source has one.
        let warmed = try await waitUntil("every source's baseline", timeout: .seconds(90)) {
            (try? postgres.query("SELECT count(*) FROM fetchrun_sources WHERE state::jsonb ? 'last_success'")) == ["\(sourceCount)"]
        }
        let watchedFrom = ContinuousClock.now
        // Real time: three worker processes share PostgreSQL's schedule, on its clock.
        try await Task.sleep(for: .seconds(6))
        let killedAt = ContinuousClock.now
        kill(workers[0].pid, SIGKILL)
        await workers[0].waitForExit()
        // Longer than the bound on a gap across the kill (7 s) past the lease time: a source
        // fetched within that bound is fetched in this window too, so the two checks agree.
        try await Task.sleep(for: .seconds(11))
        let stoppedAt = ContinuousClock.now
        for worker in workers.dropFirst() { kill(worker.pid, SIGTERM) }
        for worker in workers.dropFirst() { await worker.waitForExit(timeout: .seconds(60)) }
        #expect(warmed, "the first round of 2,000 baselines took over 90 s")

        // From the server's log, not from fetchrun's: when each source was asked for.
        var arrivals: [String: [ContinuousClock.Instant]] = [:]
        for request in server.requests where request.path.hasPrefix("/feed/") { arrivals[request.path, default: []].append(request.receivedAt) }
        #expect(arrivals.count == sourceCount, "\(arrivals.count) of \(sourceCount) sources fetched")
        var tightest: Duration = .seconds(1000)
        var longestWhileAllRan: Duration = .zero, longestAcrossTheKill: Duration = .zero
        var fetchedAfterTheKill = 0
        for times in arrivals.values {
            let sorted = times.sorted()
            for (earlier, later) in zip(sorted, sorted.dropFirst()) { tightest = min(tightest, later - earlier) }
            // The gaps around the watched windows count too: a source last fetched just before
            // the window and not again until well into it was late.
            let watched = [watchedFrom] + sorted.filter { $0 > watchedFrom && $0 < stoppedAt } + [stoppedAt]
            for (earlier, later) in zip(watched, watched.dropFirst()) {
                if later <= killedAt { longestWhileAllRan = max(longestWhileAllRan, later - earlier) }
                longestAcrossTheKill = max(longestAcrossTheKill, later - earlier)
            }
            if sorted.contains(where: { $0 > killedAt + .seconds(3) && $0 < stoppedAt }) { fetchedAfterTheKill += 1 }
        }
        print("workers' schedule: longest gap \(longestWhileAllRan) while all three ran, \(longestAcrossTheKill) across the kill; tightest \(tightest)")
        // Two fetches of one source at once would arrive together; the interval is 2 s (±5 %).
        #expect(tightest > .seconds(1), "two fetches of one source \(tightest) apart")
        // On schedule: every 2 s (±5 %) while three workers ran — the next due time counts from
        // the fetch's end, and an idle worker looks for due sources every 250 ms, so the longest
        // gap measured here was 2.4–2.7 s; the bound leaves room for a loaded machine. Across the
        // kill, a source of the killed worker waits for its lease (3 s) to lapse, then is
        // fetched by one of the two left (measured: 5.2 s at most).
        #expect(longestWhileAllRan < .seconds(3.5), "a source waited \(longestWhileAllRan) for its next fetch while all three workers ran")
        #expect(longestAcrossTheKill < .seconds(7), "a source waited \(longestAcrossTheKill) for its next fetch across the kill")
        #expect(fetchedAfterTheKill == sourceCount, "\(fetchedAfterTheKill) of \(sourceCount) sources fetched once the killed worker's leases lapsed")

        // Every item is in the outbox once: 3 per source, the baseline sent.
        let rows = try postgres.query("SELECT count(*), count(DISTINCT delivery_id) FROM fetchrun_outbox")
        #expect(rows == ["\(sourceCount * 3)|\(sourceCount * 3)"], "\(rows)")
        // Sent by the workers from the shared outbox, or still waiting there: none lost.
        let outbox = try events(try await fetchrun.run(["outputs", "--format", "json"]).stdout)
        let chat = try #require(outbox.first { $0["output"] as? String == "chat" })
        #expect((chat["pending"] as? Int ?? 0) + (chat["sent"] as? Int ?? 0) == sourceCount * 3, "\(chat)")
        #expect((chat["sent"] as? Int ?? 0) > 0, "\(chat)")
        let workersLeft = try await fetchrun.run(["workers"])
        #expect(workersLeft.status == 0, "\(workersLeft.stderr)")
        let status = try await fetchrun.run(["status", "--format", "json"])
        #expect(try events(status.stdout).filter { $0["health"] as? String == "ok" }.count == sourceCount, "\(status.stderr)")
        postgres.stop()
    }

    @Test func aFailureMessageWithANulByteIsRecordedAndHarmsNoOtherSource() async throws {
        let postgres = try PostgresServer()
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // PostgreSQL's text refuses NUL; commits go in batches, so one message with a NUL must
        // neither fail nor take the other sources' records with it.
        try script(fetchrun, "nul.sh", "printf 'broken\\000 plugin' >&2\nexit 3")
        var config = """
            state: "\(postgres.url)"
            defaults: { interval: 1h }
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
        let postgres = try PostgresServer()
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
        let postgres = try PostgresServer()
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
        let postgres = try PostgresServer()
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
