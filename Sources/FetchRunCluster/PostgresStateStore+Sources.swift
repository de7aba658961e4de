import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// The sources table: the schedule synced in, leases handed out, commits written back, and
/// what `status` and `show` read.
extension PostgresStateStore {
    package func schedule(_ sources: [SourceConfig], now: Date) async throws(StateStoreError) -> ScheduleChange {
        try await run {
            try await client.withTransaction(logger: logger) { connection in
                // One plan at a time across workers: one made from rows another worker is
                // rewriting would put back due times its fetches have moved on since.
                try await connection.query("SELECT pg_advisory_xact_lock(7234062)", logger: logger)
                var known: [String: SchedulePlan.Known] = [:]
                let rows = try await connection.query("SELECT name, fingerprint, retired, due_at FROM fetchrun_sources FOR UPDATE", logger: logger)
                for try await (name, fingerprint, retired, due) in rows.decode((String, String, Bool, Date?).self) {
                    known[name] = (fingerprint: fingerprint, scheduled: !retired, due: due)
                }
                let plan = SchedulePlan(sources, known: known, now: now)
                let names = plan.rows.map(\.name), fingerprints = plan.rows.map(\.fingerprint)
                let dues = plan.rows.map(\.due), readsSnapshot = plan.rows.map(\.readsSnapshot)
                try await connection.query("""
                    INSERT INTO fetchrun_sources (name, fingerprint, due_at, reads_snapshot)
                    SELECT * FROM unnest(\(names)::text[], \(fingerprints)::text[], \(dues)::timestamptz[], \(readsSnapshot)::boolean[])
                    ON CONFLICT (name) DO UPDATE SET retired = false, fingerprint = EXCLUDED.fingerprint,
                        due_at = EXCLUDED.due_at, reads_snapshot = EXCLUDED.reads_snapshot
                    """, logger: logger)
                try await connection.query("UPDATE fetchrun_sources SET retired = true WHERE name = ANY(\(plan.retire)::text[])", logger: logger)
                return plan.change
            }
        }
    }

    private static let leaseColumns = "s.name, s.lease_token, s.state, s.due_at, s.snapshot IS NOT NULL, CASE WHEN s.reads_snapshot THEN s.snapshot END"

    private func leases(from rows: PostgresRowSequence) async throws -> [SourceLease] {
        var leased: [SourceLease] = []
        for try await (name, token, state, due, hasSnapshot, snapshot) in rows.decode((String, Int64, String, Date?, Bool, String?).self) {
            leased.append(SourceLease(
                name: name, token: token, state: SourceState(name: name, json: state, nextDue: due), hasSnapshot: hasSnapshot,
                snapshot: snapshot.map { Self.read($0, of: name) }
            ))
        }
        return leased
    }

    package func lease(_ name: String, until: Date) async throws(StateStoreError) -> LeaseAttempt {
        let ttl = milliseconds(until: until)
        return try await run {
            // A source no config scheduled yet (a `run` of it) gets a row that is leased by name only.
            try await client.query("INSERT INTO fetchrun_sources (name, fingerprint, retired) VALUES (\(name), '', true) ON CONFLICT (name) DO NOTHING", logger: logger)
            let rows = try await client.query("""
                UPDATE fetchrun_sources s SET lease_owner = \(workerID), lease_until = now() + \(ttl) * interval '1 millisecond', lease_token = s.lease_token + 1
                WHERE s.name = \(name) AND (s.lease_until IS NULL OR s.lease_until < now() OR s.lease_owner = \(workerID))
                RETURNING \(unescaped: Self.leaseColumns)
                """, logger: logger)
            if let taken = try await leases(from: rows).first { return .taken(taken) }
            var holder = "another worker"
            for try await owner in try await client.query("SELECT lease_owner FROM fetchrun_sources WHERE name = \(name)", logger: logger).decode(String?.self) {
                holder = owner.map { "worker \($0)" } ?? holder
            }
            return .held(by: holder)
        }
    }

    package func leaseDue(limit: Int, until: Date) async throws(StateStoreError) -> [SourceLease] {
        let ttl = milliseconds(until: until)
        return try await run {
            let rows = try await client.query("""
                WITH due AS (
                    SELECT name FROM fetchrun_sources
                    WHERE NOT retired AND due_at <= now() AND (lease_until IS NULL OR lease_until < now())
                    ORDER BY due_at LIMIT \(max(0, limit))
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE fetchrun_sources s
                SET lease_owner = \(workerID), lease_until = now() + \(ttl) * interval '1 millisecond', lease_token = s.lease_token + 1
                FROM due WHERE s.name = due.name
                RETURNING \(unescaped: Self.leaseColumns)
                """, logger: logger)
            return try await leases(from: rows)
        }
    }

