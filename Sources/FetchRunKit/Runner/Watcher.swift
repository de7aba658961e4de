/// What watch mode reports as it goes.
public enum WatchEvent: Sendable {
    /// A fetch ended; `nextFetch` is the wait before the source's next one (`nil` when stopping).
    case fetched(SourceReport, nextFetch: Duration?)
    /// The `maxFetches` limit was reached: the watch should stop.
    case fetchLimitReached
}

/// One source's counts over a watch, for the summary printed at the end.
public struct WatchTally: Sendable, Equatable {
    public var fetches = 0
    public var newItems = 0
    public var failures = 0

    public init() {}
}

/// Fetches every source again and again on its own schedule (``FetchSchedule``), each fetch a
/// ``FetchRunner/fetch(_:)`` that writes the snapshot, and reports each one as a ``WatchEvent``.
///
/// Each source has one task that sleeps until its next fetch on the injected clock — no
/// polling — so two fetches of one source never overlap; a shared limiter holds fetches in
/// flight to `maxInFlight`. Stopping is graceful: no new fetches, those in flight get a grace
/// period, then everything is cancelled.
public actor Watcher<C: Clock> where C.Duration == Duration {
    public struct Options: Sendable {
        /// Fetches in flight at once, across sources.
        public var maxInFlight = FetchConfig.defaultMaxInFlight
        /// Stop after this many fetches in all.
        public var maxFetches: Int?
        /// First fetches are spread evenly over this long, so a large config does not stampede.
        public var startSpread: Duration = .seconds(1)

        public init() {}
    }

    private let runner: FetchRunner
    private let clock: C
    private let options: Options
    private let limiter: InFlightLimiter
    private let events: AsyncStream<WatchEvent>.Continuation
    private let jitter: @Sendable () -> Double

    private var sources: [String: SourceConfig] = [:]
    private var tasks: [String: Task<Void, Never>] = [:]
    private var inFlight: Set<String> = []
    private var started = 0
    private var completed = 0
    public private(set) var isStopping = false
    public private(set) var tallies: [String: WatchTally] = [:]

    public init(runner: FetchRunner, clock: C, options: Options = Options(), events: AsyncStream<WatchEvent>.Continuation,
                jitter: @escaping @Sendable () -> Double = { Double.random(in: -1...1) }) {
        self.runner = runner
        self.clock = clock
        self.options = options
        self.limiter = InFlightLimiter(limit: options.maxInFlight)
        self.events = events
        self.jitter = jitter
    }

    /// Starts watching `sources` (those with `interval: never` are left out); first fetches are
    /// spread over ``Options/startSpread``.
    public func start(_ sources: [SourceConfig]) {
        let watched = sources.filter { if case .every = $0.settings.interval { return true } else { return false } }
        for (index, source) in watched.enumerated() {
            let offset = watched.count > 1 ? options.startSpread * (Double(index) / Double(watched.count)) : .zero
            launch(source, after: offset)
        }
    }

    /// Applies a new config: added sources start, removed ones stop, changed ones restart.
    /// Returns the names of each.
    public func reload(_ newSources: [SourceConfig]) -> (added: [String], removed: [String], changed: [String]) {
        let watched = newSources.filter { if case .every = $0.settings.interval { return true } else { return false } }
        let names = Set(watched.map(\.name))
        var added: [String] = [], removed: [String] = [], changed: [String] = []
        for name in sources.keys.sorted() where !names.contains(name) {
            tasks.removeValue(forKey: name)?.cancel()
            sources.removeValue(forKey: name)
            removed.append(name)
        }
        for source in watched {
            var previous: Task<Void, Never>?
            if let old = sources[source.name] {
                guard old.fingerprint != source.fingerprint else { continue }
                previous = tasks.removeValue(forKey: source.name)
                previous?.cancel()
                changed.append(source.name)
            } else {
                added.append(source.name)
            }
            launch(source, after: .zero, once: previous)
        }
        return (added, removed, changed)
    }

    /// Stops scheduling, lets fetches in flight finish for up to `grace`, then cancels them,
    /// and returns once every source's task has ended.
    public func stop(grace: Duration) async {
        isStopping = true
        for (name, task) in tasks where !inFlight.contains(name) { task.cancel() }
        let all = Array(tasks.values)
        let clock = self.clock
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for task in all { await task.value }
            }
            group.addTask {
                // If the grace runs out, cancel what is still in flight; the first child then ends.
                guard (try? await clock.sleep(until: clock.now.advanced(by: grace), tolerance: nil)) != nil else { return }
                for task in all { task.cancel() }
            }
            await group.next()
            group.cancelAll()
        }
        tasks.removeAll()
    }

    /// Cancels everything at once (a second Ctrl-C).
    public func cancelAll() {
        isStopping = true
        for task in tasks.values { task.cancel() }
    }

    // MARK: One source

    /// Starts a source's task; with `previous`, only once that task (the source's old
    /// configuration, being cancelled) has ended, so that two fetches never overlap.
    private func launch(_ source: SourceConfig, after delay: Duration, once previous: Task<Void, Never>? = nil) {
        guard case .every(let interval) = source.settings.interval else { return }
        sources[source.name] = source
        let schedule = FetchSchedule(interval: interval, maxInterval: source.settings.maxInterval, maxBackoff: source.settings.maxBackoff)
        let first = clock.now.advanced(by: delay)
        tasks[source.name] = Task {
            await previous?.value
            await self.watch(source, schedule: schedule, firstFetch: first)
        }
    }

    /// The life of one source: sleep, fetch, report, reschedule — until cancelled or stopping.
    private nonisolated func watch(_ source: SourceConfig, schedule: FetchSchedule, firstFetch: C.Instant) async {
        var schedule = schedule
        var next = firstFetch
        while true {
            do {
                try await clock.sleep(until: next, tolerance: nil)
            } catch {
                return
            }
            guard await begin(source.name) else { return }
            do {
                try await limiter.acquire()
            } catch {
                await abandon()
                return
            }
            await markInFlight(source.name)
            let report = await runner.fetch(source)
            await limiter.release()
            let delay = schedule.delay(after: report.outcome, jitter: jitter())
            guard await finish(report, nextFetch: delay) else { return }
            next = clock.now.advanced(by: delay)
        }
    }

    /// Whether a new fetch may start; counts it when it may.
    private func begin(_ name: String) -> Bool {
        guard !isStopping, !Task.isCancelled else { return false }
        if let limit = options.maxFetches, started >= limit { return false }
        started += 1
        return true
    }

    /// A counted fetch that never started (cancelled while waiting for a place).
    private func abandon() {
        started -= 1
    }

    private func markInFlight(_ name: String) {
        inFlight.insert(name)
    }

    /// Records and reports a fetch; `false` when the source should not fetch again.
    private func finish(_ report: SourceReport, nextFetch: Duration) -> Bool {
        inFlight.remove(report.name)
        completed += 1
        var tally = tallies[report.name] ?? WatchTally()
        tally.fetches += 1
        tally.newItems += report.outcome.newItems.count
        if report.outcome.failure != nil { tally.failures += 1 }
        tallies[report.name] = tally
        let continuing = !isStopping && !Task.isCancelled
        events.yield(.fetched(report, nextFetch: continuing ? nextFetch : nil))
        if let limit = options.maxFetches, completed >= limit {
            events.yield(.fetchLimitReached)
            return false
        }
        return continuing
    }
}
