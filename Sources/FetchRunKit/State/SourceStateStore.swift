import Foundation

/// Where the state of sources lives: `state.db` in the state directory (``SQLiteStateStore``),
/// or PostgreSQL shared by many workers. The fetch pipeline (``FetchPipeline``) talks to this
/// protocol only, so every rule — what is new, health, backoff, the next due time, what goes in
/// the outbox — is written once, in Swift; a store only stores and selects.
///
/// The contract, which the contract tests check against both stores:
/// - **Leases.** A source is fetched only under its lease (``lease(_:until:)``). Each lease
///   carries a token that grows with every lease of the source; a ``commit(_:)`` whose token is
///   no longer the source's changes nothing and returns `false` (another process took the
///   source after the lease ran out). A lease runs out at its `until`, or — in `state.db` —
///   when its process is gone.
/// - **Commit.** A fetch's outbox rows, snapshot, state and history (``HistoryStore``) are
///   written so that a crash at any point loses nothing: outbox rows and found changes first (a
///   repeat is ignored: rows are unique by output and delivery id, records by id), the snapshot
///   next, the state last. A store that can write them in one transaction does.
/// - **Errors** are ``StateStoreError``s naming the store (its path, or its URL without the
///   password). Cancellation stops waiting; a write may still happen.
package protocol SourceStateStore: OutboxStore, HistoryStore {
    /// Takes the lease on `name` until `until`, unless another holder's lease is still live.
    /// A source the store has never seen is added (unscheduled).
    func lease(_ name: String, until: Date) async throws -> LeaseAttempt
    /// Gives a lease back without recording a fetch (one cancelled by a stop).
    func release(_ lease: SourceLease) async throws
    /// The source's stored snapshot. A damaged one is reported (and, with
    /// `movingCorruptAside`, moved out of the way) and reads as no snapshot.
    func snapshot(of name: String, movingCorruptAside: Bool) async -> SnapshotRead
    /// Writes one fetch under its lease; `false` when the lease was lost and nothing was written.
    func commit(_ commit: FetchCommit) async throws -> Bool
    /// Every source's recorded state, by name.
    func states() async throws -> [String: SourceState]
    /// Forgets a source (`reset`): its state and its snapshot; it is never fetched, and due at
    /// once. Returns where its snapshot was (a path, or a place in the database), `nil` when it
    /// had none.
    @discardableResult
    func forget(_ name: String) async throws -> String?
}

/// A store that is the schedule many workers share (PostgreSQL): they lease its due sources in
/// batches instead of keeping timetables of their own (``LeasePolicy``).
///
/// - **Schedule.** ``schedule(_:now:)`` says which sources ``leaseDue(limit:until:)`` hands
///   out: added ones due soon, changed ones (another fingerprint) due now, those no longer
///   listed retired — kept, never leased by due time (``SchedulePlan``).
/// - **Leases** are those of ``SourceStateStore``, renewed while their holder lives.
package protocol SharedSchedule: SourceStateStore {
    /// Leases up to `limit` scheduled sources whose due time has come and whose lease is free,
    /// soonest due first.
    func leaseDue(limit: Int, until: Date) async throws -> [SourceLease]
    /// Extends the live leases this process holds to `until`, and says it is alive.
    func renewLeases(until: Date) async throws
    /// Gives back every lease this process holds (a graceful stop).
    func releaseAll() async throws
    /// Makes a scheduled source due now (its lease, if one is held, is left alone).
    func makeDue(_ name: String) async throws
    /// Makes `sources` the scheduled ones (see the type's notes); returns their names by change.
    @discardableResult
    func schedule(_ sources: [SourceConfig], now: Date) async throws -> ScheduleChange
}

/// What ``SharedSchedule/schedule(_:now:)`` changed.
package struct ScheduleChange: Sendable, Equatable {
    package var added: [String] = []
    package var changed: [String] = []
    package var retired: [String] = []

    package init(added: [String] = [], changed: [String] = [], retired: [String] = []) {
        self.added = added
        self.changed = changed
        self.retired = retired
    }
}

