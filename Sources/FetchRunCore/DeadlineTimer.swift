import Foundation

/// Sleeps until a deadline, or calls back at one (an alarm, for ``withDeadline(_:operation:)``).
/// Once cancelled, a sleep or an alarm leaves nothing behind.
///
/// Why not `Task.sleep`: on Linux a cancelled `Task.sleep` keeps its timer, and the task it
/// belongs to, until its time comes. Nearly every deadline is cancelled (the fetch ended
/// first), so a watch of 100,000 sources kept 100,000 dead tasks for 30 s after its first round
/// and then spent ~2 s of CPU firing their timers as no-ops. Here a cancelled sleep or alarm is
/// removed from the waiting list at once; one thread waits, on a condition, for the soonest
/// deadline.
package final class DeadlineTimer: @unchecked Sendable {
    package static let shared = DeadlineTimer(name: "fetchrun deadlines")

    /// What waits for a deadline: a task asleep, or an alarm's call.
    private enum Waiter {
        case sleeper(CheckedContinuation<Void, any Error>)
        /// Stays armed once called, until cancelled: it may be scheduled again. Called only
        /// at `due`, its latest time: an earlier one left in the queue is stale.
        case alarm(@Sendable (_ alarm: Int) -> Void, due: ContinuousClock.Instant)
    }

    // Guarded by `condition`. The timer thread is the one place that waits on it.
    private let condition = NSCondition()
    private var queue = DueQueue<ContinuousClock.Instant, Int>()
    private var waiters: [Int: Waiter] = [:]
    private var cancelledBeforeSleeping: Set<Int> = []
    private var nextID = 0
    private let name: String
    /// Whether the thread has started: at the first sleep, not when the timer is made.
    private var started = false

    package init(name: String) {
        self.name = name
    }

    /// Sleeps not yet woken, and alarms not yet cancelled.
    package var waiting: Int { condition.withLock { waiters.count } }

    /// Returns at `deadline`, or throws `CancellationError` as soon as the calling task is
    /// cancelled (the sleep is then forgotten at once).
    package func sleep(until deadline: ContinuousClock.Instant) async throws {
        try Task.checkCancellation()
        let id = condition.withLock {
            defer { nextID += 1 }
            return nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = condition.withLock {
                    if cancelledBeforeSleeping.remove(id) != nil { return true }
                    startIfNeeded()
                    waiters[id] = .sleeper(continuation)
                    enqueue(id, due: deadline)
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper: Waiter? = condition.withLock {
                guard let sleeper = removeWaiter(id) else {
                    // Not asleep yet (or already woken, which leaves a harmless mark).
                    cancelledBeforeSleeping.insert(id)
                    return nil
                }
                return sleeper
            }
            if case .sleeper(let continuation) = sleeper { continuation.resume(throwing: CancellationError()) }
        }
    }

    /// Calls `fire` on the timer's thread at `deadline`, with the alarm's number, unless
    /// ``cancel(_:)`` comes first. `fire` must return at once (it holds up every other alarm):
    /// work that waits belongs in a task of its own. Once called the alarm stays armed until
    /// cancelled, so that `fire` may ``reschedule(_:at:)`` it.
    /// - Returns: the alarm's number, for ``reschedule(_:at:)`` and ``cancel(_:)``.
    package func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable (_ alarm: Int) -> Void) -> Int {
        condition.withLock {
            let id = nextID
            nextID += 1
            startIfNeeded()
            waiters[id] = .alarm(fire, due: deadline)
            enqueue(id, due: deadline)
            return id
        }
    }

    /// Moves an alarm to `deadline` (called or not, it is then called once more, at that time);
    /// nothing when it has been cancelled.
    package func reschedule(_ alarm: Int, at deadline: ContinuousClock.Instant) {
        condition.withLock {
            guard case .alarm(let fire, _) = waiters[alarm] else { return }
            waiters[alarm] = .alarm(fire, due: deadline)
            enqueue(alarm, due: deadline)
        }
    }

    /// Disarms an alarm: from when this returns it is not called (a call under way on the
    /// timer's thread may still finish).
    package func cancel(_ alarm: Int) {
        condition.withLock { _ = removeWaiter(alarm) }
    }

    /// Caller holds `condition`.
    private func enqueue(_ id: Int, due deadline: ContinuousClock.Instant) {
        // Only a new soonest deadline changes what the thread waits for.
        let wakesSooner = queue.first.map { deadline < $0.due } ?? true
        queue.insert(id, due: deadline)
        if wakesSooner { condition.signal() }
    }

    /// Caller holds `condition`.
    private func removeWaiter(_ id: Int) -> Waiter? {
        guard let waiter = waiters.removeValue(forKey: id) else { return nil }
        // Nothing left to wait for: the stale entries go with it.
        if waiters.isEmpty { queue.removeAll() }
        return waiter
    }

    /// Caller holds `condition`.
    private func startIfNeeded() {
        guard !started else { return }
        started = true
        let thread = Thread { [self] in runTimers() }
        thread.name = name
        thread.start()
    }

    private func runTimers() {
        condition.lock()
        while true {
            queue.removeFirst { waiters[$0.element] == nil }
            guard let first = queue.first else {
                condition.wait()
                continue
            }
            let now = ContinuousClock.now
            guard first.due <= now else {
                let wait = now.duration(to: first.due)
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wait.components.seconds) + Double(wait.components.attoseconds) * 1e-18))
                continue
            }
            var due: [(id: Int, waiter: Waiter)] = []
            while let next = queue.first, next.due <= now {
                queue.removeFirst()
                switch waiters[next.element] {
                case .sleeper(let continuation)?:
                    waiters[next.element] = nil
                    due.append((next.element, .sleeper(continuation)))
                case .alarm(let fire, let at)? where at == next.due:
                    // Stays armed until cancelled.
                    due.append((next.element, .alarm(fire, due: at)))
                case .alarm?, nil:
                    break
                }
            }
            condition.unlock()
            for (id, waiter) in due {
                switch waiter {
                case .sleeper(let continuation): continuation.resume()
                case .alarm(let fire, _): fire(id)
                }
            }
            condition.lock()
        }
    }
}
