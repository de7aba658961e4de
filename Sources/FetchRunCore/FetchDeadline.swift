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
package actor FetchDeadline {
    /// The clock the deadline runs on.
    package nonisolated let clock: any FetchClock
    private var end: ContinuousClock.Instant
    /// The end it was made with: the earliest it can pass, since the end only moves later.
    package nonisolated let firstEnd: ContinuousClock.Instant
    private var pausedSince: ContinuousClock.Instant?
    private var pauses = 0
    private var queueWait: Duration = .zero
    private var queueHost: String?
    /// How long the fetch waited for host slots in all, and the host of the last wait: read
    /// together, in one hop to the actor.
    package var queued: (wait: Duration, host: String?) { (queueWait, queueHost) }

    package init(_ end: ContinuousClock.Instant, clock: any FetchClock) {
        self.clock = clock
        self.end = end
        firstEnd = end
    }

    /// How long is left before the deadline passes if the clock runs from now on; zero once
    /// it has passed.
    package var remaining: Duration {
        max(.zero, projectedEnd - clock.now)
    }

    /// Stops the clock until a matching ``resume(afterWaitingFor:)``.
    package func pause() {
        if pauses == 0 { pausedSince = clock.now }
        pauses += 1
    }

    /// Starts the clock again; the deadline moves by the time it stood still.
    package func resume(afterWaitingFor host: String) {
        guard pauses > 0 else { return }
        pauses -= 1
        guard pauses == 0, let since = pausedSince else { return }
        let waited = clock.now - since
        end += waited
        pausedSince = nil
        if waited > .zero {
            queueWait += waited
            queueHost = host
        }
    }

    /// When the deadline passes if the clock runs from now on.
    package var projectedEnd: ContinuousClock.Instant {
        guard let since = pausedSince else { return end }
        return end + (clock.now - since)
    }

    package var isPaused: Bool { pauses > 0 }

    package var hasPassed: Bool { pauses == 0 && clock.now >= end }
}

/// Runs `operation` in a task of its own under `deadline`, which may move while the operation
/// waits for a host slot; otherwise as ``withDeadline(_:operation:)-(ContinuousClock.Instant,_)``.
package func withDeadline<T: Sendable>(
    _ deadline: FetchDeadline,
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    // Armed for the first end, the earliest the deadline can pass (nothing has moved it unless
    // it was paused before): no hop to the deadline here, and the alarm looks again anyway.
    let clock = deadline.clock
    let outcome = await runCancellable(operation, on: clock) { task in
        clock.schedule(at: deadline.firstEnd) { alarm in
            // The end moves while the fetch waits for its host: look again before cancelling,
            // and while it waits, not more often than ten times a second. Rare (the alarm
            // went off), so a task of its own is no cost.
            Task {
                if await deadline.hasPassed { return task.cancel() }
                let end = await deadline.projectedEnd
                clock.reschedule(alarm, at: await deadline.isPaused ? max(end, clock.now + .milliseconds(100)) : end)
            }
        }
    }
    // Late is late, however the operation ended (see the instant-deadline version).
    if !Task.isCancelled, await deadline.hasPassed { throw DeadlineExceeded() }
    return try outcome.get()
}