/// One source leased to this process: the token its commit must still carry, and what is
/// recorded about the source.
package struct SourceLease: Sendable {
    package var name: String
    package var token: Int64
    package var state: SourceState
    /// Whether the store holds a snapshot of the source.
    package var hasSnapshot: Bool
    /// The snapshot, when the store hands it out with the lease (PostgreSQL does for adapters
    /// that read it); `nil`: read with ``SourceStateStore/snapshot(of:movingCorruptAside:)``
    /// when needed.
    package var snapshot: SnapshotRead?

    package init(name: String, token: Int64, state: SourceState, hasSnapshot: Bool, snapshot: SnapshotRead? = nil) {
        self.name = name
        self.token = token
        self.state = state
        self.hasSnapshot = hasSnapshot
        self.snapshot = snapshot
    }
}

/// What asking for one source's lease found.
package enum LeaseAttempt: Sendable {
    case taken(SourceLease)
    /// Someone else holds a live lease: "process 4242", "worker db1:4242:77".
    case held(by: String)
}

/// A source's stored snapshot, as read.
package enum SnapshotRead: Sendable {
    case missing
    case loaded(Snapshot)
    /// It could not be read; `note` says why and what was done with it. The source starts from
    /// an empty baseline.
    case corrupt(note: String)
    /// The store could not be asked (PostgreSQL did not answer): the fetch fails rather than
    /// take a past it could not read for an empty one, and is tried again when due.
    case unavailable(reason: String)
}

/// What one fetch writes, under its lease.
///
/// A class, though a value in all but name: it is handed through the stores' group commits by
/// reference, where a struct of this size (lease, state, snapshot: close to a kilobyte) took a
/// slot in every async frame it passed through — several kilobytes per fetch in flight.
package final class FetchCommit: Sendable {
    package let lease: SourceLease
    /// The state as the rules left it (``SourceState/record(_:validators:bodyHash:type:settings:at:jitter:)``).
    package let state: SourceState
    /// The new snapshot, when it changed; `nil` leaves the stored one.
    package let snapshot: Snapshot?
    /// Outbox rows to add.
    package let deliveries: [QueuedDelivery]
    /// What the fetch adds to the source's history (``ChangeRecorder``).
    package let history: HistoryWrite

    package init(lease: SourceLease, state: SourceState, snapshot: Snapshot?, deliveries: [QueuedDelivery], history: HistoryWrite = .none) {
        self.lease = lease
        self.state = state
        self.snapshot = snapshot
        self.deliveries = deliveries
        self.history = history
    }
}

/// A delivery for one output, as a fetch puts it in the outbox.
package struct QueuedDelivery: Sendable, Hashable {
    package var output: String
    package var delivery: Delivery

    package init(output: String, delivery: Delivery) {
        self.output = output
        self.delivery = delivery
    }
}

/// A state store could not be opened, read or written.
public struct StateStoreError: Error, Sendable, CustomStringConvertible {
    /// The store: a `state.db` path, or a PostgreSQL URL without its password.
    public var store: String
    public var reason: String
    /// What a fetch that this error stopped fails with: `state`, or `snapshot` when the
    /// snapshot file could not be written.
    package var failureKind: FetchFailure.Kind
    /// Another process holds the database's lock (`state.db` only).
    public var isLocked: Bool

    package init(store: String, reason: String, failureKind: FetchFailure.Kind = .state, isLocked: Bool = false) {
        self.store = store
        self.reason = reason
        self.failureKind = failureKind
        self.isLocked = isLocked
    }

    public var description: String {
        if failureKind == .snapshot { return reason }
        return store.hasPrefix("postgres") ? "\(store): \(reason)" : "state database \(store): \(reason)"
    }
}
