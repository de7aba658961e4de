import Foundation

/// What watch mode reports as it goes.
public enum WatchEvent: Sendable {
    /// A fetch ended; `nextFetch` is the wait before the source's next one (`nil` when stopping).
    case fetched(SourceReport, nextFetch: Duration?)
    /// The `maxFetches` limit was reached: the watcher is stopping.
    case fetchLimitReached
}

/// One source's counts over a watch, for the summary printed at the end.
package struct WatchTally: Sendable, Equatable {
    public var fetches = 0
    public var newItems = 0
    public var failures = 0

    public init() {}
}

extension Watcher {
    /// How a watcher runs: its limits, its start, its stop and its turns.
    public struct Options: Sendable {
        /// Fetches in flight at once, across sources.
        public var maxInFlight = FetchConfig.defaultMaxInFlight
        /// Stop after this many fetches in all.
        public var maxFetches: Int?
        /// First fetches are spread evenly over this long, so a large config does not stampede.
        public var startSpread: Duration = .seconds(1)
        /// How long fetches in flight may finish when stopping, before they are cancelled.
        public var grace: Duration = .seconds(5)
        /// The loop turns at least this often, even with nothing due, and calls ``onTurn``
        /// each time: how a health check or systemd's watchdog learns that the loop itself is
        /// alive. `nil`: it sleeps until the next due fetch.
        public var turnInterval: Duration?
        /// Called at each turn of the loop, on the watcher's executor: keep it short.
        public var onTurn: (@Sendable () -> Void)?

        public init() {}
    }
}

extension SourceConfig {
    /// Whether watch mode fetches it (`interval: never` sources are left out).
    var isWatched: Bool {
        if case .every = settings.interval { return true }
        return false
    }
}
