/// When watch mode fetches a source next — the rules iOS applies to background fetches.
///
/// - New data: back to `interval`.
/// - No data: the interval stretches ×1.5 each time, up to `maxInterval` (default 4× `interval`),
///   as iOS wakes an app less often when it keeps finding nothing.
/// - Failure: exponential backoff from `interval` (×2 per consecutive failure), ±20 % jitter so
///   that sources failing together do not retry together, capped at `maxBackoff`; a server's
///   `Retry-After` is honoured when it asks for longer. A source is never given up for good.
package struct FetchSchedule: Sendable, Equatable {
    package let interval: Duration
    package let maxInterval: Duration
    package let maxBackoff: Duration
    /// The wait after a fetch with no data; grows while nothing new arrives.
    package private(set) var currentInterval: Duration
    package private(set) var consecutiveFailures = 0

    /// `Retry-After` is honoured up to a day; a longer one is more likely a mistake than a plan.
    static let longestRetryAfter = HTTPResponse.longestRetryAfter

    package init(interval: Duration, maxInterval: Duration? = nil, maxBackoff: Duration = .seconds(3600)) {
        self.interval = interval
        self.maxInterval = max(interval, maxInterval ?? interval * 4)
        self.maxBackoff = max(interval, maxBackoff)
        currentInterval = interval
    }

    /// A schedule carried on from a recorded state (the state database's, across runs):
    /// the stretched interval and the failures so far, kept within the settings' bounds.
    package init(interval: Duration, maxInterval: Duration?, maxBackoff: Duration, resuming currentInterval: Duration?, consecutiveFailures: Int) {
        self.init(interval: interval, maxInterval: maxInterval, maxBackoff: maxBackoff)
        if let currentInterval { self.currentInterval = min(max(currentInterval, interval), self.maxInterval) }
        // A recorded count comes from a file anyone with the folder can write: kept in reason.
        self.consecutiveFailures = min(max(0, consecutiveFailures), 1 << 20)
    }

    /// How long to wait after a fetch that ended with `outcome`.
    /// - Parameters:
    ///   - jitter: a number in -1...1 (random in watch mode); it moves a backoff by up to ±20 %.
    ///   - freshFor: how long the server said its answer stays fresh (Cache-Control max-age,
    ///     Expires): a success waits at least that long, up to `maxInterval` — the user's bound
    ///     on how stale a source may get.
    package mutating func delay(after outcome: SourceOutcome, jitter: Double, freshFor: Duration? = nil) -> Duration {
        let fresh = freshFor.map { min($0, maxInterval) } ?? .zero
        switch outcome {
        case .newData:
            consecutiveFailures = 0
            currentInterval = interval
            return max(interval, fresh)
        case .noData:
            consecutiveFailures = 0
            currentInterval = min(currentInterval * 1.5, maxInterval)
            return max(currentInterval, fresh)
        case .failed(let failure):
            consecutiveFailures = min(consecutiveFailures, 1 << 20) + 1
            // 2^(n-1), without overflowing for a source that has failed a thousand times.
            let doublings = min(consecutiveFailures - 1, 30)
            let backoff = min(interval * Double(1 << doublings), maxBackoff)
            let jittered = min(backoff * (1 + 0.2 * max(-1, min(1, jitter))), maxBackoff)
            guard let retryAfter = failure.retryAfter else { return jittered }
            return max(jittered, min(retryAfter, Self.longestRetryAfter))
        }
    }
}
