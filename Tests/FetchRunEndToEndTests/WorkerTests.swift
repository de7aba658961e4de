import Foundation
import Testing
import FixtureServer

/// Workers sharing state in a real PostgreSQL: leases, failover, the shared outbox.
@Suite(.serialized) struct WorkerTests {
    @Test func threeWorkersShareSixHundredSourcesAndTakeOverFromOneKilled() async throws {
        let postgres = try PostgresFixture()
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // 600 sources every 2 s is 300 fetches a second, which three debug-built workers, the
        // fixture server and PostgreSQL keep up with on two cores; 2,000 (1,000 a second) they
        // do not (measured: ~360 a second), and the schedule check would then measure the machine.
        let sourceCount = 600
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
        try await Task.sleep(for: .seconds(6))
        let killedAt = ContinuousClock.now
        kill(workers[0].pid, SIGKILL)
        await workers[0].waitForExit()
        try await Task.sleep(for: .seconds(8))
        let stoppedAt = ContinuousClock.now
        for worker in workers.dropFirst() { kill(worker.pid, SIGTERM) }
        for worker in workers.dropFirst() { await worker.waitForExit(timeout: .seconds(60)) }

        // From the server's log, not from fetchrun's: when each source was asked for.
        var arrivals: [String: [ContinuousClock.Instant]] = [:]
        for request in server.requests where request.path.hasPrefix("/feed/") { arrivals[request.path, default: []].append(request.receivedAt) }
        #expect(arrivals.count == sourceCount, "\(arrivals.count) of \(sourceCount) sources fetched")
        var tightest: Duration = .seconds(1000)
        for times in arrivals.values {
            let sorted = times.sorted()
            for (earlier, later) in zip(sorted, sorted.dropFirst()) { tightest = min(tightest, later - earlier) }
        }
        // Two fetches of one source at once would arrive together; the interval is 2 s (±5 %).
        #expect(tightest > .seconds(1), "two fetches of one source \(tightest) apart")
        // On schedule: about 7 rounds in 14 s (a kill costs its sources up to 3 s); and after the
        // kill, once its leases lapsed, every source was fetched again by the two left.
        let counts = arrivals.values.map(\.count)
        let histogram = Dictionary(grouping: counts, by: { $0 }).mapValues(\.count).sorted { $0.key < $1.key }
        #expect((counts.min() ?? 0) >= 5, "a source was fetched only \(counts.min() ?? 0) times; fetches per source: \(histogram)")
        let takenOver = arrivals.values.filter { times in times.contains { $0 > killedAt + .seconds(3.5) && $0 < stoppedAt } }.count
        #expect(takenOver == sourceCount, "\(takenOver) of \(sourceCount) sources fetched after the kill")

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

    @Test func aLeaseThatRanOutCannotOverwriteNewerState() async throws {
        let postgres = try PostgresFixture()
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
        let end = ContinuousClock.now + .seconds(30)
        while server.requests.isEmpty, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        guard !server.requests.isEmpty else {
            kill(first.pid, SIGKILL)
            Issue.record("the worker never fetched: \((try? String(contentsOf: first.stderr, encoding: .utf8)) ?? "")")
            return
        }
        kill(first.pid, SIGSTOP)
        try await Task.sleep(for: .milliseconds(1500))
        let second = try await fetchrun.run(["worker", "--lease", "5s", "--fetches", "1"], timeout: .seconds(30))
        #expect(second.status == 0, "\(second.stderr)")
        let token = try postgres.query("SELECT lease_token, last_outcome FROM fetchrun_sources WHERE name = 'slow'")
        kill(first.pid, SIGCONT)
        try await Task.sleep(for: .seconds(3))
        kill(first.pid, SIGTERM)
        await first.waitForExit(timeout: .seconds(30))
        // The second worker's record stands: the token it completed with is still the row's.
        #expect(try postgres.query("SELECT lease_token, last_outcome FROM fetchrun_sources WHERE name = 'slow'") == token)
        #expect(token.first?.hasPrefix("2|") == true, "\(token)")
        let show = try await fetchrun.run(["show", "slow"])
        #expect(show.status == 0 && show.stdout.contains("Fixture"), "\(show.stderr)")
    }
}
