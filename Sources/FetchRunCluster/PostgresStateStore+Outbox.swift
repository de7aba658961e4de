import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// The shared outbox: the same contract as `state.db`'s (``OutboxStore``), so that
/// ``OutboxDelivery`` sends from either.
extension PostgresStateStore {
    package func claimDue(for output: String, limit: Int, at now: Date, dueBy: Date?, after: Int64) async throws(StateStoreError) -> [PendingDelivery] {
        let due = dueBy ?? now
        return try await run {
            var claimed: [PendingDelivery] = []
            let rows = try await client.query("""
                WITH due AS (
                    SELECT id FROM fetchrun_outbox
                    WHERE output = \(output) AND delivered_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= \(due)
                      AND (claim_until IS NULL OR claim_until < now() OR claim_owner = \(workerID)) AND id > \(after)
                    ORDER BY id LIMIT \(max(1, limit))
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE fetchrun_outbox o SET claim_owner = \(workerID), claim_until = now() + interval '5 minutes'
                FROM due WHERE o.id = due.id
                RETURNING \(unescaped: Self.pendingColumns("o."))
                """, logger: logger)
            for try await row in rows.decode(PendingRow.self) {
                if let pending = Self.pending(row) { claimed.append(pending) }
            }
            return claimed.sorted { $0.row < $1.row }
        }
    }

    package func markDelivered(_ rows: [Int64], at now: Date) async throws(StateStoreError) {
        _ = try await run {
            try await client.query("UPDATE fetchrun_outbox SET delivered_at = \(now), claim_owner = NULL, claim_until = NULL WHERE id = ANY(\(rows)::bigint[])", logger: logger)
        }
    }

    package func markFailed(_ rows: [(row: Int64, retryAt: Date?)], error message: String, at now: Date) async throws(StateStoreError) {
        let text = Self.storable(String(message.prefix(2000)))
        let ids = rows.map(\.row), next = rows.map { $0.retryAt ?? now }, givenUp = rows.map { $0.retryAt == nil }
        _ = try await run {
            try await client.query("""
                UPDATE fetchrun_outbox o SET attempts = o.attempts + 1, last_error = \(text), next_attempt_at = f.next,
                    given_up_at = CASE WHEN f.given_up THEN \(now)::timestamptz END, claim_owner = NULL, claim_until = NULL
                FROM unnest(\(ids)::bigint[], \(next)::timestamptz[], \(givenUp)::boolean[]) AS f(id, next, given_up)
                WHERE o.id = f.id
                """, logger: logger)
        }
    }

    package func pruneDelivered(before date: Date) async throws(StateStoreError) -> Int {
        try await run {
            var count = 0
            for try await _ in try await client.query("DELETE FROM fetchrun_outbox WHERE delivered_at < \(date) RETURNING id", logger: logger).decode(Int64.self) { count += 1 }
            return count
        }
    }

    package func nextDeliveryDue(for outputs: [String]) async throws(StateStoreError) -> Date? {
        try await run {
            var soonest: Date?
            for try await due in try await client.query("SELECT min(next_attempt_at) FROM fetchrun_outbox WHERE delivered_at IS NULL AND given_up_at IS NULL AND output = ANY(\(outputs)::text[])", logger: logger).decode(Date?.self) {
                soonest = due
            }
            return soonest
        }
    }

    package func oldestUndelivered(for output: String) async throws(StateStoreError) -> Date? {
        try await run {
            var oldest: Date?
            for try await created in try await client.query("SELECT min(created_at) FROM fetchrun_outbox WHERE delivered_at IS NULL AND given_up_at IS NULL AND output = \(output)", logger: logger).decode(Date?.self) {
                oldest = created
            }
            return oldest
        }
    }

