/// Thrown by ``withDeadline(_:operation:)`` when the deadline passes first.
package struct DeadlineExceeded: Error, Sendable {}

/// Runs `operation` in a task of its own and cancels it at `deadline`.
///
/// Returns what the operation returns if it ends by the deadline; a result that arrives after
/// it is discarded and ``DeadlineExceeded`` thrown. At the deadline the operation's task
/// is cancelled and, once it has ended, ``DeadlineExceeded`` is thrown — so the operation must
/// respond to cancellation for this to return promptly (a cancelled `Task.sleep` or HTTP
/// transfer does). An error the operation throws once the deadline has passed is reported as
/// ``DeadlineExceeded`` too: a limit of the operation's own set at the deadline (curl's
/// time-out) may fire a moment before the timer gets to run on a busy machine, and the cause is
/// the same. If the calling task is cancelled, the operation is cancelled too and what it ends
/// with is the outcome: its error (usually `CancellationError`), or its result when it was
/// returning as the cancellation came. `deadline` is an instant of `clock`'s.
package func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant,
    on clock: any FetchClock = SystemClock(),
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = await runCancellable(operation, on: clock) { task in
        clock.schedule(at: deadline) { _ in task.cancel() }
    }
    switch outcome {
    case .success:
        // A result that arrives after the deadline is late, however it got here: work that
        // ignored cancellation, or a busy machine that ran the timer after the operation.
        guard clock.now <= deadline else { throw DeadlineExceeded() }
    case .failure:
        if !Task.isCancelled && clock.now >= deadline { throw DeadlineExceeded() }
    }
    return try outcome.get()
}

/// Runs `operation` in a task and returns its outcome, once the task has ended. `arm` sets, on
/// `clock`, the alarm that cancels the task (given its handle); the alarm is disarmed when the
/// task ends. Cancelling the calling task cancels the operation's.
///
/// One task, and an alarm on the timer's thread, rather than a task group racing the operation
/// against a sleeping timer: that took a second task, its sleep and its cancellation for every
/// fetch, when nearly every deadline is disarmed unreached (~2 % of a 1,000-source repeat run,
/// Benchmarks/RESULTS.md). The task is always awaited, so it never outlives the call.
func runCancellable<T: Sendable>(
    _ operation: @escaping @Sendable () async throws -> T,
    on clock: any FetchClock,
    armingAlarm arm: (Task<T, any Error>) -> Int
) async -> Result<T, any Error> {
    let task = Task { try await operation() }
    let alarm = arm(task)
    let outcome = await withTaskCancellationHandler {
        await task.result
    } onCancel: {
        task.cancel()
    }
    clock.cancel(alarm)
    return outcome
}
