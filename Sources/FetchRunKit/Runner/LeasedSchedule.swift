import Foundation
import Logging

/// A worker's schedule: the store's. Due sources are leased from it in batches
/// (``SharedSchedule/leaseDue(limit:until:)``), the leases held are renewed every third of
/// their time, and given back when the worker stops. Nothing is queued here: a fetch that ends
/// records its next due time in the store, for whichever worker leases it then.
package final class LeasedSchedule: WatchSchedule {
    private let policy: LeasePolicy
    private let clock: any FetchClock
    private var lastRenewal: ContinuousClock.Instant?
    /// Store queries still running past the turn that sent them.
    private var pendingRenewal: Task<Void, any Error>?
    private var pendingLeasing: Task<[SourceLease], any Error>?

    package init(_ policy: LeasePolicy, clock: any FetchClock) {
        self.policy = policy
        self.clock = clock
    }

    package func queue(_ name: String, generation: Int, due: Duration) {}

    package func takeDue(by now: Duration, room: Int, isCurrent: (_ name: String, _ generation: Int) -> Bool) -> [String] {
        []
    }

    /// Due now in the store, for whichever worker leases next: every worker's dashboard may ask.
    package func checkNow(_ name: String, generation: Int, at now: Duration, for watcher: isolated Watcher) async throws {
        try await policy.schedule.makeDue(name)
    }

    package func nextLook(after now: Duration) -> Duration? {
        now + policy.pollInterval
    }

    /// A batch's worth of room, or nothing in flight: a lease query is worth sending.
    package func wantsTurn(room: Int, inFlight: Int, maxInFlight: Int, timerTarget: Duration?) -> Bool {
        room > 0 && (room >= min(policy.batch, maxInFlight) || inFlight == 0)
    }

    /// Renews the leases held when a third of their time has passed, then leases due sources
    /// while there is room and the store has full batches to give.
    ///
    /// The turn is bounded: a store that stops answering (a PostgreSQL server that hangs) must
    /// not hold the watcher's loop, which would look dead from outside (/healthz, the watchdog)
    /// while it only waits. It waits for the store until the next turn is due (a third of the
    /// lease time without a turn interval). A query not answered by then runs on and its answer
    /// is taken at a later turn, never sent twice: a lease query the store answers late has
    /// taken its leases.
    package func turn(for watcher: isolated Watcher) async {
        let store = policy.schedule, logger = watcher.logger
        let turnEnds = clock.now + (watcher.turnInterval ?? policy.leaseTime / 3)
        if pendingRenewal == nil, lastRenewal.map({ clock.now - $0 >= policy.leaseTime / 3 }) ?? true {
            let until = clock.date(after: policy.leaseTime)
            pendingRenewal = Task { try await store.renewLeases(until: until) }
            lastRenewal = clock.now
        }
        if let renewal = pendingRenewal {
            do {
                if try await value(of: renewal, before: turnEnds, on: clock) != nil { pendingRenewal = nil }
            } catch {
                pendingRenewal = nil
                logger.error("renewing leases: \(error)")
            }
        }
        while !watcher.isStopping, watcher.room > 0, pendingLeasing != nil || wantsTurn(room: watcher.room, inFlight: watcher.inFlight, maxInFlight: watcher.maxInFlight, timerTarget: nil) {
            let until = clock.date(after: policy.leaseTime), limit = min(watcher.room, policy.batch)
            let query = pendingLeasing ?? Task { try await store.leaseDue(limit: limit, until: until) }
            pendingLeasing = query
            let leased: [SourceLease]
            do {
                guard let answer = try await value(of: query, before: turnEnds, on: clock) else {
                    logger.info("leasing: the state store has not answered yet; its answer is taken at a later turn")
                    return
                }
                pendingLeasing = nil
                leased = answer
            } catch {
                pendingLeasing = nil
                logger.error("leasing: \(error)")
                return
            }
            watcher.recordLeases(leased.count)
            for lease in leased {
                // Retired by another worker's newer config, stopping meanwhile, or more than
                // there is room for now (a late answer): given back untouched.
                if !watcher.startLeased(lease) { try? await store.release(lease) }
            }
            // A full batch: more may be due at once.
            guard leased.count == policy.batch else { return }
        }
    }

    /// Makes `sources` the schedule every worker shares.
    package func reload(_ sources: [SourceConfig], at date: Date, for watcher: isolated Watcher) async throws {
        try await policy.schedule.schedule(sources, now: date)
    }

    /// Gives this worker's leases back, so that other workers need not wait for them to lapse.
    package func finish(logger: Logger, for watcher: isolated Watcher) async {
        do {
            try await policy.schedule.releaseAll()
        } catch {
            logger.warning("could not give this worker's leases back (\(error)); they lapse after the lease time")
        }
    }
}
