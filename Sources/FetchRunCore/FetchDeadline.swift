/// A fetch's deadline that stands still while the fetch waits in fetchrun's own per-host queue.
///
/// A source's `deadline` bounds its own request: time spent waiting for its host's slot (other
/// sources' requests to the same host, `min_delay`, a host-wide back-off) is fetchrun's doing,
/// not the source's, and has its own bound (`http.queue_timeout`). The runner makes one per
/// fetch and hands it to the adapter in its context (``FetchContext/budget``); a request
/// carries it (``HTTPRequest/budget``), and ``CurlHTTPClient`` pauses it around the wait for a
/// host slot. Passed, not found: no task-local says which fetch a request belongs to.
///
/// Its time is its clock's: the pauses, the end and the alarm that cancels the fetch all read
/// the one clock it was made with.
package final class FetchDeadline: Sendable {
    /// The clock the deadline runs on.
    package let clock: any FetchClock
    /// The end it was made with: the earliest it can pass, since the end only moves later.
    package let firstEnd: ContinuousClock.Instant

    private struct State {
        var end: ContinuousClock.Instant
        var pausedSince: ContinuousClock.Instant?
        var pauses = 0
        var queueWait: Duration = .zero
        var queueHost: String?
    }

    // Read synchronously — by an adapter asking for its `remaining`, by the alarm — and changed
    // only around a wait for a host slot: a lock, not an actor's hops.
    private let state: Locked<State>

    package init(_ end: ContinuousClock.Instant, clock: any FetchClock) {
        self.clock = clock
        firstEnd = end
        state = Locked(State(end: end))
    }

    /// How long the fetch waited for host slots in all, and the host of the last wait.
    package var queued: (wait: Duration, host: String?) {
        state.withLock { ($0.queueWait, $0.queueHost) }
    }

    /// How long is left before the deadline passes if the clock runs from now on; zero once
    /// it has passed.
    package var remaining: Duration {
        max(.zero, projectedEnd - clock.now)
    }

    /// Stops the clock until a matching ``resume(afterWaitingFor:)``.
    package func pause() {
        let now = clock.now
        state.withLock { state in
            if state.pauses == 0 { state.pausedSince = now }
            state.pauses += 1
        }
    }

    /// Starts the clock again; the deadline moves by the time it stood still.
    package func resume(afterWaitingFor host: String) {
        let now = clock.now
        state.withLock { state in
            guard state.pauses > 0 else { return }
            state.pauses -= 1
            guard state.pauses == 0, let since = state.pausedSince else { return }
            let waited = now - since
            state.end += waited
            state.pausedSince = nil
            if waited > .zero {
                state.queueWait += waited
                state.queueHost = host
            }
        }
    }

    /// When the deadline passes if the clock runs from now on.
    package var projectedEnd: ContinuousClock.Instant {
        let now = clock.now
        return state.withLock { state in
            guard let since = state.pausedSince else { return state.end }
            return state.end + (now - since)
        }
    }

    package var isPaused: Bool { state.withLock { $0.pauses > 0 } }

    package var hasPassed: Bool {
        let now = clock.now
        return state.withLock { $0.pauses == 0 && now >= $0.end }
    }
}

/// Runs `operation` in a task of its own under `deadline`, which may move while the operation
/// waits for a host slot; otherwise as ``withDeadline(_:operation:)-(ContinuousClock.Instant,_)``.
package func withDeadline<T: Sendable>(
    _ deadline: FetchDeadline,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    // Armed for the first end, the earliest the deadline can pass (nothing has moved it unless
    // it was paused before): the alarm looks again when it goes off.
    let clock = deadline.clock
    let outcome = await runCancellable(operation, on: clock) { task in
        clock.schedule(at: deadline.firstEnd) { alarm in
            // The end moves while the fetch waits for its host: look again before cancelling,
            // and while it waits, not more often than ten times a second.
            if deadline.hasPassed { return task.cancel() }
            let end = deadline.projectedEnd
            clock.reschedule(alarm, at: deadline.isPaused ? max(end, clock.now + .milliseconds(100)) : end)
        }
    }
    // Late is late, however the operation ended (see the instant-deadline version).
    if !Task.isCancelled, deadline.hasPassed { throw DeadlineExceeded() }
    return try outcome.get()
}
