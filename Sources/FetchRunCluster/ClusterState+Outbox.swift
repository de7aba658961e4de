import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// The shared outbox: the same contract as the state database's (``OutboxStore``), so that
/// ``OutboxDelivery`` sends from either.
extension ClusterState: OutboxStore {
    public func claimDue(for output: String, limit: Int, at now: Date, dueBy: Date?) async throws -> [PendingDelivery] {
        let due = dueBy ?? now
        return try await run {
            var claimed: [PendingDelivery] = []
            let rows = try await client.query("""
                WITH due AS (
                    SELECT id FROM fetchrun_outbox
                    WHERE output = \(output) AND delivered_at IS NULL AND next_attempt_at <= \(due)
                      AND (claim_until IS NULL OR claim_until < now())
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

    public func markDelivered(_ rows: [Int64], at now: Date) async throws {
        _ = try await run {
            try await client.query("UPDATE fetchrun_outbox SET delivered_at = \(now), claim_owner = NULL, claim_until = NULL WHERE id = ANY(\(rows)::bigint[])", logger: logger)
        }
    }

    public func markFailed(_ rows: [Int64], error message: String, at now: Date) async throws {
        let text = String(message.prefix(2000))
        _ = try await run {
            try await client.query("""
                UPDATE fetchrun_outbox SET attempts = attempts + 1, last_error = \(text),
                    next_attempt_at = \(now) + least(30 * power(2, least(attempts, 11)), 3600) * interval '1 second',
                    claim_owner = NULL, claim_until = NULL
                WHERE id = ANY(\(rows)::bigint[])
                """, logger: logger)
        }
    }

    public func nextDeliveryDue(for outputs: [String]) async throws -> Date? {
        try await run {
            var soonest: Date?
            for try await due in try await client.query("SELECT min(next_attempt_at) FROM fetchrun_outbox WHERE delivered_at IS NULL AND output = ANY(\(outputs)::text[])", logger: logger).decode(Date?.self) {
                soonest = due
            }
            return soonest
        }
    }

    /// Every undelivered row, oldest first: what `fetchrun outputs` lists.
    public func pendingDeliveries() async throws -> [PendingDelivery] {
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

    /// How many rows each output has sent.
    public func deliveredCounts() async throws -> [String: Int] {
        try await run {
            var counts: [String: Int] = [:]
            for try await (output, count) in try await client.query("SELECT output, count(*) FROM fetchrun_outbox WHERE delivered_at IS NOT NULL GROUP BY output", logger: logger).decode((String, Int64).self) {
                counts[output] = Int(count)
            }
            return counts
        }
    }

    @discardableResult
    public func retryNow(output: String? = nil, at now: Date = Date()) async throws -> Int {
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