    package func holdOutput(_ output: String, until date: Date, reason: String) async throws(StateStoreError) {
        let text = Self.storable(String(reason.prefix(2000)))
        _ = try await run {
            try await client.query("""
                INSERT INTO fetchrun_output_holds (output, not_before, reason) VALUES (\(output), \(date), \(text))
                ON CONFLICT (output) DO UPDATE SET not_before = GREATEST(fetchrun_output_holds.not_before, EXCLUDED.not_before), reason = EXCLUDED.reason
                """, logger: logger)
        }
    }

    package func outputHolds() async throws(StateStoreError) -> [String: OutputHold] {
        try await run {
            var holds: [String: OutputHold] = [:]
            for try await (output, notBefore, reason) in try await client.query("SELECT output, not_before, reason FROM fetchrun_output_holds", logger: logger).decode((String, Date, String).self) {
                holds[output] = OutputHold(notBefore: notBefore, reason: reason)
            }
            return holds
        }
    }

    package func releaseHolds(output: String?) async throws(StateStoreError) {
        _ = try await run {
            try await client.query("DELETE FROM fetchrun_output_holds WHERE \(output)::text IS NULL OR output = \(output)", logger: logger)
        }
    }

    package func pendingDeliveries() async throws(StateStoreError) -> [PendingDelivery] {
        try await run {
            var rows: [PendingDelivery] = []
            let result = try await client.query("""
                SELECT \(unescaped: Self.pendingColumns("")) FROM fetchrun_outbox WHERE delivered_at IS NULL ORDER BY id
                """, logger: logger)
            for try await row in result.decode(PendingRow.self) {
                if let pending = Self.pending(row) { rows.append(pending) }
            }
            return rows
        }
    }

    package func deliveredCounts() async throws(StateStoreError) -> [String: Int] {
        try await countsByOutput("SELECT output, count(*) FROM fetchrun_outbox WHERE delivered_at IS NOT NULL GROUP BY output")
    }

    package func pendingCounts() async throws(StateStoreError) -> [String: Int] {
        try await countsByOutput("SELECT output, count(*) FROM fetchrun_outbox WHERE delivered_at IS NULL AND given_up_at IS NULL GROUP BY output")
    }

    /// The rows of `query` (an output, a count) as a dictionary.
    private func countsByOutput(_ query: PostgresQuery) async throws(StateStoreError) -> [String: Int] {
        try await run {
            var counts: [String: Int] = [:]
            for try await (output, count) in try await client.query(query, logger: logger).decode((String, Int64).self) {
                counts[output] = Int(count)
            }
            return counts
        }
    }

    package func retryNow(output: String?, givenUp: Bool, at now: Date) async throws(StateStoreError) -> Int {
        try await run {
            var count = 0
            let rows = try await client.query("""
                UPDATE fetchrun_outbox SET next_attempt_at = \(now),
                    attempts = CASE WHEN given_up_at IS NULL THEN attempts ELSE 0 END, given_up_at = NULL
                WHERE delivered_at IS NULL AND (\(output)::text IS NULL OR output = \(output))
                  AND (given_up_at IS NULL OR \(givenUp))
                RETURNING id
                """, logger: logger)
            for try await _ in rows.decode(Int64.self) { count += 1 }
            return count
        }
    }

    private typealias PendingRow = (Int64, String, String, String, String, String, Int32, String?, Date, Date, Date?)

    private static func pendingColumns(_ table: String) -> String {
        ["id", "output", "delivery_id", "kind", "source", "payload", "attempts", "last_error", "created_at", "next_attempt_at", "given_up_at"]
            .map { table + $0 }.joined(separator: ", ")
    }

    private static func pending(_ row: PendingRow) -> PendingDelivery? {
        let (id, output, deliveryID, kind, source, payload, attempts, lastError, created, next, givenUp) = row
        guard let kind = Delivery.Kind(rawValue: kind) else { return nil }
        return PendingDelivery(
            row: id, output: output, delivery: Delivery(id: deliveryID, kind: kind, source: source, payload: payload),
            attempts: Int(attempts), lastError: lastError, createdAt: created, nextAttemptAt: next, givenUpAt: givenUp
        )
    }
}
