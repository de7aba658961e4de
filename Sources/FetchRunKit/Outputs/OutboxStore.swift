import Foundation

/// Where deliveries wait: the state database's outbox (`state.db`), or PostgreSQL's when many
/// workers share one state. ``OutboxDelivery`` sends from either.
///
/// The contract: ``claimDue(for:limit:at:dueBy:)`` hands out each undelivered row to one
/// process at a time (a claim that lapses if its process dies); ``markDelivered(_:at:)`` and
/// ``markFailed(_:error:at:)`` end a claim. A row is never lost: only a mark takes it out of the
/// undelivered ones.
public protocol OutboxStore: Sendable {
    func claimDue(for output: String, limit: Int, at now: Date, dueBy: Date?) async throws -> [PendingDelivery]
    func markDelivered(_ rows: [Int64], at now: Date) async throws
    func markFailed(_ rows: [Int64], error: String, at now: Date) async throws
    /// When the soonest undelivered row of `outputs` is due; `nil` when none waits.
    func nextDeliveryDue(for outputs: [String]) async throws -> Date?

    // What `fetchrun outputs` reads and does, whichever the store.

    /// Makes every undelivered row of `output` (all outputs when `nil`) due at `now`; returns
    /// how many rows that was.
    @discardableResult
    func retryNow(output: String?, at now: Date) async throws -> Int
    /// Every undelivered row, oldest first.
    func pendingDeliveries() async throws -> [PendingDelivery]
    /// How many rows each output has sent.
    func deliveredCounts() async throws -> [String: Int]
}

extension StateDatabase: OutboxStore {}
