import FetchRunCore
import Foundation
import Synchronization
import Testing

/// A clock that moves only when a test says so (``advance(by:)``): a rule about an hour — a
/// backoff, a lease, a breaker's opening, a schedule — is checked in microseconds, and the same
/// test passes on a machine of any speed.
///
/// It keeps ``FetchClock``'s contract: sleepers wake and alarms fire once ``now`` reaches their
/// time, which happens only inside ``advance(by:)`` (or at once, for a time already passed); a
/// cancelled sleep throws at once and leaves nothing behind. Its instants are
/// `ContinuousClock` instants counted from the moment it was made, and ``date`` moves with them
/// from a fixed calendar time.
public final class TestClock: FetchClock, Sendable {
    private struct Sleeper {
        var id: Int
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Alarm {
        /// `nil` once fired, until rescheduled.
        var due: ContinuousClock.Instant?
        var fire: @Sendable (Int) -> Void
    }

    private struct State {
        var offset: Duration = .zero
        var sleepers: [Sleeper] = []
        var cancelledBeforeSleeping: Set<Int> = []
        var alarms: [Int: Alarm] = [:]
        var nextID = 0
        var sleepCalls = 0
    }

    private let origin = ContinuousClock.now
    private let originDate: Date
    private let state = Mutex(State())

    /// - Parameter date: the calendar time at the start; by default the real one, so that
    ///   times a store or a server writes on its own stay near the clock's.
    public init(date: Date = Date()) {
        originDate = date
    }

    package var now: ContinuousClock.Instant { origin + state.withLock { $0.offset } }
    package var date: Date { originDate.addingTimeInterval(elapsed.seconds) }

    /// How far the test has moved the clock.
    private var elapsed: Duration { state.withLock { $0.offset } }

    /// How many tasks sleep on the clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// How many times anything has slept on this clock (a busy loop shows as thousands).
    public var sleepCalls: Int { state.withLock { $0.sleepCalls } }

    package func sleep(until deadline: ContinuousClock.Instant) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state in
            state.sleepCalls += 1
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelledBeforeSleeping.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= origin + state.offset { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { state in
                if let index = state.sleepers.firstIndex(where: { $0.id == id }) { return state.sleepers.remove(at: index) }
                state.cancelledBeforeSleeping.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    package func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable (Int) -> Void) -> Int {
        let (id, due) = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            let due = deadline <= origin + state.offset
            state.alarms[id] = Alarm(due: due ? nil : deadline, fire: fire)
            return (id, due)
        }
        if due { fire(id) }
        return id
    }

    package func reschedule(_ alarm: Int, at deadline: ContinuousClock.Instant) {
        let fire: (@Sendable (Int) -> Void)? = state.withLock { state in
            guard var entry = state.alarms[alarm] else { return nil }
            if deadline <= origin + state.offset {
                entry.due = nil
                state.alarms[alarm] = entry
                return entry.fire
            }
            entry.due = deadline
            state.alarms[alarm] = entry
            return nil
        }
        fire?(alarm)
    }

    package func cancel(_ alarm: Int) {
        _ = state.withLock { $0.alarms.removeValue(forKey: alarm) }
    }

    /// Moves time on by `duration`, then wakes every sleeper and fires every alarm whose time
    /// has come, in the order of their times.
    public func advance(by duration: Duration) {
        let (sleepers, alarms) = state.withLock { state in
            state.offset += duration
            let now = origin + state.offset
            let sleepers = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            var alarms: [(id: Int, due: ContinuousClock.Instant, fire: @Sendable (Int) -> Void)] = []
            for (id, alarm) in state.alarms {
                guard let due = alarm.due, due <= now else { continue }
                alarms.append((id, due, alarm.fire))
                state.alarms[id]?.due = nil
            }
            return (sleepers, alarms.sorted { $0.due < $1.due })
        }
        for sleeper in sleepers { sleeper.continuation.resume() }
        for alarm in alarms { alarm.fire(alarm.id) }
    }

    /// Waits, in real time and briefly, until at least `count` tasks sleep on the clock: the
    /// moment a test may move time on and know who it wakes.
    public func waitForSleepers(_ count: Int) async throws {
        try await waitUntil("\(count) sleepers on the test clock (\(sleeperCount) now)") { self.sleeperCount >= count }
    }
}
