import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// The sources table: the config synced in, leases handed out, completions written back,
/// and what `status` and `show` read.
extension ClusterState {
    /// Makes the table hold the config's sources: new ones due soon (spread over up to ten
    /// seconds by a hash of the name, so a fleet's first round does not start at one instant),
    /// changed ones (another fingerprint) due now, missing ones retired.
    public func syncSources(_ sources: [SourceConfig], now: Date = Date()) async throws {
        let scheduled = sources.filter { $0.enabled && $0.settings.interval != .never }
        let names = scheduled.map(\.name)
        let fingerprints = scheduled.map(\.fingerprint)
        let readsSnapshot = scheduled.map(\.adapter.readsPreviousSnapshot)
        let dues = scheduled.map { source -> Date in
            guard case .every(let interval) = source.settings.interval else { return now }
            let spread = max(1, min(interval.milliseconds, 10_000))
            return now.addingTimeInterval(Double(Item.fnv1a(source.name) % UInt64(spread)) / 1000)
        }
        try await run {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("""
                    INSERT INTO fetchrun_sources (name, fingerprint, due_at, reads_snapshot)
                    SELECT * FROM unnest(\(names)::text[], \(fingerprints)::text[], \(dues)::timestamptz[], \(readsSnapshot)::boolean[])
                    ON CONFLICT (name) DO UPDATE SET
                        retired = false,
                        reads_snapshot = EXCLUDED.reads_snapshot,
                        due_at = CASE WHEN fetchrun_sources.fingerprint <> EXCLUDED.fingerprint OR fetchrun_sources.retired
                                      THEN least(fetchrun_sources.due_at, EXCLUDED.due_at) ELSE fetchrun_sources.due_at END,
                        fingerprint = EXCLUDED.fingerprint
                    """, logger: logger)
                try await connection.query("UPDATE fetchrun_sources SET retired = true WHERE NOT retired AND NOT (name = ANY(\(names)::text[]))", logger: logger)
            }
        }
    }

    /// Leases up to `limit` due sources for `ttl`, soonest due first, skipping rows another
    /// worker is leasing at this moment.
    public func leaseDue(limit: Int, ttl: Duration) async throws -> [LeasedSource] {
        let ttlMilliseconds = ttl.milliseconds
        return try await run {
            var leased: [LeasedSource] = []
            let rows = try await client.query("""
                WITH due AS (
                    SELECT name FROM fetchrun_sources
                    WHERE NOT retired AND due_at <= now() AND (lease_until IS NULL OR lease_until < now())
                    ORDER BY due_at LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE fetchrun_sources s
                SET lease_owner = \(workerID), lease_until = now() + \(ttlMilliseconds) * interval '1 millisecond', lease_token = s.lease_token + 1
                FROM due WHERE s.name = due.name
                RETURNING s.name, s.lease_token, s.etag, s.last_modified, s.body_hash, s.current_interval_ms, s.consecutive_failures, s.failing_since,
                          s.item_count, s.snapshot IS NOT NULL, CASE WHEN s.reads_snapshot THEN s.snapshot END
                """, logger: logger)
            for try await (name, token, etag, lastModified, bodyHash, interval, failures, since, items, hasSnapshot, snapshot) in rows.decode((String, Int64, String?, String?, String?, Int64?, Int32, Date?, Int32, Bool, String?).self) {
                leased.append(LeasedSource(
                    name: name, token: token,
                    validators: etag == nil && lastModified == nil ? nil : HTTPValidators(etag: etag, lastModified: lastModified),
                    bodyHash: bodyHash, currentInterval: interval.map { .milliseconds($0) },
                    consecutiveFailures: Int(failures), failingSince: since, itemCount: Int(items), hasSnapshot: hasSnapshot, snapshot: snapshot
                ))
            }
            return leased
        }
    }

    /// Writes fetches' outcomes, snapshots, next due times and outbox rows in one statement —
    /// each only if its lease still holds (same token, same owner). Returns the lease token
    /// written, by source name, for those whose lease held; for the others (a lease lapsed and
    /// another worker took the source) nothing was written. One statement is one transaction:
    /// a source's state and its outbox rows are written together or not at all.
    /// - Throws: ``ClusterStateError`` when the statement fails; then nothing was written.
    public func complete(_ completions: [Completion]) async throws -> [String: Int64] {
        guard !completions.isEmpty else { return [:] }
        let now = Date()
        var sources = JSONWriter(capacity: 256 * completions.count)
        var outbox = JSONWriter()
        // Snapshots and payloads are JSON themselves: they go as text arrays beside the records
        // (matched by position) rather than quoted a second time inside them.
        var snapshots: [String] = []
        var payloads: [String] = []
        sources.beginArray()
        outbox.beginArray()
        for completion in completions {
            let report = completion.report
            let failure = report.outcome.failure
            sources.beginObject()
            sources.field("name", completion.name)
            sources.field("token", completion.token)
            sources.field("outcome", report.outcome.name)
            sources.field("succeeded", failure == nil)
            sources.field("failure_kind", failure?.kind.rawValue)
            sources.field("failure_message", failure.map { Self.storable($0.message) })
            sources.field("item_count", Int64(Int32(clamping: report.totalItems)))
            sources.field("interval_ms", completion.currentInterval?.milliseconds)
            sources.field("etag", completion.validators?.etag.map(Self.storable))
            sources.field("last_modified", completion.validators?.lastModified.map(Self.storable))
            sources.field("body_hash", completion.bodyHash)
            sources.field("i", snapshots.count + 1)
            snapshots.append(completion.snapshot ?? "")  // "" (never a snapshot) keeps the stored one
            sources.field("due_ms", Int64(completion.dueAt.timeIntervalSince1970 * 1000))
            sources.endObject()
            for (output, delivery) in completion.deliveries {
                outbox.beginObject()
                outbox.field("completion", completion.name)
                outbox.field("token", completion.token)
                outbox.field("n", payloads.count + 1)
                outbox.field("output", output)
                outbox.field("delivery_id", delivery.id)
                outbox.field("source", delivery.source)
                outbox.field("kind", delivery.kind.rawValue)
                outbox.endObject()
                payloads.append(delivery.payload)
            }
        }
        sources.endArray()
        outbox.endArray()
        let sourcesJSON = sources.string, outboxJSON = outbox.string
        return try await run {
            let rows = try await client.query("""
                WITH c AS (
                    SELECT c.*, nullif(stored.snapshot, '') AS snapshot
                    FROM jsonb_to_recordset(\(sourcesJSON)::jsonb) AS c(
                        i bigint, name text, token bigint, outcome text, succeeded boolean, failure_kind text, failure_message text,
                        item_count integer, interval_ms bigint, etag text, last_modified text, body_hash text, due_ms bigint)
                    JOIN unnest(\(snapshots)::text[]) WITH ORDINALITY AS stored(snapshot, i) ON stored.i = c.i
                ),
                updated AS (
                    UPDATE fetchrun_sources s SET
                        last_fetch_at = \(now), last_outcome = c.outcome,
                        last_success_at = CASE WHEN c.succeeded THEN \(now) ELSE s.last_success_at END,
                        consecutive_failures = CASE WHEN c.succeeded THEN 0 ELSE s.consecutive_failures + 1 END,
                        failing_since = CASE WHEN c.succeeded THEN NULL ELSE coalesce(s.failing_since, \(now)) END,
                        last_error_kind = coalesce(c.failure_kind, s.last_error_kind),
                        last_error_message = coalesce(c.failure_message, s.last_error_message),
                        last_error_at = CASE WHEN c.succeeded THEN s.last_error_at ELSE \(now) END,
                        item_count = CASE WHEN c.succeeded THEN c.item_count ELSE s.item_count END,
                        current_interval_ms = c.interval_ms,
                        etag = CASE WHEN c.succeeded THEN coalesce(c.etag, s.etag) ELSE s.etag END,
                        last_modified = CASE WHEN c.succeeded THEN coalesce(c.last_modified, s.last_modified) ELSE s.last_modified END,
                        body_hash = CASE WHEN c.succeeded THEN coalesce(c.body_hash, s.body_hash) ELSE s.body_hash END,
                        snapshot = coalesce(c.snapshot, s.snapshot),
                        due_at = to_timestamp(c.due_ms / 1000.0),
                        lease_owner = NULL, lease_until = NULL
                    FROM c WHERE s.name = c.name AND s.lease_token = c.token AND s.lease_owner = \(workerID)
                    RETURNING s.name, s.lease_token
                ),
                queued AS (
                    INSERT INTO fetchrun_outbox (output, delivery_id, source, kind, payload)
                    SELECT o.output, o.delivery_id, o.source, o.kind, p.payload
                    FROM jsonb_to_recordset(\(outboxJSON)::jsonb) AS o(completion text, token bigint, n bigint, output text, delivery_id text, source text, kind text)
                    JOIN unnest(\(payloads)::text[]) WITH ORDINALITY AS p(payload, n) ON p.n = o.n
                    WHERE (o.completion, o.token) IN (SELECT name, lease_token FROM updated)
                    ORDER BY o.n
                    ON CONFLICT (output, delivery_id) DO NOTHING
                )
                SELECT name, lease_token FROM updated
                """, logger: logger)
            var written: [String: Int64] = [:]
            for try await (name, token) in rows.decode((String, Int64).self) { written[name] = token }
            return written
        }
    }

    /// PostgreSQL's text holds no NUL (and jsonb refuses `\u0000`), but a plugin's message or a
    /// server's header may carry one: it is stored as U+FFFD rather than failing the write.
    static func storable(_ text: String) -> String {
        text.utf8.contains(0) ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
    }

    /// ``complete(_:)-([Completion])`` for one fetch: `false` when its lease was lost.
    public func complete(_ completion: Completion) async throws -> Bool {
        try await complete([completion])[completion.name] == completion.token
    }


    // MARK: Reading

    /// Every source's state, as `status` shows it.
    public func states() async throws -> [String: SourceState] {
        try await run {
            var states: [String: SourceState] = [:]
            let rows = try await client.query("""
                SELECT name, last_fetch_at, last_outcome, last_success_at, consecutive_failures, failing_since,
                       last_error_kind, last_error_message, last_error_at, due_at, current_interval_ms, item_count
                FROM fetchrun_sources WHERE NOT retired
                """, logger: logger)
            for try await (name, lastFetch, outcome, lastSuccess, failures, since, kind, message, errorAt, due, interval, items) in rows.decode((String, Date?, String?, Date?, Int32, Date?, String?, String?, Date?, Date, Int64?, Int32).self) {
                var state = SourceState(name: name)
                state.lastFetch = lastFetch
                state.lastOutcome = outcome
                state.lastSuccess = lastSuccess
                state.consecutiveFailures = Int(failures)
                state.failingSince = since
                if let kind = kind.flatMap(FetchFailure.Kind.init(rawValue:)), let errorAt {
                    state.lastError = .init(kind: kind, message: message ?? "", at: errorAt)
                }
                state.nextDue = due
                state.currentInterval = interval.map { .milliseconds($0) }
                state.itemCount = Int(items)
                states[name] = state
            }
            return states
        }
    }

    /// A source's snapshot, as its last successful fetch left it.
    public func snapshot(of name: String) async throws -> Snapshot? {
        guard let text = try await storedSnapshot(of: name) else { return nil }
        do {
            return try Snapshot(json: Data(text.utf8))
        } catch {
            throw ClusterStateError("the snapshot of '\(name)' in PostgreSQL is not readable: \(error)")
        }
    }

    /// A source's snapshot JSON as stored, undecoded.
    public func storedSnapshot(of name: String) async throws -> String? {
        try await run {
            var text: String?
            for try await snapshot in try await client.query("SELECT snapshot FROM fetchrun_sources WHERE name = \(name)", logger: logger).decode(String?.self) {
                text = snapshot
            }
            return text
        }
    }
}