    package func makeDue(_ name: String) async throws(StateStoreError) {
        _ = try await run {
            try await client.query("UPDATE fetchrun_sources SET due_at = LEAST(due_at, now()) WHERE name = \(name) AND NOT retired", logger: logger)
        }
    }

    package func release(_ lease: SourceLease) async throws(StateStoreError) {
        _ = try await run {
            try await client.query("""
                UPDATE fetchrun_sources SET lease_owner = NULL, lease_until = NULL
                WHERE name = \(lease.name) AND lease_owner = \(workerID) AND lease_token = \(lease.token)
                """, logger: logger)
        }
    }

    /// A lease's time as the milliseconds from now (on ``clock``) to `until`, for the server's clock.
    func milliseconds(until: Date) -> Int64 {
        Int64(max(0, min(until.timeIntervalSince(clock.date), 86_400 * 366)) * 1000)
    }

    /// Writes commits — state, due time, snapshot and outbox rows — in one statement, each only
    /// if its lease still holds (same token, same owner). One statement is one transaction: a
    /// source's state and its outbox rows are written together or not at all.
    /// - Returns: per commit, in order, whether its lease held and it was written.
    func complete(_ commits: [FetchCommit]) async throws -> [Bool] {
        guard !commits.isEmpty else { return [] }
        var sources = JSONWriter(capacity: 96 * commits.count)
        var outbox = JSONWriter()
        // States, snapshots and payloads are JSON themselves: they go as text arrays beside the
        // records that point at them, so PostgreSQL never parses or re-escapes them.
        var states: [String] = [], snapshots: [String] = [], payloads: [String] = []
        var history = JSONWriter(), records: [String] = []
        sources.beginArray()
        outbox.beginArray()
        history.beginArray()
        for commit in commits {
            states.append(commit.state.json)
            // "" (never a snapshot) keeps the stored one.
            snapshots.append(commit.snapshot.map { String(decoding: $0.jsonData(), as: UTF8.self) } ?? "")
            sources.beginObject()
            sources.field("i", states.count)
            sources.field("name", commit.lease.name)
            sources.field("token", commit.lease.token)
            sources.field("due_ms", commit.state.nextDue.map(SourceState.milliseconds))
            sources.endObject()
            for queued in commit.deliveries {
                payloads.append(queued.delivery.payload)
                outbox.beginObject()
                outbox.field("name", commit.lease.name)
                outbox.field("token", commit.lease.token)
                outbox.field("n", payloads.count)
                outbox.field("output", queued.output)
                outbox.field("delivery_id", queued.delivery.id)
                outbox.field("source", queued.delivery.source)
                outbox.field("kind", queued.delivery.kind.rawValue)
                outbox.endObject()
            }
            for record in commit.history.records {
                records.append(record.json)
                history.beginObject()
                history.field("name", commit.lease.name)
                history.field("token", commit.lease.token)
                history.field("n", records.count)
                history.field("id", Self.storable(record.id))
                history.field("source", Self.storable(record.source))
                history.field("kind", record.kind.rawValue)
                history.field("at_ms", SourceState.milliseconds(record.at))
                history.field("expires_ms", SourceState.milliseconds(commit.history.expiresAt))
                history.endObject()
            }
        }
        sources.endArray()
        outbox.endArray()
        history.endArray()
        let sourcesJSON = sources.string, outboxJSON = outbox.string, historyJSON = history.string
        let rows = try await client.query("""
            WITH c AS (
                SELECT c.name, c.token, c.due_ms, st.state, nullif(sn.snapshot, '') AS snapshot
                FROM jsonb_to_recordset(\(sourcesJSON)::jsonb) AS c(i bigint, name text, token bigint, due_ms bigint)
                JOIN unnest(\(states)::text[]) WITH ORDINALITY AS st(state, i) ON st.i = c.i
                JOIN unnest(\(snapshots)::text[]) WITH ORDINALITY AS sn(snapshot, i) ON sn.i = c.i
            ),
            updated AS (
                UPDATE fetchrun_sources s SET
                    state = c.state, snapshot = coalesce(c.snapshot, s.snapshot),
                    due_at = to_timestamp(c.due_ms / 1000.0), lease_owner = NULL, lease_until = NULL
                FROM c WHERE s.name = c.name AND s.lease_token = c.token AND s.lease_owner = \(workerID)
                RETURNING s.name, s.lease_token
            ),
            queued AS (
                INSERT INTO fetchrun_outbox (output, delivery_id, source, kind, payload)
                SELECT o.output, o.delivery_id, o.source, o.kind, p.payload
                FROM jsonb_to_recordset(\(outboxJSON)::jsonb) AS o(name text, token bigint, n bigint, output text, delivery_id text, source text, kind text)
                JOIN unnest(\(payloads)::text[]) WITH ORDINALITY AS p(payload, n) ON p.n = o.n
                WHERE (o.name, o.token) IN (SELECT name, lease_token FROM updated)
                ORDER BY o.n
                ON CONFLICT (output, delivery_id) DO NOTHING
            ),
            recorded AS (
                INSERT INTO fetchrun_history (id, source, kind, at, expires_at, record)
                SELECT h.id, h.source, h.kind, to_timestamp(h.at_ms / 1000.0), to_timestamp(h.expires_ms / 1000.0), r.record
                FROM jsonb_to_recordset(\(historyJSON)::jsonb) AS h(name text, token bigint, n bigint, id text, source text, kind text, at_ms bigint, expires_ms bigint)
                JOIN unnest(\(records)::text[]) WITH ORDINALITY AS r(record, n) ON r.n = h.n
                WHERE (h.name, h.token) IN (SELECT name, lease_token FROM updated)
                ORDER BY h.n
                ON CONFLICT (id) DO NOTHING
            )
            SELECT name, lease_token FROM updated
            """, logger: logger)
        var written: [String: Int64] = [:]
        for try await (name, token) in rows.decode((String, Int64).self) { written[name] = token }
        let results = commits.map { written[$0.lease.name] == $0.lease.token }
        let pruning = zip(commits, results).filter { commit, written in
            written && !commit.history.records.isEmpty
                && historyKeep.wrote(commit.history.records.count, for: commit.lease.name, keep: commit.history.keep)
        }.map(\.0)
        try await keepNewestHistory(of: pruning)
        return results
    }

