import Synchronization

/// Waits for `task` until `deadline` (on `clock`) without cancelling it when the deadline comes first.
///
/// For work whose result must not be lost even when it is late: a lease query that a slow
/// state store answers after the caller gave up has taken its leases all the same, so the
/// caller keeps the task and asks again later instead of sending another query.
/// - Returns: the task's value, or `nil` when `deadline` passed first (the task runs on).
/// - Throws: what the task threw.
package func value<T: Sendable>(of task: Task<T, any Error>, before deadline: ContinuousClock.Instant, on clock: any FetchClock) async throws -> T? {
    let first = FirstAnswer<Result<T, any Error>?>()
    let (answer, timer) = await withCheckedContinuation { (continuation: CheckedContinuation<(Result<T, any Error>?, Task<Void, Never>), Never>) in
        let timer = Task {
            try? await clock.sleep(until: deadline)
            first.give(nil)
        }
        first.wait { continuation.resume(returning: ($0, timer)) }
        Task { first.give(await task.result) }
    }
    timer.cancel()
    return try answer?.get()
}

/// Hands the first of several answers to one waiter; later ones are dropped.
private final class FirstAnswer<Answer: Sendable>: Sendable {
    private struct State {
        var answer: Answer?
        var answered = false
        var waiter: (@Sendable (Answer) -> Void)?
    }

    private let state = Mutex(State())

    func wait(_ waiter: @escaping @Sendable (Answer) -> Void) {
        let ready: Answer?? = state.withLock { state in
            if state.answered { return .some(state.answer) }
            state.waiter = waiter
            return .none
        }
        if case .some(let answer) = ready { waiter(answer!) }
    }

    func give(_ answer: Answer) {
        let waiter: (@Sendable (Answer) -> Void)? = state.withLock { state in
            guard !state.answered else { return nil }
            state.answered = true
            state.answer = answer
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?(answer)
    }
}
