import Foundation

/// Where deliveries wait: the outbox of a state store (`state.db`, or PostgreSQL shared by
/// workers). ``OutboxDelivery`` sends from either; when to try again and how long to remember
/// what was sent are its rules, not the store's.
///
/// The contract: ``claimDue(for:limit:at:dueBy:after:)`` hands out each undelivered row to one
/// process at a time (a claim that lapses if its process dies); ``markDelivered(_:at:)`` and
/// ``markFailed(_:error:at:)`` end a claim. A row is never lost: only a mark takes it out of the
/// undelivered ones, and ``pruneDelivered(before:)`` removes only rows sent before then. A row
/// given up stays, listed, and is claimed again only after ``retryNow(output:givenUp:at:)``
/// with `givenUp`.
package protocol OutboxStore: Sendable {
    /// Claims up to `limit` rows of `output`, oldest first: undelivered, not given up, due by
    /// `dueBy` (now when `nil`), not held by another live process, and after row `after` (so
    /// that one pass walks its queue once, whatever fails).
    func claimDue(for output: String, limit: Int, at now: Date, dueBy: Date?, after: Int64) async throws -> [PendingDelivery]
    func markDelivered(_ rows: [Int64], at now: Date) async throws
    /// Records a failed attempt for each row: its attempts go up by one, its last error is
    /// `error`, and it is due again at its `retryAt` — or, when that is `nil`, given up.
    func markFailed(_ rows: [(row: Int64, retryAt: Date?)], error: String, at now: Date) async throws
    /// When the soonest undelivered row of `outputs` that is not given up is due; `nil` when
    /// none waits.
    func nextDeliveryDue(for outputs: [String]) async throws -> Date?
    /// When the oldest undelivered row of `output` that is not given up was queued; `nil` when
    /// none waits. A digest (``DigestSchedule``) is due from it.
    func oldestUndelivered(for output: String) async throws -> Date?
    /// Forgets rows that were sent before `date`; returns how many.
    @discardableResult
    func pruneDelivered(before date: Date) async throws -> Int

    /// Records that `output`'s service asked for nothing before `date` (a 429's `Retry-After`),
    /// with why: kept until then for every process that sends through it, a later hold never
    /// shortening an earlier one.
    func holdOutput(_ output: String, until date: Date, reason: String) async throws
    /// Every output's hold, past ones possibly included (whoever reads compares with now).
    func outputHolds() async throws -> [String: OutputHold]
    /// Forgets the hold of `output` (every output's when `nil`): `outputs --retry --force`.
    func releaseHolds(output: String?) async throws

    // What `fetchrun outputs` reads and does, whichever the store.

    /// Makes every undelivered row of `output` (all outputs when `nil`) that is not given up
    /// due at `now` — with `givenUp`, the given-up rows too, taken back with their attempts
    /// counted from zero; returns how many rows that was.
    @discardableResult
    func retryNow(output: String?, givenUp: Bool, at now: Date) async throws -> Int
    /// Every undelivered row, given up or not, oldest first.
    func pendingDeliveries() async throws -> [PendingDelivery]
    /// How many rows each output has sent (and still remembers).
    func deliveredCounts() async throws -> [String: Int]
    /// How many rows each output still has to send: undelivered and not given up. Counted by
    /// the store, so that a scrape of a long-down output's backlog reads no payloads.
    func pendingCounts() async throws -> [String: Int]
}

/// An output's service asked for nothing before ``notBefore`` (HTTP 429 or 503 with a wait).
package struct OutputHold: Sendable, Hashable {
    package var notBefore: Date
    /// The refusal that asked for it.
    package var reason: String

    package init(notBefore: Date, reason: String) {
        self.notBefore = notBefore
        self.reason = reason
    }
}
