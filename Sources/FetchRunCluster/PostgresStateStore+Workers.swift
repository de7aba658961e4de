import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// A worker, as its heartbeats show it.
package struct WorkerInfo: Sendable {
    package var id: String
    package var host: String
    package var pid: Int
    package var startedAt: Date
    package var heartbeatAt: Date
    /// Sources it holds leases on now.
    package var holding: Int
}

/// Worker heartbeats: who is alive, and the leases each one keeps renewing.
extension PostgresStateStore {
    /// Records this worker as alive and extends the leases it holds to `until` — those with
    /// less than two thirds of that left: at a renewal every third of the lease time, a lease
    /// taken since the last one needs none yet, and most fetches end before their first.
    ///
    /// Rows that a commit is writing at this moment are skipped (they are being released):
    /// waiting for them while the commit waited for a row this update had locked would be a
    /// deadlock.
    package func renewLeases(until: Date) async throws(StateStoreError) {
        let ttl = milliseconds(until: until)
        let host = ProcessInfo.processInfo.hostName
        let pid = Int32(getpid())
        _ = try await run {
            try await client.query("""
                INSERT INTO fetchrun_workers (id, host, pid, started_at, heartbeat_at) VALUES (\(workerID), \(host), \(pid), \(startedAt), now())
                ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
                """, logger: logger)
            try await client.query("""
                UPDATE fetchrun_sources SET lease_until = now() + \(ttl) * interval '1 millisecond'
                WHERE name IN (
                    SELECT name FROM fetchrun_sources
                    WHERE lease_owner = \(workerID) AND lease_until > now()
                      AND lease_until < now() + \(ttl * 2 / 3) * interval '1 millisecond'
                    FOR UPDATE SKIP LOCKED
                )
                """, logger: logger)
        }
    }

    /// Gives back this worker's leases (a graceful stop) and its row.
    package func releaseAll() async throws(StateStoreError) {
        try await run {
            try await client.query("UPDATE fetchrun_sources SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = \(workerID)", logger: logger)
            try await client.query("DELETE FROM fetchrun_workers WHERE id = \(workerID)", logger: logger)
        }
    }

    /// Workers whose last heartbeat is within `alive`, with the leases each holds; older rows
    /// (dead workers) are removed.
    package func workers(alive: Duration = .seconds(60)) async throws(StateStoreError) -> [WorkerInfo] {
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
