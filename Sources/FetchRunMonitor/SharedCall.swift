import FetchRunKit

/// A call to the state store that the endpoint's requests share, each waiting for it only so
/// long.
///
/// A store may not answer at all: a PostgreSQL server that is frozen or cut off leaves a query
/// waiting without an error, and a query already sent does not end when its task is cancelled;
/// an SQLite statement waits for another process's lock. `/readyz` must still answer within its
/// limit, and a probe every second must not leave one stuck call behind per probe. So:
///
/// - at most one call is in flight; a request that comes while it runs waits for that call;
/// - a request waits at most until the call is `limit` old, then gets ``NoAnswer`` — at once
///   when the call is already that old — and the call is left to end on its own;
/// - the first request after the call has ended starts a new one, and so does the first after
///   `askAnewAfter`: a call that never ends (a connection the store will never answer on) must
///   not keep the answer at "no answer" once the store is back.
package actor SharedCall<Value: Sendable> {
    /// How long after a call's start its callers stop waiting for it.
    package let limit: Duration
    /// How long after a call's start the next caller gives it up and asks anew.
    package let askAnewAfter: Duration
    private let call: @Sendable () async throws -> Value
    private let clock: any FetchClock
    private var started: ContinuousClock.Instant?
    /// Which call is in flight: the end of one given up must not end its successor.
    private var generation = 0
    private var waiters: [Int: CheckedContinuation<Value, any Error>] = [:]
    private var nextWaiter = 0

    /// - Parameters:
    ///   - limit: how long after its start a call is waited for.
    ///   - askAnewAfter: how long after its start a call that has not ended is given up for a
    ///     new one (at least `limit`).
    ///   - clock: the time of the limits.
    ///   - call: the store call; it runs in a task of its own, which nothing cancels.
    package init(limit: Duration, askAnewAfter: Duration, clock: any FetchClock = SystemClock(), _ call: @escaping @Sendable () async throws -> Value) {
        self.limit = limit
        self.askAnewAfter = max(limit, askAnewAfter)
        self.clock = clock
        self.call = call
    }

    /// What the call in flight returns, or a new call if none is.
    /// - Throws: what the call throws; ``NoAnswer`` once the call is ``limit`` old (the call
    ///   goes on); `CancellationError` when the caller is cancelled first (the call goes on,
    ///   for the next caller).
    package func value() async throws -> Value {
        try Task.checkCancellation()
        let now = clock.now
        // Every earlier caller of a call that old has stopped waiting for it (limit ≤ askAnewAfter).
        if let started = self.started, now - started >= askAnewAfter { self.started = nil }
        let started = self.started ?? start(at: now)
        let waited = now - started
        guard waited < limit else { throw NoAnswer(waited: waited, limit: limit) }
        let id = nextWaiter
        nextWaiter += 1
        return try await withTaskCancellationHandler {
            // Runs on this actor before the caller suspends (the continuation's body and the
            // handler's operation inherit its isolation), so the waiter is in `waiters` before
            // anything below can look for it.
            try await withCheckedThrowingContinuation { continuation in
                waiters[id] = continuation
                let remaining = limit - waited, clock = clock
                Task {
                    try? await clock.sleep(for: remaining)
                    self.giveUp(id, error: NoAnswer(waited: clock.now - started, limit: self.limit))
                }
            }
        } onCancel: {
            Task { await self.giveUp(id, error: CancellationError()) }
        }
    }

    /// Callers waiting for the call in flight.
    var waiting: Int { waiters.count }

    /// Whether a call is in flight.
    var isCalling: Bool { started != nil }

    private func start(at now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        started = now
        generation += 1
        let call = self.call, generation = self.generation
        Task {
            let result: Result<Value, any Error>
            do {
                result = .success(try await call())
            } catch {
                result = .failure(error)
            }
            self.finish(generation, with: result)
        }
        return now
    }

    private func finish(_ ended: Int, with result: Result<Value, any Error>) {
        guard ended == generation else { return }
        started = nil
        let waiting = waiters
        waiters = [:]
        for continuation in waiting.values { continuation.resume(with: result) }
    }

    /// Ends one caller's wait, unless the call's end has already answered it.
    private func giveUp(_ id: Int, error: any Error) {
        waiters.removeValue(forKey: id)?.resume(throwing: error)
    }
}

/// A store call that had not answered within its limit (``SharedCall``).
package struct NoAnswer: Error, CustomStringConvertible {
    /// How long the call had been waiting when the caller stopped waiting for it.
    package var waited: Duration
    package var limit: Duration

    package var description: String {
        // A call stuck long before this caller came says so: the store has been gone a while.
        waited < limit + .seconds(1)
            ? "no answer within \(DurationText.format(limit))"
            : "no answer within \(DurationText.format(limit)); asked \(DurationText.format(.seconds(waited.components.seconds))) ago and still waiting"
    }
}