    /// Keeps each source's newest ``HistoryWrite/keep`` records, for the commits whose sources
    /// ``HistoryKeep`` says are due: a statement of its own, since a statement does not see the
    /// rows its own parts insert. Only older rows go, so running it late (or twice, from two
    /// workers) never loses a newer one.
    private func keepNewestHistory(of commits: [FetchCommit]) async throws {
        guard !commits.isEmpty else { return }
        let names = commits.map { Self.storable($0.lease.name) }, keeps = commits.map { Int64(max(1, $0.history.keep)) }
        try await client.query("""
            DELETE FROM fetchrun_history h
            USING unnest(\(names)::text[], \(keeps)::bigint[]) AS k(source, keep)
            WHERE h.source = k.source AND h.seq <= (
                SELECT seq FROM fetchrun_history WHERE source = k.source ORDER BY seq DESC OFFSET k.keep LIMIT 1)
            """, logger: logger)
    }

    // MARK: Reading

    package func states() async throws(StateStoreError) -> [String: SourceState] {
        try await run {
            var states: [SourceState] = []
            for try await (name, state, due) in try await client.query("SELECT name, state, due_at FROM fetchrun_sources", logger: logger).decode((String, String, Date?).self) {
                states.append(SourceState(name: name, json: state, nextDue: due))
            }
            return SourceState.byName(states)
        }
    }

    package func snapshot(of name: String, movingCorruptAside: Bool) async -> SnapshotRead {
        do {
            return try await run {
                var stored: String?
                for try await text in try await client.query("SELECT snapshot FROM fetchrun_sources WHERE name = \(name)", logger: logger).decode(String?.self) {
                    stored = text
                }
                return stored.map { Self.read($0, of: name) } ?? .missing
            }
        } catch {
            // Taking a past that could not be read for an empty one would send every item
            // again as new: the fetch fails instead, and is tried again when due.
            return .unavailable(reason: "its snapshot could not be read from PostgreSQL (\(error.reason))")
        }
    }

    /// A stored snapshot, decoded; an unreadable one is noted and read as none.
    static func read(_ text: String, of name: String) -> SnapshotRead {
        do {
            return .loaded(try Snapshot(json: Data(text.utf8)))
        } catch {
            return .corrupt(note: "the snapshot of '\(name)' in PostgreSQL was unreadable (\(error)); starting from an empty baseline")
        }
    }

    package func forget(_ name: String) async throws(StateStoreError) -> String? {
        try await run {
            var hadSnapshot = false
            for try await has in try await client.query("DELETE FROM fetchrun_sources WHERE name = \(name) RETURNING snapshot IS NOT NULL", logger: logger).decode(Bool.self) {
                hadSnapshot = has
            }
            return hadSnapshot ? "the snapshot of '\(name)' in PostgreSQL" : nil
        }
    }
}
