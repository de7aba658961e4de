import Foundation
import ServiceLifecycle

/// What watch mode reports as it goes.
public enum WatchEvent: Sendable {
    /// A fetch ended; `nextFetch` is the wait before the source's next one (`nil` when stopping).
    case fetched(SourceReport, nextFetch: Duration?)
    /// The `maxFetches` limit was reached: the watcher is stopping.
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
/// ``FetchRunner/fetch(_:)`` that writes the snapshot, and reports each one on ``events``.
///
/// A `Service`: ``run()`` owns one task group with a task per source, which sleeps until its
/// next fetch on the injected clock — no polling — so two fetches of one source never overlap;
/// a shared limiter holds fetches in flight to `maxInFlight`.
///
/// Stopping:
/// - Graceful shutdown (a `ServiceGroup`'s, or ``stop()``), or `maxFetches` reached: no new
///   fetches; those in flight get ``Options/grace`` on the clock, then are cancelled.
/// - Cancellation of the task running ``run()``: fetches in flight are cancelled at once.
/// Either way every fetch that ends is reported, and ``events`` finishes when ``run()`` returns.
public actor Watcher<C: Clock>: Service where C.Duration == Duration {
    public struct Options: Sendable {
        /// Fetches in flight at once, across sources.
        public var maxInFlight = FetchConfig.defaultMaxInFlight
        /// Stop after this many fetches in all.
        public var maxFetches: Int?
        /// First fetches are spread evenly over this long, so a large config does not stampede.
        public var startSpread: Duration = .seconds(1)
        /// How long fetches in flight may finish when stopping, before they are cancelled.
        public var grace: Duration = .seconds(5)

        public init() {}
    }

    /// Every fetch as it ends; finishes when ``run()`` returns.
    public nonisolated let events: AsyncStream<WatchEvent>
    private let eventSink: AsyncStream<WatchEvent>.Continuation

    private let runner: FetchRunner
    private let clock: C
    private let options: Options
    private let limiter: InFlightLimiter
    private let jitter: @Sendable () -> Double

    /// What the task group in ``run()`` is asked to do; buffered until it runs.
    private enum Command: Sendable {
        case launch(SourceConfig, after: Duration, resuming: SourceState?, stopped: AsyncStream<Void>)
        case stop
    }
    private nonisolated let commands: AsyncStream<Command>
    private let commandSink: AsyncStream<Command>.Continuation
    /// Finishes when stopping and no source's task is left.
    private nonisolated let allEnded: AsyncStream<Void>
    private let allEndedSink: AsyncStream<Void>.Continuation

    /// The sources being watched, each with the signal that ends its task.
    private var sources: [String: (config: SourceConfig, stop: AsyncStream<Void>.Continuation)]
    /// Changed sources waiting for their old task to end before they start.
    private var replacements: [String: SourceConfig] = [:]
    private var inFlight: Set<String> = []
    private var liveTasks = 0
    private var started = 0
    private var completed = 0
    public private(set) var isStopping = false
    public private(set) var tallies: [String: WatchTally] = [:]

    /// - Parameters:
    ///   - sources: what to watch; those with `interval: never` are left out.
    ///   - states: what the state database recorded, so that a restarted watch carries on:
    ///     a source is first fetched at its recorded due time (at once if that has passed, or
    ///     if it was never fetched), with its stretched interval and failures so far.
    ///   - jitter: a number in -1...1 per fetch that spreads its next one (see ``FetchSchedule``).
    public init(sources: [SourceConfig], runner: FetchRunner, clock: C, options: Options = Options(), resuming states: [String: SourceState] = [:],
                jitter: @escaping @Sendable () -> Double = { Double.random(in: -1...1) }) {
        self.runner = runner
        self.clock = clock
        self.options = options
        self.limiter = InFlightLimiter(limit: options.maxInFlight)
        self.jitter = jitter
        (events, eventSink) = AsyncStream<WatchEvent>.makeStream()
        (commands, commandSink) = AsyncStream<Command>.makeStream()
        (allEnded, allEndedSink) = AsyncStream<Void>.makeStream()
        // Launched now, so that a reload before run() compares with them; they start with run().
        let watched = sources.filter(\.isWatched)
        var launched: [String: (config: SourceConfig, stop: AsyncStream<Void>.Continuation)] = [:]
        let now = Date()
        for (index, source) in watched.enumerated() {
            var delay = watched.count > 1 ? options.startSpread * (Double(index) / Double(watched.count)) : .zero
            let state = states[source.name]
            if let due = state?.nextDue, due > now {
                delay = max(delay, .milliseconds(Int64(min(due.timeIntervalSince(now), 366 * 86_400) * 1000)))
            }
            let (stopped, stop) = AsyncStream<Void>.makeStream()
            launched[source.name] = (source, stop)
            commandSink.yield(.launch(source, after: delay, resuming: state, stopped: stopped))
        }
        self.sources = launched
    }

    /// Watches until stopped (see the type's documentation); first fetches are spread over
    /// ``Options/startSpread``.
    public func run() async {
        let commandSink = self.commandSink
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for await command in commands {
                    switch command {
                    case .launch(let source, let delay, let state, let stopped):
                        liveTasks += 1
                        group.addTask { await self.watch(source, firstFetch: delay, resuming: state, until: stopped) }
                    case .stop:
                        beginStopping()
                        commandSink.finish()
                    }
                }
                group.addTask { await self.graceThenStopEverySource() }
            }
        } onGracefulShutdown: {
            commandSink.yield(.stop)
        }
        eventSink.finish()
    }

    /// Stops as a graceful shutdown would: no new fetches, the grace for those in flight.
    public func stop() {
        commandSink.yield(.stop)
    }

    /// Applies a new config: added sources start, removed ones stop, changed ones restart
    /// (once a fetch of the old one in flight has ended). Returns the names of each.
    public func reload(_ newSources: [SourceConfig]) -> (added: [String], removed: [String], changed: [String]) {
        guard !isStopping else { return ([], [], []) }
        let watched = newSources.filter(\.isWatched)
        let names = Set(watched.map(\.name))
        var added: [String] = [], removed: [String] = [], changed: [String] = []
        for name in sources.keys.sorted() where !names.contains(name) {
            sources.removeValue(forKey: name)?.stop.finish()
            replacements.removeValue(forKey: name)
            removed.append(name)
        }
        for source in watched {
            if let old = sources[source.name] {
                guard old.config.fingerprint != source.fingerprint else { continue }
                replacements[source.name] = source
                old.stop.finish()
                changed.append(source.name)
            } else {
                added.append(source.name)
                launch(source, after: .zero)
            }
        }
        return (added, removed, changed)
    }

    // MARK: One source

    private func launch(_ source: SourceConfig, after delay: Duration) {
        let (stopped, stop) = AsyncStream<Void>.makeStream()
        sources[source.name] = (source, stop)
        commandSink.yield(.launch(source, after: delay, resuming: nil, stopped: stopped))
    }

    /// A source's task: its fetch loop, ended early when `stopped` finishes (removed, changed,
    /// or the grace ran out) — which cancels a fetch in flight.
    private nonisolated func watch(_ source: SourceConfig, firstFetch delay: Duration, resuming state: SourceState?, until stopped: AsyncStream<Void>) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.fetchLoop(source, firstFetch: self.clock.now.advanced(by: delay), resuming: state) }
            group.addTask { for await _ in stopped {} }
            await group.next()
            group.cancelAll()
        }
        await ended(source)
    }

    /// Sleep, fetch, report, reschedule — until cancelled or stopping.
    private nonisolated func fetchLoop(_ source: SourceConfig, firstFetch: C.Instant, resuming state: SourceState?) async {
        guard case .every(let interval) = source.settings.interval else { return }
        var schedule = FetchSchedule(
            interval: interval, maxInterval: source.settings.maxInterval, maxBackoff: source.settings.maxBackoff,
            resuming: state?.currentInterval, consecutiveFailures: state?.consecutiveFailures ?? 0
        )
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
                await abandon(source.name)
                return
            }
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
        inFlight.insert(name)
        return true
    }

    /// A counted fetch that never started (cancelled while waiting for a place).
    private func abandon(_ name: String) {
        started -= 1
        inFlight.remove(name)
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
        eventSink.yield(.fetched(report, nextFetch: continuing ? nextFetch : nil))
        if let limit = options.maxFetches, completed >= limit {
            eventSink.yield(.fetchLimitReached)
            commandSink.yield(.stop)
            return false
        }
        return continuing
    }

    /// A source's task has ended: a changed source starts again with its new settings.
    private func ended(_ source: SourceConfig) {
        liveTasks -= 1
        if isStopping, liveTasks == 0 { allEndedSink.finish() }
        guard let replacement = replacements.removeValue(forKey: source.name), !isStopping else { return }
        launch(replacement, after: .zero)
    }

    /// No new fetches from here on; sources not fetching now end at once.
    private func beginStopping() {
        guard !isStopping else { return }
        isStopping = true
        replacements.removeAll()
        for (name, source) in sources where !inFlight.contains(name) { source.stop.finish() }
        if liveTasks == 0 { allEndedSink.finish() }
    }

    /// While stopping: fetches in flight get the grace, then are cancelled — unless every
    /// source's task ends first.
    private nonisolated func graceThenStopEverySource() async {
        let clock = self.clock, grace = options.grace, allEnded = self.allEnded
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                guard (try? await clock.sleep(until: clock.now.advanced(by: grace), tolerance: nil)) != nil else { return }
                await self.stopEverySource()
            }
            group.addTask { for await _ in allEnded {} }
            await group.next()
            group.cancelAll()
        }
    }

    private func stopEverySource() {
        for source in sources.values { source.stop.finish() }
    }
}

extension SourceConfig {
    /// Whether watch mode fetches it (`interval: never` sources are left out).
    var isWatched: Bool {
        if case .every = settings.interval { return true }
        return false
    }
}
