/// Thrown by ``withDeadline(_:operation:)`` when the deadline passes first.
package struct DeadlineExceeded: Error, Sendable {}

/// Runs `operation` in a child task and cancels it at `deadline`.
///
/// Returns what the operation returns if it ends by the deadline; a result that arrives after
/// it is discarded and ``DeadlineExceeded`` thrown. At the deadline the operation's task
/// is cancelled and, once it has ended, ``DeadlineExceeded`` is thrown — so the operation must
/// respond to cancellation for this to return promptly (a cancelled `Task.sleep` or HTTP
/// transfer does). An error the operation throws once the deadline has passed is reported as
/// ``DeadlineExceeded`` too: a limit of the operation's own set at the deadline (curl's
/// time-out) may fire a moment before the timer gets to run on a busy machine, and the cause is
/// the same. If the calling task is cancelled, the operation is cancelled too and its error
/// (usually `CancellationError`) is rethrown.
package func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            // Not Task.sleep: nearly every deadline is cancelled, and a cancelled Task.sleep
            // lingers until its time (see DeadlineTimer).
            try await DeadlineTimer.shared.sleep(until: deadline)
            throw DeadlineExceeded()
        }
        defer { group.cancelAll() }
        // The first child to finish decides; a nil result cannot occur (the timer only throws).
        do {
            guard let result = try await group.next() ?? nil else { throw DeadlineExceeded() }
            // A result that arrives after the deadline is late, however it got here: work that
            // ignored cancellation, or a busy machine that ran the timer after the operation.
            guard ContinuousClock.now <= deadline else { throw DeadlineExceeded() }
            return result
        } catch where !Task.isCancelled && ContinuousClock.now >= deadline {
            throw DeadlineExceeded()
        }
    }
}
