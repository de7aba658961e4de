import Foundation
import Testing
import TestSupport

/// The endpoint of a worker whose PostgreSQL goes away: stopped, then frozen. Two PostgreSQL
/// servers and their workers are a load of their own, so this suite runs among the heavy ones
/// (the Makefile's HEAVY_SUITES), not beside the deadline tests.
@Suite struct MonitoringOnPostgreSQLTests {
    /// A worker serving on a free port, its state in a PostgreSQL server of its own, one
    /// `traffic` source a second, stopping by itself after `lifetime`.
    static func startWorkerOnPostgreSQL(for lifetime: String) async throws -> (postgres: PostgresServer, worker: FetchRunBinary.Running, port: UInt16) {
        let postgres = try await PostgresServer.start()
        let database = try postgres.createDatabase()
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        try fetchrun.write("state: \"\(database)\"\nsources:\n  - { name: t, type: traffic, interval: 1s }\n", to: "sources.yaml")
        return (postgres, try fetchrun.start(["worker", "--listen", "127.0.0.1:\(port)", "--for", lifetime]), port)
    }

    @Test func readyzFollowsPostgreSQL() async throws {
        let (postgres, worker, port) = try await Self.startWorkerOnPostgreSQL(for: "90s")
        defer { postgres.stop() }
        defer { kill(worker.pid, SIGKILL) }
        try await waitUntil("ready") { MonitoringTests.get(port: port, "/readyz")?.status == 200 }
        // Ready comes with the store's answer, a moment before the loop's first turn (the
        // sources are scheduled in PostgreSQL in between): alive is what the test holds to.
        try await waitUntil("alive") { MonitoringTests.get(port: port, "/healthz")?.status == 200 }
        try postgres.suspend()
        try await waitUntil("not ready while PostgreSQL is stopped") { MonitoringTests.get(port: port, "/readyz")?.status == 503 }
        let down = try #require(MonitoringTests.get(port: port, "/readyz"))
        #expect(down.body.contains("the state store does not answer"), "\(down.body)")
        // Alive all the while, past the 10 s after which a loop that has not turned is stalled:
        // it turns, its rounds bounded, and only cannot reach its store. Real time: the
        // worker's own stall bound, in a process the test cannot give a clock.
        try await Task.sleep(for: .seconds(12))
        let alive = MonitoringTests.get(port: port, "/healthz")
        #expect(alive?.status == 200, "\(alive?.body ?? "no answer")")
        try postgres.resume()
        try await waitUntil("ready again", timeout: .seconds(60)) { MonitoringTests.get(port: port, "/readyz")?.status == 200 }
    }

    @Test func aFrozenPostgreSQLCostsEachProbeItsLimitAndNoMore() async throws {
        let (postgres, worker, port) = try await Self.startWorkerOnPostgreSQL(for: "240s")
        defer { postgres.stop() }
        defer { kill(worker.pid, SIGKILL) }
        try await waitUntil("ready") { MonitoringTests.get(port: port, "/readyz")?.status == 200 }
        // Hung, not gone: its connections stay open and a query sent to it never returns, so
        // only the endpoint's own limit can end a probe's wait.
        let frozen = try postgres.freeze()
        defer { postgres.thaw(frozen) }
        for probe in 1...3 {
            let asked = ContinuousClock.now
            let ready = MonitoringTests.get(port: port, "/readyz", timeout: 30)
            #expect(ready?.status == 503, "probe \(probe): \(ready.map { "\($0.status) \($0.body)" } ?? "no answer in 30 s")")
            #expect(ready?.body.contains("the state store does not answer: no answer within 3s") == true, "\(ready?.body ?? "")")
            // 3 s for the first (the check it started), none for the next (the same check).
            #expect(ContinuousClock.now - asked < .seconds(20), "probe \(probe)")
        }
        let metrics = MonitoringTests.get(port: port, "/metrics", timeout: 30)
        #expect(metrics?.status == 200 && metrics?.body.contains("fetchrun_build_info") == true, "\(metrics?.status ?? 0)")
        let status = MonitoringTests.get(port: port, "/status", timeout: 30)
        #expect(status?.status == 503 && status?.body.contains("no answer within 10s") == true, "\(status.map { "\($0.status) \($0.body)" } ?? "no answer in 30 s")")
        // Back: the next probes ask anew (at the latest 30 s after the check that was lost,
        // 60 s for /status), and PostgreSQL answers.
        postgres.thaw(frozen)
        do {
            try await waitUntil("ready again", timeout: .seconds(90)) { MonitoringTests.get(port: port, "/readyz")?.status == 200 }
            try await waitUntil("status again", timeout: .seconds(90)) { MonitoringTests.get(port: port, "/status", timeout: 15)?.status == 200 }
        } catch {
            // What the worker said, and whether it is still there: an endpoint that does not
            // come back is the worker's story, not the probe's.
            let said = (try? String(contentsOf: worker.stderr, encoding: .utf8)) ?? ""
            Issue.record("\(worker.process.isRunning ? "the worker runs" : "the worker ended with \(worker.process.terminationStatus)"); its last words: \(said.suffix(2_000))")
            throw error
        }
    }
}
