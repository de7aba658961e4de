import Foundation
import Logging
import ServiceLifecycle

/// Fetches every source again and again on its own schedule, each fetch a
/// ``FetchPipeline/fetch(_:lease:)`` that records it, and reports each one on ``events`` —
/// `fetchrun watch`, and with a ``LeasePolicy`` `fetchrun worker`.
///
/// A `Service`: ``run()`` owns one task group. When sources are due is its ``WatchSchedule``'s
/// to say: a watch keeps them in a queue ordered by due time (``LocalSchedule``) and one timer
/// on the pipeline's clock sleeps until the first of them — no polling; a worker instead leases
/// due sources from the store in batches (``LeasedSchedule``), the schedule every worker on it
/// shares. Waiting sources cost no task: a task exists only for a fetch in flight, at most
/// `maxInFlight` of them, so two fetches of one source never overlap and a watch of 100,000
/// sources holds 100,000 queue entries, not 100,000 sleeping tasks.
///
/// Stopping:
/// - Graceful shutdown (a `ServiceGroup`'s, or ``stop()``), or `maxFetches` reached: no new
///   fetches; those in flight get ``Options/grace`` on the clock, then are cancelled. A worker
///   then gives its leases back.
/// - Cancellation of the task running ``run()``: fetches in flight are cancelled at once.
/// Either way every fetch that ends is reported, and ``events`` finishes when ``run()`` returns.
public actor Watcher: Service {
    /// Every fetch as it ends; finishes when ``run()`` returns.
    public nonisolated let events: AsyncStream<WatchEvent>
    private let eventSink: AsyncStream<WatchEvent>.Continuation

    /// What fetches from now on run with; each fetch takes the one of its start (a reload may
    /// change the outputs meanwhile).
    private var pipeline: FetchPipeline
    /// The pipeline's: due times, the timer, the grace on stop.
    private let clock: any FetchClock
    private let options: Options
    /// `options.maxInFlight`, until a reload changes it.
    package private(set) var maxInFlight: Int
    /// When sources are due: the watch's own timetable, or the store's leases.
    private let schedule: any WatchSchedule

    /// What the task group in ``run()`` is asked to do; buffered until it runs.
    private enum Command: Sendable {
        case fetch(SourceConfig, pipeline: FetchPipeline, lease: SourceLease?, generation: Int, stopped: AsyncStream<Void>)
        case stop
    }
    private nonisolated let commands: AsyncStream<Command>
    private let commandSink: AsyncStream<Command>.Continuation
    /// Finishes when stopping and no fetch is left in flight.
    private nonisolated let allEnded: AsyncStream<Void>
    private let allEndedSink: AsyncStream<Void>.Continuation

    /// One watched source: its settings and — while it is being fetched — the signal that
    /// cancels that fetch.
    private struct Watched {
        var config: SourceConfig
        /// Changes when the source is replaced, so that its old queue entry and a fetch of the
        /// old settings are recognised as stale.
        var generation: Int
        var stopFetch: AsyncStream<Void>.Continuation?
    }

    private var watched: [String: Watched] = [:]
    /// When the watcher was made: where the schedule's offsets count from.
    private let origin: ContinuousClock.Instant
    private var nextGeneration = 0
    /// Changed sources waiting for a fetch of their old settings to end before they start.
    private var replacements: [String: SourceConfig] = [:]
    package private(set) var inFlight = 0
    private var started = 0
    private var completed = 0
    public private(set) var isStopping = false
    package private(set) var tallies: [String: WatchTally] = [:]

    /// What the timer sleeps until; `nil` while it waits to be woken.
    private var timerTarget: ContinuousClock.Instant?
    private var timerWakeUp: CheckedContinuation<Void, Never>?
    private var timerWakeUpPending = false

    /// - Parameters:
    ///   - sources: what to watch; those with `interval: never` are left out.
    ///   - states: what the store recorded, so that a restarted watch carries on: a source is
    ///     first fetched at its recorded due time (at once if that has passed, or if it was
    ///     never fetched). Its stretched interval and failures so far are in the store; its
    ///     metrics' gauges start from them (``FetchMetrics/prepare(sources:states:)``). A
    ///     worker's are empty: its gauges say only what its own fetches found, since a source's
    ///     state moves with the other workers' fetches too.
    ///   - leasing: a worker's policy; `nil` keeps the watch's own timetable.
    package init(sources: [SourceConfig], pipeline: FetchPipeline, options: Options = Options(), resuming states: [String: SourceState] = [:], leasing: LeasePolicy? = nil) {
        self.pipeline = pipeline
        let clock = pipeline.clock
        self.clock = clock
        self.options = options
        self.maxInFlight = options.maxInFlight
        schedule = leasing.map { LeasedSchedule($0, clock: clock) } ?? LocalSchedule()
        (events, eventSink) = AsyncStream<WatchEvent>.makeStream()
        (commands, commandSink) = AsyncStream<Command>.makeStream()
        (allEnded, allEndedSink) = AsyncStream<Void>.makeStream()
        // Queued now, so that a reload before run() compares with them; they start with run().
        let sources = sources.filter(\.isWatched)
        origin = clock.now
        let wallStart = clock.date
        for (index, source) in sources.enumerated() {
            let generation = nextGeneration
            nextGeneration += 1
            watched[source.name] = Watched(config: source, generation: generation)
            var delay = sources.count > 1 ? options.startSpread * (Double(index) / Double(sources.count)) : .zero
            if let due = states[source.name]?.nextDue, due > wallStart {
                delay = max(delay, .milliseconds(Int64(min(due.timeIntervalSince(wallStart), 366 * 86_400) * 1000)))
            }
            schedule.queue(source.name, generation: generation, due: delay)
        }
        pipeline.metrics.prepare(sources: sources.map(\.name), states: states)
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
                    case .fetch(let source, let pipeline, let lease, let generation, let stopped):
                        guard !isStopping, !Task.isCancelled else {
                            await abandon(source.name, lease: lease)
                            continue
                        }
                        group.addTask { await self.fetch(source, with: pipeline, lease: lease, generation: generation, until: stopped) }
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
        await schedule.finish(logger: pipeline.logger, for: self)
        eventSink.finish()
    }

    /// Stops as a graceful shutdown would: no new fetches, the grace for those in flight.
    public func stop() {
        commandSink.yield(.stop)
    }

    /// Applies a reloaded config: added sources start, removed ones stop, changed ones restart
    /// (once a fetch of the old one in flight has ended); fetches from now on route to
    /// `outputs` and keep to `maxInFlight` (those in flight keep what they started with, and a
    /// lower limit lets them end). Returns the names of the sources of each kind.
    ///
    /// A worker first makes the sources the shared schedule (``SharedSchedule/schedule(_:now:)``).
    /// - Throws: ``StateStoreError`` when the store refuses; then nothing changed.
    public func reload(_ newSources: [SourceConfig], outputs: [OutputConfig]? = nil, maxInFlight: Int? = nil) async throws -> (added: [String], removed: [String], changed: [String]) {
        guard !isStopping else { return ([], [], []) }
        try await schedule.reload(newSources, at: clock.date, for: self)
        // Outputs first: an added source starts at once, and its first fetch routes to them.
        if let outputs { pipeline.outputs = outputs }
        if let maxInFlight { self.maxInFlight = max(1, maxInFlight) }
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
        // Fetched at once: their gauges start from that fetch.
        pipeline.metrics.prepare(sources: added, states: [:])
        dispatchDueFetches()
        return (added, removed, changed)
    }

    /// What ``checkNow(_:)`` did.
    public enum CheckNow: Sendable, Equatable {
        /// Due now: a watch starts it as soon as a place is free; a worker's store hands it to
        /// the first worker that asks.
        case due
        /// A fetch of it is in flight already.
        case inFlight
        /// No watched source has that name (none in the config, or `interval: never`).
        case notWatched
        /// The watcher is stopping: nothing new starts.
        case stopping
    }

    /// Makes `name` due now, whatever its schedule said ("check now" on the dashboard). Its
    /// next fetch after this one is scheduled as any fetch's is.
    /// - Throws: ``StateStoreError`` when a worker's store refuses; then nothing changed.
    public func checkNow(_ name: String) async throws -> CheckNow {
        guard !isStopping else { return .stopping }
        guard let source = watched[name] else { return .notWatched }
        guard source.stopFetch == nil else { return .inFlight }
        // A new generation: the source's queued entry at its old due time goes stale.
        let generation = nextGeneration
        nextGeneration += 1
        watched[name]?.generation = generation
        try await schedule.checkNow(name, generation: generation, at: offset(clock.now), for: self)
        dispatchDueFetches()
        return .due
    }

    // MARK: Scheduling

    /// Watches `source` from scratch, fetching it at once (a worker: when the store, which
    /// the reload scheduled it in, hands it out).
    private func startAnew(_ source: SourceConfig) {
        let generation = nextGeneration
        nextGeneration += 1
        watched[source.name] = Watched(config: source, generation: generation)
        schedule.queue(source.name, generation: generation, due: offset(clock.now))
    }

    /// Fetches that may still start, as `maxInFlight` and `maxFetches` allow.
    package var room: Int {
        var room = maxInFlight - inFlight
        if let limit = options.maxFetches { room = min(room, limit - started) }
        return max(0, room)
    }

    /// Starts every fetch the schedule has due, as far as ``room`` allows, and wakes the
    /// timer when the schedule wants a turn sooner than it sleeps (a watch: a sooner due time;
    /// a worker: room for a lease query).
    package func dispatchDueFetches() {
        guard !isStopping else { return wakeTimer() }
        let now = offset(clock.now)
        let due = schedule.takeDue(by: now, room: room) { name, generation in watched[name]?.generation == generation }
        for name in due {
            if let source = watched[name] { start(source.config, lease: nil) }
        }
        if schedule.wantsTurn(room: room, inFlight: inFlight, maxInFlight: maxInFlight, timerTarget: timerTarget.map(offset)) { wakeTimer() }
    }

    /// Starts the fetch a lease was taken for; `false` when it cannot start — the source is not
    /// watched (another worker's newer config retired it), is being fetched, or the watcher is
    /// stopping or full — and the lease should go back.
    package func startLeased(_ lease: SourceLease) -> Bool {
        guard !isStopping, room > 0, let source = watched[lease.name], source.stopFetch == nil else { return false }
        start(source.config, lease: lease)
        return true
    }

    /// Leases taken in one query, for the metrics.
    package func recordLeases(_ count: Int) {
        pipeline.metrics.recordLeases(count)
    }

    package var logger: Logger { pipeline.logger }
    package var turnInterval: Duration? { options.turnInterval }

    private func start(_ source: SourceConfig, lease: SourceLease?) {
        guard let generation = watched[source.name]?.generation else { return }
        let (stopped, stopFetch) = AsyncStream<Void>.makeStream()
        watched[source.name]?.stopFetch = stopFetch
        inFlight += 1
        started += 1
        commandSink.yield(.fetch(source, pipeline: pipeline, lease: lease, generation: generation, stopped: stopped))
    }

    /// When the timer should next dispatch: when the schedule next looks (the first due time; a
    /// worker: the next poll), unless no fetch could start then — every place taken (the next
    /// fetch to end dispatches again), or `maxFetches` started (the watcher is about to stop) —
    /// which would only wake it to do nothing.
    private var nextTimerTarget: ContinuousClock.Instant? {
        guard room > 0 else { return nil }
        return schedule.nextLook(after: offset(clock.now)).map { origin + $0 }
    }

    /// `instant` as an offset from ``origin``, the schedule's time.
    private func offset(_ instant: ContinuousClock.Instant) -> Duration {
        instant - origin
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
                    if (try? await clock.sleep(until: target)) != nil { await self.wakeTimer() }
                }
                await timerWoken()
                group.cancelAll()
            }
        }
    }

    /// Dispatches what is due and returns what the timer should sleep until: `.some(nil)` to
    /// wait for a wake-up, `nil` to end (stopping).
    private func armTimer() async -> ContinuousClock.Instant?? {
        guard !isStopping else { return nil }
        // This arming answers every wake-up asked for so far; only later ones — a fetch that
        // ends while a worker waits for its leases — should count.
        timerWakeUpPending = false
        await schedule.turn(for: self)
        guard !isStopping else { return nil }
        timerTarget = nextTimerTarget
        if let interval = options.turnInterval {
            let turn = clock.now + interval
            timerTarget = timerTarget.map { min($0, turn) } ?? turn
        }
        options.onTurn?()
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
    private nonisolated func fetch(_ source: SourceConfig, with pipeline: FetchPipeline, lease: SourceLease?, generation: Int, until stopped: AsyncStream<Void>) async {
        let fetched = await withTaskGroup(of: FetchPipeline.Fetched?.self) { group in
            group.addTask { await pipeline.fetch(source, lease: lease) }
            group.addTask {
                for await _ in stopped {}
                return nil
            }
            var fetched: FetchPipeline.Fetched?
            while fetched == nil, let next = await group.next() {
                fetched = next
                // Whichever ended first, the other has no more to do: a stopped fetch still
                // returns its (cancelled) report.
                group.cancelAll()
            }
            return fetched
        }
        if let fetched { await finished(fetched, of: source, generation: generation) }
    }

    /// A fetch that was dispatched but never started (the watcher began stopping first).
    private func abandon(_ name: String, lease: SourceLease?) async {
        started -= 1
        if let lease { try? await pipeline.store.release(lease) }
        endFetch(name)
    }

    /// Reports a fetch, queues the source's next one at the time the rules recorded, and dispatches.
    private func finished(_ fetched: FetchPipeline.Fetched, of source: SourceConfig, generation: Int) {
        let report = fetched.report
        completed += 1
        var tally = tallies[report.name] ?? WatchTally()
        tally.fetches += 1
        tally.newItems += report.outcome.newItems.count
        if report.outcome.failure != nil { tally.failures += 1 }
        tallies[report.name] = tally
        var nextFetch: Duration?
        if !isStopping, !Task.isCancelled, let watching = watched[report.name], watching.generation == generation {
            watched[report.name]?.stopFetch = nil
            if case .every(let interval) = watching.config.settings.interval {
                nextFetch = fetched.nextFetch ?? interval
                schedule.queue(report.name, generation: generation, due: offset(clock.now) + nextFetch!)
            }
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
                guard (try? await clock.sleep(for: grace)) != nil else { return }
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
