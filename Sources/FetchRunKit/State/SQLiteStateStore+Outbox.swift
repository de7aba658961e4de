import Foundation

/// The outbox: deliveries recorded with the fetch that found them, sent by outputs, marked
/// when sent. At least once, never lost: a row leaves the "pending" state only when its output
/// said it was sent; a process killed between sending and marking sends it again (with the same
/// ``Delivery/id``).
extension SQLiteStateStore {
    /// A process claims the rows it is sending for this long; a killed one's claims lapse.
    static let claimLength: TimeInterval = 300

    /// Puts deliveries in the outbox, inside the caller's transaction. A delivery already there
    /// for its output (the same ``Delivery/id``) is left as it is.
    /// - Returns: how many rows were added.
    func insert(_ deliveries: [QueuedDelivery], at now: Date) throws -> Int {
        var added = 0
        let at = SourceState.milliseconds(now)
        for queued in deliveries {
            let delivery = queued.delivery
            try connection.query(
                """
                INSERT OR IGNORE INTO outbox (output, delivery_id, source, kind, payload, created_at, next_attempt_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                [.text(queued.output), .text(delivery.id), .text(delivery.source), .text(delivery.kind.rawValue), .text(delivery.payload), .integer(at), .integer(at)]
            )
            added += connection.changes
        }
        return added
    }

    package func claimDue(for output: String, limit: Int, at now: Date, dueBy: Date?, after: Int64) throws(StateStoreError) -> [PendingDelivery] {
        let at = SourceState.milliseconds(now)
        let due = SourceState.milliseconds(dueBy ?? now)
        let until = SourceState.milliseconds(now.addingTimeInterval(Self.claimLength))
        return try run {
            try connection.transaction {
                // A process killed while sending leaves its claims behind: they lapse now, not
                // in five minutes, once that process is gone.
                var holders: [Int64] = []
                try connection.query("SELECT DISTINCT claim_owner FROM outbox WHERE claim_owner IS NOT NULL AND claim_owner != ? AND claim_until >= ?", [.integer(owner), .integer(at)]) { row in
                    if let holder = row.integer(0) { holders.append(holder) }
                }
                for holder in holders where !Self.isAlive(holder) {
                    try connection.query("UPDATE outbox SET claim_owner = NULL, claim_until = NULL WHERE claim_owner = ?", [.integer(holder)])
                }
                var claimed: [PendingDelivery] = []
                try connection.query(
                    """
                    UPDATE outbox SET claim_owner = ?, claim_until = ?
                    WHERE id IN (
                        SELECT id FROM outbox
                        WHERE output = ? AND delivered_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= ?
                          AND (claim_until IS NULL OR claim_until < ? OR claim_owner = ?) AND id > ?
                        ORDER BY id LIMIT ?)
                    RETURNING \(Self.pendingColumns)
                    """,
                    [.integer(owner), .integer(until), .text(output), .integer(due), .integer(at), .integer(owner), .integer(after), .integer(Int64(max(1, limit)))]
                ) { row in
                    if let pending = Self.pending(from: row) { claimed.append(pending) }
                }
                return claimed.sorted { $0.row < $1.row }
            }
        }
    }

    package func markDelivered(_ rows: [Int64], at now: Date) throws(StateStoreError) {
        try run {
            try connection.transaction {
                for row in rows {
                    try connection.query("UPDATE outbox SET delivered_at = ?, claim_owner = NULL, claim_until = NULL WHERE id = ?", [.integer(SourceState.milliseconds(now)), .integer(row)])
                }
            }
        }
    }

    package func markFailed(_ rows: [(row: Int64, retryAt: Date?)], error message: String, at now: Date) throws(StateStoreError) {
        try run {
            try connection.transaction {
                for (row, retryAt) in rows {
                    try connection.query(
                        """
                        UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, given_up_at = ?,
                            claim_owner = NULL, claim_until = NULL
                        WHERE id = ?
                        """,
                        [
                            .text(String(message.prefix(2000))), .integer(SourceState.milliseconds(retryAt ?? now)),
                            retryAt == nil ? .integer(SourceState.milliseconds(now)) : .null, .integer(row),
                        ]
                    )
                }
            }
        }
    }

    package func pruneDelivered(before date: Date) throws(StateStoreError) -> Int {
        try run {
            try connection.query("DELETE FROM outbox WHERE delivered_at IS NOT NULL AND delivered_at < ?", [.integer(SourceState.milliseconds(date))])
            return connection.changes
        }
    }

    package func retryNow(output: String?, givenUp: Bool, at now: Date) throws(StateStoreError) -> Int {
        try run {
            try connection.query(
                """
                UPDATE outbox SET next_attempt_at = ?,
                    attempts = CASE WHEN given_up_at IS NULL THEN attempts ELSE 0 END, given_up_at = NULL
                WHERE delivered_at IS NULL AND (? IS NULL OR output = ?) AND (given_up_at IS NULL OR ?)
                """,
                [.integer(SourceState.milliseconds(now)), .optional(output), .optional(output), .integer(givenUp ? 1 : 0)]
            )
            return connection.changes
        }
    }

    package func pendingDeliveries() throws(StateStoreError) -> [PendingDelivery] {
        try run {
            var rows: [PendingDelivery] = []
            try connection.query("SELECT \(Self.pendingColumns) FROM outbox WHERE delivered_at IS NULL ORDER BY id") { row in
                if let pending = Self.pending(from: row) { rows.append(pending) }
            }
            return rows
        }
    }

    package func deliveredCounts() throws(StateStoreError) -> [String: Int] {
        try countsByOutput("SELECT output, COUNT(*) FROM outbox WHERE delivered_at IS NOT NULL GROUP BY output")
    }

    package func pendingCounts() throws(StateStoreError) -> [String: Int] {
        // Left to itself, the planner groups by walking `outbox_due` in output order: every
        // row, sent ones too. The partial index holds only what is unsent.
        try countsByOutput("SELECT output, COUNT(*) FROM outbox INDEXED BY outbox_undelivered WHERE delivered_at IS NULL AND given_up_at IS NULL GROUP BY output")
    }

    /// The rows of `query` (an output, a count) as a dictionary.
    private func countsByOutput(_ query: String) throws(StateStoreError) -> [String: Int] {
        try run {
            var counts: [String: Int] = [:]
            try connection.query(query) { row in
                counts[row.text(0) ?? ""] = Int(clamping: row.integer(1) ?? 0)
            }
            return counts
        }
    }

    package func nextDeliveryDue(for outputs: [String]) throws(StateStoreError) -> Date? {
        try run {
            var soonest: Date?
            for output in outputs {
                if let at = try connection.integer("SELECT MIN(next_attempt_at) FROM outbox WHERE output = ? AND delivered_at IS NULL AND given_up_at IS NULL", [.text(output)]) {
                    let date = SourceState.date(at)
                    soonest = min(soonest ?? date, date)
                }
            }
            return soonest
        }
    }

    package func oldestUndelivered(for output: String) throws(StateStoreError) -> Date? {
        try run {
            try connection.integer("SELECT MIN(created_at) FROM outbox WHERE output = ? AND delivered_at IS NULL AND given_up_at IS NULL", [.text(output)]).map(SourceState.date)
        }
    }

    package func holdOutput(_ output: String, until date: Date, reason: String) throws(StateStoreError) {
        try run {
            try connection.query(
                """
                INSERT INTO output_holds (output, not_before, reason) VALUES (?, ?, ?)
                ON CONFLICT (output) DO UPDATE SET not_before = max(not_before, excluded.not_before), reason = excluded.reason
                """,
                [.text(output), .integer(SourceState.milliseconds(date)), .text(String(reason.prefix(2000)))]
            )
        }
    }

    package func outputHolds() throws(StateStoreError) -> [String: OutputHold] {
        try run {
            var holds: [String: OutputHold] = [:]
            try connection.query("SELECT output, not_before, reason FROM output_holds") { row in
                guard let output = row.text(0), let notBefore = row.integer(1) else { return }
                holds[output] = OutputHold(notBefore: SourceState.date(notBefore), reason: row.text(2) ?? "")
            }
            return holds
        }
    }

    package func releaseHolds(output: String?) throws(StateStoreError) {
        try run {
            try connection.query("DELETE FROM output_holds WHERE ? IS NULL OR output = ?", [.optional(output), .optional(output)])
        }
    }

    private static let pendingColumns = "id, output, delivery_id, kind, source, payload, attempts, last_error, created_at, next_attempt_at, given_up_at"

    private static func pending(from row: SQLiteRow) -> PendingDelivery? {
        guard let id = row.integer(0), let output = row.text(1), let deliveryID = row.text(2),
              let kind = row.text(3).flatMap(Delivery.Kind.init(rawValue:)), let source = row.text(4), let payload = row.text(5) else { return nil }
        return PendingDelivery(
            row: id, output: output, delivery: Delivery(id: deliveryID, kind: kind, source: source, payload: payload),
            attempts: Int(clamping: max(0, row.integer(6) ?? 0)), lastError: row.text(7),
            createdAt: SourceState.date(row.integer(8) ?? 0), nextAttemptAt: SourceState.date(row.integer(9) ?? 0),
            givenUpAt: row.integer(10).map(SourceState.date)
        )
    }
}
