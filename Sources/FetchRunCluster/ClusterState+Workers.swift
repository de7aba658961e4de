import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// Worker heartbeats: who is alive, and the leases each one keeps renewing.
extension ClusterState {
    /// Records this worker as alive and extends the leases it holds by `ttl` — those with less
    /// than two thirds of it left: at a heartbeat every third of `ttl`, a lease taken since the
    /// last one needs no renewal yet, and most fetches end before their first.
    ///
    /// Rows that a completion is writing at this moment are skipped (they are being released):
    /// waiting for them while the completion waited for a row this update had locked would be
    /// a deadlock.
    public func heartbeat(startedAt: Date, renewingFor ttl: Duration) async throws {
        let ttlMilliseconds = ttl.milliseconds
        let host = ProcessInfo.processInfo.hostName
        let pid = Int32(getpid())
        try await run {
            try await client.query("""
                INSERT INTO fetchrun_workers (id, host, pid, started_at, heartbeat_at) VALUES (\(workerID), \(host), \(pid), \(startedAt), now())
                ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
                """, logger: logger)
            try await client.query("""
                UPDATE fetchrun_sources SET lease_until = now() + \(ttlMilliseconds) * interval '1 millisecond'
                WHERE name IN (
                    SELECT name FROM fetchrun_sources
                    WHERE lease_owner = \(workerID) AND lease_until > now()
                      AND lease_until < now() + \(ttlMilliseconds * 2 / 3) * interval '1 millisecond'
                    FOR UPDATE SKIP LOCKED
                )
                """, logger: logger)
        }
    }

    /// Gives back this worker's leases (a graceful stop) and its row.
    public func leave() async throws {
        try await run {
            try await client.query("UPDATE fetchrun_sources SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = \(workerID)", logger: logger)
            try await client.query("DELETE FROM fetchrun_workers WHERE id = \(workerID)", logger: logger)
        }
    }

    /// Workers whose last heartbeat is within `alive`, with the leases each holds; older rows
    /// (dead workers) are removed.
    public func workers(alive: Duration = .seconds(60)) async throws -> [WorkerInfo] {
        let aliveMilliseconds = alive.milliseconds
        return try await run {
            try await client.query("DELETE FROM fetchrun_workers WHERE heartbeat_at < now() - \(aliveMilliseconds) * interval '1 millisecond'", logger: logger)
            var workers: [WorkerInfo] = []
            let rows = try await client.query("""
                SELECT w.id, w.host, w.pid, w.started_at, w.heartbeat_at,
                       (SELECT count(*) FROM fetchrun_sources s WHERE s.lease_owner = w.id AND s.lease_until > now())
                FROM fetchrun_workers w ORDER BY w.started_at
                """, logger: logger)
            for try await (id, host, pid, started, heartbeat, holding) in rows.decode((String, String, Int32, Date, Date, Int64).self) {
                workers.append(WorkerInfo(id: id, host: host, pid: Int(pid), startedAt: started, heartbeatAt: heartbeat, holding: Int(holding)))
            }
            return workers
        }
    }
}
