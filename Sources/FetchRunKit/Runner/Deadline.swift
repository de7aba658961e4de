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
/// the same. If the calling task is cancelled, the operation is cancelled too and what it ends
/// with is the outcome: its error (usually `CancellationError`), or its result when it was
/// returning as the cancellation came — never the timer's cancellation in its place.
package func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = await raceAgainstTimer(operation) {
        // Not Task.sleep: nearly every deadline is cancelled, and a cancelled Task.sleep
        // lingers until its time (see DeadlineTimer).
        try await DeadlineTimer.shared.sleep(until: deadline)
        throw DeadlineExceeded()
    }
    switch outcome {
    case .success:
        // A result that arrives after the deadline is late, however it got here: work that
        // ignored cancellation, or a busy machine that ran the timer after the operation.
        guard ContinuousClock.now <= deadline else { throw DeadlineExceeded() }
    case .failure:
        if !Task.isCancelled && ContinuousClock.now >= deadline { throw DeadlineExceeded() }
    }
    return try outcome.get()
}

/// How a deadline's race ended: the operation's outcome, or the timer's error.
private enum RaceEnd<T: Sendable>: Sendable {
    case operation(Result<T, any Error>)
    case timer(any Error)
}

/// Runs `operation` and `timer` as child tasks and returns the operation's outcome, or the
/// timer's ``DeadlineExceeded`` when the timer ends first; the other child is then cancelled
/// and waited for.
///
/// A timer that throws anything else was cancelled with the caller: it decides nothing, and the
/// operation — cancelled too — has the last word. So a stop that comes just as the operation
/// returns keeps what it returned, whichever child the runtime hands back first.
func raceAgainstTimer<T: Sendable>(
    _ operation: @escaping @Sendable () async throws -> T,
    against timer: @escaping @Sendable () async throws -> Never
) async -> Result<T, any Error> {
    await withTaskGroup(of: RaceEnd<T>.self) { group in
        group.addTask {
            do {
                return .operation(.success(try await operation()))
            } catch {
                return .operation(.failure(error))
            }
        }
        group.addTask {
            do {
                try await timer()
            } catch {
                return .timer(error)
            }
        }
        defer { group.cancelAll() }
        while let end = await group.next() {
            switch end {
            case .operation(let outcome):
                return outcome
            case .timer(let error as DeadlineExceeded):
                return .failure(error)
            case .timer:
                continue
            }
        }
        // Both children always end with a value: the operation's comes before this.
        return .failure(CancellationError())
    }
}
