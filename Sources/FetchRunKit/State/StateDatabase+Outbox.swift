import Foundation

/// The outbox: deliveries recorded with the fetch that found them, sent by outputs, marked
/// when sent. At least once, never lost: a row leaves the "pending" state only when its output
/// said it was sent; a process killed between sending and marking sends it again (with the same
/// ``Delivery/id``).
extension StateDatabase {
    /// How long a sent delivery is remembered, so that an item seen again (after the snapshot
    /// let go of it) is not sent twice.
    static let deliveredRetention: TimeInterval = 30 * 86_400
    /// A process claims the rows it is sending for this long; a killed one's claims lapse.
    static let claimLength: TimeInterval = 300

    /// Puts deliveries in the outbox for `outputs`. A delivery already there for an output
    /// (the same ``Delivery/id``) is left as it is.
    /// - Returns: how many rows were added.
    /// - Throws: ``StateDatabaseError`` when they cannot be written.
    @discardableResult
    public func enqueue(_ deliveries: [Delivery], for outputs: [String], at now: Date = Date()) throws(StateDatabaseError) -> Int {
        guard !deliveries.isEmpty, !outputs.isEmpty else { return 0 }
        do {
            return try connection.transaction {
                try insert(deliveries, for: outputs, at: now)
            }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
    }

    /// The insert itself, inside the caller's transaction.
    func insert(_ deliveries: [Delivery], for outputs: [String], at now: Date) throws -> Int {
        var added = 0
        let at = Self.milliseconds(now)
        for output in outputs {
            for delivery in deliveries {
                try connection.query(
                    """
                    INSERT OR IGNORE INTO outbox (output, delivery_id, source, kind, payload, created_at, next_attempt_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                    [.text(output), .text(delivery.id), .text(delivery.source), .text(delivery.kind.rawValue), .text(delivery.payload), .integer(at), .integer(at)]
                )
                added += connection.changes
            }
        }
        return added
    }

    /// Claims up to `limit` deliveries of `output` that are due (never sent, retry time come
    /// by `dueBy` — now unless given —, not claimed by another process whose claim holds),
    /// oldest first, for this process.
    public func claimDue(for output: String, limit: Int, at now: Date = Date(), dueBy: Date? = nil) throws(StateDatabaseError) -> [PendingDelivery] {
        let at = Self.milliseconds(now)
        let due = Self.milliseconds(dueBy ?? now)
        let until = Self.milliseconds(now.addingTimeInterval(Self.claimLength))
        var claimed: [PendingDelivery] = []
        do {
            try connection.transaction {
                // A process killed while sending leaves its claims behind: they lapse now, not
                // in five minutes, once that process is gone.
                var owners: [Int64] = []
                try connection.query("SELECT DISTINCT claim_owner FROM outbox WHERE claim_until >= ? AND claim_owner != ?", [.integer(at), .integer(Int64(getpid()))]) { row in
                    if let owner = row.integer(0) { owners.append(owner) }
                }
                for owner in owners where !Self.isAlive(owner) {
                    try connection.query("UPDATE outbox SET claim_owner = NULL, claim_until = NULL WHERE claim_owner = ?", [.integer(owner)])
                }
                try connection.query(
                    """
                    UPDATE outbox SET claim_owner = ?, claim_until = ?
                    WHERE id IN (
                        SELECT id FROM outbox
                        WHERE output = ? AND delivered_at IS NULL AND next_attempt_at <= ?
                          AND (claim_until IS NULL OR claim_until < ? OR claim_owner = ?)
                        ORDER BY id LIMIT ?)
                    RETURNING id, output, delivery_id, kind, source, payload, attempts, last_error, created_at, next_attempt_at
                    """,
                    [.integer(Int64(getpid())), .integer(until), .text(output), .integer(due), .integer(at), .integer(Int64(getpid())), .integer(Int64(max(1, limit)))]
                ) { row in
                    if let pending = Self.pending(from: row) { claimed.append(pending) }
                }
            }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
        return claimed.sorted { $0.row < $1.row }
    }

    /// Marks deliveries sent; they are kept (for ``deliveredRetention``) only to recognise repeats.
    public func markDelivered(_ rows: [Int64], at now: Date = Date()) throws(StateDatabaseError) {
        let at = Self.milliseconds(now)
        do {
            try connection.transaction {
                for row in rows {
                    try connection.query("UPDATE outbox SET delivered_at = ?, claim_owner = NULL, claim_until = NULL WHERE id = ?", [.integer(at), .integer(row)])
                }
                try connection.query("DELETE FROM outbox WHERE delivered_at IS NOT NULL AND delivered_at < ?", [.integer(Self.milliseconds(now.addingTimeInterval(-Self.deliveredRetention)))])
            }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
    }

    /// Records a failed attempt: the rows stay pending and are tried again after a backoff
    /// (30 s, doubling, at most an hour).
    public func markFailed(_ rows: [Int64], error message: String, at now: Date = Date()) throws(StateDatabaseError) {
        do {
            try connection.transaction {
                for row in rows {
                    let attempts = Int(try connection.integer("SELECT attempts FROM outbox WHERE id = ?", [.integer(row)]) ?? 0) + 1
                    let next = now.addingTimeInterval(Self.retryDelay(afterAttempts: attempts))
                    try connection.query(
                        "UPDATE outbox SET attempts = ?, last_error = ?, next_attempt_at = ?, claim_owner = NULL, claim_until = NULL WHERE id = ?",
                        [.integer(Int64(attempts)), .text(String(message.prefix(2000))), .integer(Self.milliseconds(next)), .integer(row)]
                    )
                }
            }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
    }

    /// 30 s after the first failure, doubling, at most an hour.
    static func retryDelay(afterAttempts attempts: Int) -> TimeInterval {
        min(30 * pow(2, Double(min(max(attempts, 1), 12) - 1)), 3600)
    }

    /// Makes every undelivered row of `output` (all outputs when `nil`) due now.
    @discardableResult
    public func retryNow(output: String? = nil, at now: Date = Date()) throws(StateDatabaseError) -> Int {
        do {
            try connection.query(
                "UPDATE outbox SET next_attempt_at = ? WHERE delivered_at IS NULL AND (? IS NULL OR output = ?)",
                [.integer(Self.milliseconds(now)), .optional(output), .optional(output)]
            )
            return connection.changes
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
    }

    /// Every undelivered row, oldest first: what `fetchrun outputs` lists.
    public func pendingDeliveries() throws(StateDatabaseError) -> [PendingDelivery] {
        var rows: [PendingDelivery] = []
        do {
            try connection.query(
                "SELECT id, output, delivery_id, kind, source, payload, attempts, last_error, created_at, next_attempt_at FROM outbox WHERE delivered_at IS NULL ORDER BY id"
            ) { row in
                if let pending = Self.pending(from: row) { rows.append(pending) }
            }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
        return rows
    }

    /// How many rows each output has sent (and still remembers).
    public func deliveredCounts() throws(StateDatabaseError) -> [String: Int] {
        var counts: [String: Int] = [:]
        do {
            try connection.query("SELECT output, COUNT(*) FROM outbox WHERE delivered_at IS NOT NULL GROUP BY output") { row in
                counts[row.text(0) ?? ""] = Int(clamping: row.integer(1) ?? 0)
            }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
        return counts
    }

    /// When the soonest undelivered row of any of `outputs` is due; `nil` when none waits.
    public func nextDeliveryDue(for outputs: [String]) throws(StateDatabaseError) -> Date? {
        var soonest: Date?
        do {
            for output in outputs {
                if let at = try connection.integer("SELECT MIN(next_attempt_at) FROM outbox WHERE output = ? AND delivered_at IS NULL", [.text(output)]) {
                    let date = Self.date(at)
                    soonest = min(soonest ?? date, date)
                }
            }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
        return soonest
    }

    private static func pending(from row: SQLiteRow) -> PendingDelivery? {
        guard let id = row.integer(0), let output = row.text(1), let deliveryID = row.text(2),
              let kind = row.text(3).flatMap(Delivery.Kind.init(rawValue:)), let source = row.text(4), let payload = row.text(5) else { return nil }
        return PendingDelivery(
            row: id, output: output, delivery: Delivery(id: deliveryID, kind: kind, source: source, payload: payload),
            attempts: Int(clamping: max(0, row.integer(6) ?? 0)), lastError: row.text(7),
            createdAt: date(row.integer(8) ?? 0), nextAttemptAt: date(row.integer(9) ?? 0)
        )
    }
}
