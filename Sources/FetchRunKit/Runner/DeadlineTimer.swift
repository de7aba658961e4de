import Foundation

/// Sleeps until a deadline, for ``withDeadline(_:operation:)``. Once cancelled, a sleep leaves
/// nothing behind.
///
/// Why not `Task.sleep`: on Linux a cancelled `Task.sleep` keeps its timer, and the task it
/// belongs to, until its time comes. Nearly every deadline is cancelled (the fetch ended
/// first), so a watch of 100,000 sources kept 100,000 dead tasks for 30 s after its first round
/// and then spent ~2 s of CPU firing their timers as no-ops. Here a cancelled sleep is removed
/// from the waiting list at once; one thread waits, on a condition, for the soonest deadline.
package final class DeadlineTimer: @unchecked Sendable {
    package static let shared = DeadlineTimer(name: "fetchrun deadlines")

    // Guarded by `condition`. The timer thread is the one place that waits on it.
    private let condition = NSCondition()
    private var queue = DueQueue<ContinuousClock.Instant, Int>()
    private var sleepers: [Int: CheckedContinuation<Void, any Error>] = [:]
    private var cancelledBeforeSleeping: Set<Int> = []
    private var nextID = 0
    private let name: String
    /// Whether the thread has started: at the first sleep, not when the timer is made.
    private var started = false

    package init(name: String) {
        self.name = name
    }

    /// Sleeps not yet woken or cancelled.
    package var sleeping: Int { condition.withLock { sleepers.count } }

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
                    if !started {
                        started = true
                        let thread = Thread { [self] in runTimers() }
                        thread.name = name
                        thread.start()
                    }
                    sleepers[id] = continuation
                    // Only a new soonest deadline changes what the thread waits for.
                    let wakesSooner = queue.first.map { deadline < $0.due } ?? true
                    queue.insert(id, due: deadline)
                    if wakesSooner { condition.signal() }
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper: CheckedContinuation<Void, any Error>? = condition.withLock {
                guard let sleeper = sleepers.removeValue(forKey: id) else {
                    // Not asleep yet (or already woken, which leaves a harmless mark).
                    cancelledBeforeSleeping.insert(id)
                    return nil
                }
                // Nothing left to wait for: the stale entries go with it.
                if sleepers.isEmpty { queue.removeAll() }
                return sleeper
            }
            sleeper?.resume(throwing: CancellationError())
        }
    }

    private func runTimers() {
        condition.lock()
        while true {
            queue.removeFirst { sleepers[$0.element] == nil }
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
            var due: [CheckedContinuation<Void, any Error>] = []
            while let next = queue.first, next.due <= now {
                queue.removeFirst()
                if let sleeper = sleepers.removeValue(forKey: next.element) { due.append(sleeper) }
            }
            condition.unlock()
            for sleeper in due { sleeper.resume() }
            condition.lock()
        }
    }
}
