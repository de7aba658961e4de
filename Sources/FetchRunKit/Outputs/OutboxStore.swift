import Foundation

/// Where deliveries wait: the outbox of a state store (`state.db`, or PostgreSQL shared by
/// workers). ``OutboxDelivery`` sends from either; when to try again and how long to remember
/// what was sent are its rules, not the store's.
///
/// The contract: ``claimDue(for:limit:at:dueBy:)`` hands out each undelivered row to one
/// process at a time (a claim that lapses if its process dies); ``markDelivered(_:at:)`` and
/// ``markFailed(_:error:at:)`` end a claim. A row is never lost: only a mark takes it out of the
/// undelivered ones, and ``pruneDelivered(before:)`` removes only rows sent before then.
package protocol OutboxStore: Sendable {
    func claimDue(for output: String, limit: Int, at now: Date, dueBy: Date?) async throws -> [PendingDelivery]
    func markDelivered(_ rows: [Int64], at now: Date) async throws
    /// Records a failed attempt for each row: its attempts go up by one and it is due again at
    /// the row's `nextAttempt`.
    func markFailed(_ rows: [(row: Int64, nextAttempt: Date)], error: String, at now: Date) async throws
    /// When the soonest undelivered row of `outputs` is due; `nil` when none waits.
    func nextDeliveryDue(for outputs: [String]) async throws -> Date?
    /// Forgets rows that were sent before `date`; returns how many.
    @discardableResult
    func pruneDelivered(before date: Date) async throws -> Int

    // What `fetchrun outputs` reads and does, whichever the store.

    /// Makes every undelivered row of `output` (all outputs when `nil`) due at `now`; returns
    /// how many rows that was.
    @discardableResult
    func retryNow(output: String?, at now: Date) async throws -> Int
    /// Every undelivered row, oldest first.
    func pendingDeliveries() async throws -> [PendingDelivery]
    /// How many rows each output has sent (and still remembers).
    func deliveredCounts() async throws -> [String: Int]
}
