import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// The shared outbox: the same contract as `state.db`'s (``OutboxStore``), so that
/// ``OutboxDelivery`` sends from either.
extension PostgresStateStore {
    package func claimDue(for output: String, limit: Int, at now: Date, dueBy: Date?) async throws(StateStoreError) -> [PendingDelivery] {
        let due = dueBy ?? now
        return try await run {
            var claimed: [PendingDelivery] = []
            let rows = try await client.query("""
                WITH due AS (
                    SELECT id FROM fetchrun_outbox
                    WHERE output = \(output) AND delivered_at IS NULL AND next_attempt_at <= \(due)
                      AND (claim_until IS NULL OR claim_until < now() OR claim_owner = \(workerID))
                    ORDER BY id LIMIT \(max(1, limit))
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE fetchrun_outbox o SET claim_owner = \(workerID), claim_until = now() + interval '5 minutes'
                FROM due WHERE o.id = due.id
                RETURNING o.id, o.output, o.delivery_id, o.kind, o.source, o.payload, o.attempts, o.last_error, o.created_at, o.next_attempt_at
                """, logger: logger)
            for try await (id, output, deliveryID, kind, source, payload, attempts, lastError, created, next) in rows.decode((Int64, String, String, String, String, String, Int32, String?, Date, Date).self) {
                guard let kind = Delivery.Kind(rawValue: kind) else { continue }
                claimed.append(PendingDelivery(
                    row: id, output: output, delivery: Delivery(id: deliveryID, kind: kind, source: source, payload: payload),
                    attempts: Int(attempts), lastError: lastError, createdAt: created, nextAttemptAt: next
                ))
            }
            return claimed.sorted { $0.row < $1.row }
        }
    }

    package func markDelivered(_ rows: [Int64], at now: Date) async throws(StateStoreError) {
        _ = try await run {
            try await client.query("UPDATE fetchrun_outbox SET delivered_at = \(now), claim_owner = NULL, claim_until = NULL WHERE id = ANY(\(rows)::bigint[])", logger: logger)
        }
    }

    package func markFailed(_ rows: [(row: Int64, nextAttempt: Date)], error message: String, at now: Date) async throws(StateStoreError) {
        let text = Self.storable(String(message.prefix(2000)))
        let ids = rows.map(\.row), next = rows.map(\.nextAttempt)
        _ = try await run {
            try await client.query("""
                UPDATE fetchrun_outbox o SET attempts = o.attempts + 1, last_error = \(text), next_attempt_at = f.next,
                    claim_owner = NULL, claim_until = NULL
                FROM unnest(\(ids)::bigint[], \(next)::timestamptz[]) AS f(id, next)
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
            for try await due in try await client.query("SELECT min(next_attempt_at) FROM fetchrun_outbox WHERE delivered_at IS NULL AND output = ANY(\(outputs)::text[])", logger: logger).decode(Date?.self) {
                soonest = due
            }
            return soonest
        }
    }

    package func pendingDeliveries() async throws(StateStoreError) -> [PendingDelivery] {
        try await run {
            var rows: [PendingDelivery] = []
            let result = try await client.query("""
                SELECT id, output, delivery_id, kind, source, payload, attempts, last_error, created_at, next_attempt_at
                FROM fetchrun_outbox WHERE delivered_at IS NULL ORDER BY id
                """, logger: logger)
            for try await (id, output, deliveryID, kind, source, payload, attempts, lastError, created, next) in result.decode((Int64, String, String, String, String, String, Int32, String?, Date, Date).self) {
                guard let kind = Delivery.Kind(rawValue: kind) else { continue }
                rows.append(PendingDelivery(
                    row: id, output: output, delivery: Delivery(id: deliveryID, kind: kind, source: source, payload: payload),
                    attempts: Int(attempts), lastError: lastError, createdAt: created, nextAttemptAt: next
                ))
            }
            return rows
        }
    }

    package func deliveredCounts() async throws(StateStoreError) -> [String: Int] {
        try await run {
            var counts: [String: Int] = [:]
            for try await (output, count) in try await client.query("SELECT output, count(*) FROM fetchrun_outbox WHERE delivered_at IS NOT NULL GROUP BY output", logger: logger).decode((String, Int64).self) {
                counts[output] = Int(count)
            }
            return counts
        }
    }

    package func retryNow(output: String?, at now: Date) async throws(StateStoreError) -> Int {
        try await run {
            var count = 0
            let rows = try await client.query("""
                UPDATE fetchrun_outbox SET next_attempt_at = \(now)
                WHERE delivered_at IS NULL AND (\(output)::text IS NULL OR output = \(output))
                RETURNING id
                """, logger: logger)
            for try await _ in rows.decode(Int64.self) { count += 1 }
            return count
        }
    }
}
