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
/// A `Service`: ``run()`` owns one task group. Waiting sources cost no task: they wait in a
/// queue ordered by due time, and one timer on the injected clock sleeps until the first of
/// them — no polling. A task exists only for a fetch in flight, at most `maxInFlight` of them,
/// so two fetches of one source never overlap and a watch of 100,000 sources holds 100,000
/// queue entries, not 100,000 sleeping tasks.
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

    /// What fetches from now on run with; each fetch takes the one of its start (a reload may
    /// change the outputs meanwhile).
    private var runner: FetchRunner
    private let clock: C
    private let options: Options
    /// `options.maxInFlight`, until a reload changes it.
    private var maxInFlight: Int
    private let jitter: @Sendable () -> Double

    /// What the task group in ``run()`` is asked to do; buffered until it runs.
    private enum Command: Sendable {
        case fetch(SourceConfig, runner: FetchRunner, generation: Int, stopped: AsyncStream<Void>)
        case stop
    }
    private nonisolated let commands: AsyncStream<Command>
    private let commandSink: AsyncStream<Command>.Continuation
    /// Finishes when stopping and no fetch is left in flight.
    private nonisolated let allEnded: AsyncStream<Void>
    private let allEndedSink: AsyncStream<Void>.Continuation

    /// One watched source: its settings, its schedule so far, and — while it is being
    /// fetched — the signal that cancels that fetch.
    private struct Watched {
        var config: SourceConfig
        var schedule: FetchSchedule
        /// Changes when the source is replaced, so that its old queue entry and a fetch of the
        /// old settings are recognised as stale.
        var generation: Int
        var stopFetch: AsyncStream<Void>.Continuation?
    }

    private var watched: [String: Watched] = [:]
    private var dueQueue = DueQueue<C.Instant, (name: String, generation: Int)>()
    private var nextGeneration = 0
    /// Changed sources waiting for a fetch of their old settings to end before they start.
    private var replacements: [String: SourceConfig] = [:]
    private var inFlight = 0
    private var started = 0
    private var completed = 0
    public private(set) var isStopping = false
    public private(set) var tallies: [String: WatchTally] = [:]

    /// What the timer sleeps until; `nil` while it waits to be woken.
    private var timerTarget: C.Instant?
    private var timerWakeUp: CheckedContinuation<Void, Never>?
    private var timerWakeUpPending = false

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
        self.maxInFlight = options.maxInFlight
        self.jitter = jitter
        (events, eventSink) = AsyncStream<WatchEvent>.makeStream()
        (commands, commandSink) = AsyncStream<Command>.makeStream()
        (allEnded, allEndedSink) = AsyncStream<Void>.makeStream()
        // Queued now, so that a reload before run() compares with them; they start with run().
        let sources = sources.filter(\.isWatched)
        let start = clock.now, wallStart = Date()
        for (index, source) in sources.enumerated() {
            var delay = sources.count > 1 ? options.startSpread * (Double(index) / Double(sources.count)) : .zero
            let state = states[source.name]
            if let due = state?.nextDue, due > wallStart {
                delay = max(delay, .milliseconds(Int64(min(due.timeIntervalSince(wallStart), 366 * 86_400) * 1000)))
            }
            let generation = nextGeneration
            nextGeneration += 1
            watched[source.name] = Watched(config: source, schedule: source.schedule(resuming: state), generation: generation)
            dueQueue.insert((source.name, generation), due: start.advanced(by: delay))
        }
    }

    /// Watches until stopped (see the type's documentation); first fetches are spread over
    /// ``Options/startSpread``.
    public func run() async {
        let commandSink = self.commandSink
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.runTimer() }
                for await command in commands {
                    switch command {
                    case .fetch(let source, let runner, let generation, let stopped):
                        guard !isStopping, !Task.isCancelled else {
                            abandon(source.name)
                            continue
                        }
                        group.addTask { await self.fetch(source, with: runner, generation: generation, until: stopped) }
                    case .stop:
                        beginStopping()
                        commandSink.finish()
                    }
                }
                // Cancelled: the loop ended without a stop command; the fetches in flight are
                // cancelled with the group, and the timer must end too.
                if Task.isCancelled { beginStopping() }
                group.addTask { await self.graceThenStopEveryFetch() }
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
        let newSources = newSources.filter(\.isWatched)
        let names = Set(newSources.map(\.name))
        var added: [String] = [], removed: [String] = [], changed: [String] = []
        for name in watched.keys.sorted() where !names.contains(name) {
            // Its queue entry goes stale; a fetch in flight is cancelled.
            watched.removeValue(forKey: name)?.stopFetch?.finish()
            replacements.removeValue(forKey: name)
            removed.append(name)
        }
        for source in newSources {
            if let old = watched[source.name] {
                guard old.config.fingerprint != source.fingerprint else { continue }
                changed.append(source.name)
                if let stopFetch = old.stopFetch {
                    // The fetch in flight is of the old settings: cancelled, and not rescheduled.
                    watched[source.name]?.generation = nextGeneration
                    nextGeneration += 1
                    replacements[source.name] = source
                    stopFetch.finish()
                } else {
                    startAnew(source)
                }
            } else {
                added.append(source.name)
                startAnew(source)
            }
        }
        dispatchDueFetches()
        return (added, removed, changed)
    }

    /// Applies the parts of a reloaded config that are not sources: the outputs that fetches
    /// route new items and alerts to, and how many fetches may be in flight at once. Fetches
    /// already in flight keep the outputs they started with; a lower limit lets them end.
    public func reconfigure(outputs: [OutputConfig], maxInFlight: Int) {
        runner.outputs = outputs
        self.maxInFlight = max(1, maxInFlight)
        dispatchDueFetches()
    }

    // MARK: Scheduling

    /// Watches `source` from scratch (a fresh schedule), fetching it at once.
    private func startAnew(_ source: SourceConfig) {
        let generation = nextGeneration
        nextGeneration += 1
        watched[source.name] = Watched(config: source, schedule: source.schedule(resuming: nil), generation: generation)
        dueQueue.insert((source.name, generation), due: clock.now)
    }

    /// Starts every fetch that is due, as far as `maxInFlight` allows, and sets the timer for
    /// the next one — waking it if that is sooner than it sleeps.
    private func dispatchDueFetches() {
        guard !isStopping else { return wakeTimer() }
        let now = clock.now
        while inFlight < maxInFlight {
            dueQueue.removeFirst(while: isStale)
            guard let next = dueQueue.first, next.due <= now else { break }
            if let limit = options.maxFetches, started >= limit { break }
            dueQueue.removeFirst()
            guard var source = watched[next.element.name] else { continue }
            let (stopped, stopFetch) = AsyncStream<Void>.makeStream()
            source.stopFetch = stopFetch
            watched[next.element.name] = source
            inFlight += 1
            started += 1
            commandSink.yield(.fetch(source.config, runner: runner, generation: source.generation, stopped: stopped))
        }
        if let target = nextTimerTarget, timerTarget.map({ target < $0 }) ?? true { wakeTimer() }
    }

    /// When the timer should next dispatch: the first due time, unless no fetch could start
    /// then — every place taken (the next fetch to end dispatches again), or `maxFetches`
    /// started (the watcher is about to stop) — which would only wake it to do nothing.
    private var nextTimerTarget: C.Instant? {
        guard inFlight < maxInFlight else { return nil }
        if let limit = options.maxFetches, started >= limit { return nil }
        return dueQueue.first?.due
    }

    /// An entry for a source that was removed or replaced since it was queued.
    private func isStale(_ entry: DueQueue<C.Instant, (name: String, generation: Int)>.Entry) -> Bool {
        watched[entry.element.name]?.generation != entry.element.generation
    }

    /// Sleeps until the first due fetch, dispatches, and again — until stopping. One timer for
    /// all sources; woken early when a sooner due time arrives.
    private nonisolated func runTimer() async {
        while let target = await armTimer() {
            guard let target else {
                await timerWoken()
                continue
            }
            let clock = self.clock
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Only a sleep that ran its course wakes the timer; a cancelled one is
                    // replaced by the sooner target that cancelled it.
                    if (try? await clock.sleep(until: target, tolerance: nil)) != nil { await self.wakeTimer() }
                }
                await timerWoken()
                group.cancelAll()
            }
        }
    }

    /// Dispatches what is due and returns what the timer should sleep until: `.some(nil)` to
    /// wait for a wake-up, `nil` to end (stopping).
    private func armTimer() -> C.Instant?? {
        guard !isStopping else { return nil }
        dispatchDueFetches()
        timerTarget = nextTimerTarget
        // This arming answers every wake-up asked for so far; only later ones should count.
        timerWakeUpPending = false
        return .some(timerTarget)
    }

    private func timerWoken() async {
        if timerWakeUpPending {
            timerWakeUpPending = false
            return
        }
        await withCheckedContinuation { timerWakeUp = $0 }
    }

    private func wakeTimer() {
        if let timerWakeUp {
            self.timerWakeUp = nil
            timerWakeUp.resume()
        } else {
            timerWakeUpPending = true
        }
    }

    // MARK: One fetch

    /// A fetch in flight, cancelled early when `stopped` finishes (source removed or changed,
    /// or the grace ran out); reported either way.
    private nonisolated func fetch(_ source: SourceConfig, with runner: FetchRunner, generation: Int, until stopped: AsyncStream<Void>) async {
        let report = await withTaskGroup(of: SourceReport?.self) { group in
            group.addTask { await runner.fetch(source) }
            group.addTask {
                for await _ in stopped {}
                return nil
            }
            var report: SourceReport?
            while report == nil, let next = await group.next() {
                report = next
                // Whichever ended first, the other has no more to do: a stopped fetch still
                // returns its (cancelled) report.
                group.cancelAll()
            }
            return report
        }
        if let report { await finished(report, generation: generation) }
    }

    /// A fetch that was dispatched but never started (the watcher began stopping first).
    private func abandon(_ name: String) {
        started -= 1
        endFetch(name)
    }

    /// Records and reports a fetch, queues the source's next one, and dispatches.
    private func finished(_ report: SourceReport, generation: Int) {
        completed += 1
        var tally = tallies[report.name] ?? WatchTally()
        tally.fetches += 1
        tally.newItems += report.outcome.newItems.count
        if report.outcome.failure != nil { tally.failures += 1 }
        tallies[report.name] = tally
        var nextFetch: Duration?
        if !isStopping, !Task.isCancelled, var source = watched[report.name], source.generation == generation {
            let delay = source.schedule.delay(after: report.outcome, jitter: jitter(), freshFor: report.freshFor)
            source.stopFetch = nil
            watched[report.name] = source
            dueQueue.insert((report.name, generation), due: clock.now.advanced(by: delay))
            nextFetch = delay
        }
        eventSink.yield(.fetched(report, nextFetch: nextFetch))
        if let limit = options.maxFetches, completed >= limit, !isStopping {
            eventSink.yield(.fetchLimitReached)
            commandSink.yield(.stop)
        }
        endFetch(report.name)
    }

    /// A fetch's place is free again: a changed source starts with its new settings, and
    /// whatever is due may take the place.
    private func endFetch(_ name: String) {
        inFlight -= 1
        if let replacement = replacements.removeValue(forKey: name), !isStopping { startAnew(replacement) }
        if isStopping, inFlight == 0 { allEndedSink.finish() }
        dispatchDueFetches()
    }

    // MARK: Stopping

    /// No new fetches from here on; the timer ends.
    private func beginStopping() {
        guard !isStopping else { return }
        isStopping = true
        replacements.removeAll()
        wakeTimer()
        if inFlight == 0 { allEndedSink.finish() }
    }

    /// While stopping: fetches in flight get the grace, then are cancelled — unless they all
    /// end first.
    private nonisolated func graceThenStopEveryFetch() async {
        let clock = self.clock, grace = options.grace, allEnded = self.allEnded
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                guard (try? await clock.sleep(until: clock.now.advanced(by: grace), tolerance: nil)) != nil else { return }
                await self.stopEveryFetch()
            }
            group.addTask { for await _ in allEnded {} }
            await group.next()
            group.cancelAll()
        }
    }

    private func stopEveryFetch() {
        for source in watched.values { source.stopFetch?.finish() }
    }
}

extension SourceConfig {
    /// Whether watch mode fetches it (`interval: never` sources are left out).
    var isWatched: Bool {
        if case .every = settings.interval { return true }
        return false
    }

    /// Its watch schedule, carried on from a recorded state when there is one.
    fileprivate func schedule(resuming state: SourceState?) -> FetchSchedule {
        // Only watched sources are scheduled; the fallback is never used.
        guard case .every(let interval) = settings.interval else { return FetchSchedule(interval: .seconds(3600)) }
        return FetchSchedule(
            interval: interval, maxInterval: settings.maxInterval, maxBackoff: settings.maxBackoff,
            resuming: state?.currentInterval, consecutiveFailures: state?.consecutiveFailures ?? 0
        )
    }
}
