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
package struct WatchTally: Sendable, Equatable {
    public var fetches = 0
    public var newItems = 0
    public var failures = 0

    public init() {}
}

/// Fetches every source again and again on its own schedule, each fetch a
/// ``FetchPipeline/fetch(_:lease:)`` that records it, and reports each one on ``events`` —
/// `fetchrun watch`, and with a ``LeasePolicy`` `fetchrun worker`.
///
/// A `Service`: ``run()`` owns one task group. Waiting sources cost no task: a watch keeps them
/// in a queue ordered by due time, and one timer on the injected clock sleeps until the first of
/// them — no polling; a worker instead leases due sources from the store in batches, which is
/// the schedule every worker on it shares. A task exists only for a fetch in flight, at most
/// `maxInFlight` of them, so two fetches of one source never overlap and a watch of 100,000
/// sources holds 100,000 queue entries, not 100,000 sleeping tasks.
///
/// Stopping:
/// - Graceful shutdown (a `ServiceGroup`'s, or ``stop()``), or `maxFetches` reached: no new
///   fetches; those in flight get ``Options/grace`` on the clock, then are cancelled. A worker
///   then gives its leases back.
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
        /// The loop turns at least this often, even with nothing due, and calls ``onTurn``
        /// each time: how a health check or systemd's watchdog learns that the loop itself is
        /// alive. `nil`: it sleeps until the next due fetch.
        public var turnInterval: Duration?
        /// Called at each turn of the loop, on the watcher's executor: keep it short.
        public var onTurn: (@Sendable () -> Void)?

        public init() {}
    }

    /// Every fetch as it ends; finishes when ``run()`` returns.
    public nonisolated let events: AsyncStream<WatchEvent>
    private let eventSink: AsyncStream<WatchEvent>.Continuation

    /// What fetches from now on run with; each fetch takes the one of its start (a reload may
    /// change the outputs meanwhile).
    private var pipeline: FetchPipeline
    private let clock: C
    private let options: Options
    /// `options.maxInFlight`, until a reload changes it.
    private var maxInFlight: Int
    /// A worker's: due sources come from the store's leases, not from ``dueQueue``.
    private let leasing: LeasePolicy?
    private var lastRenewal: ContinuousClock.Instant?
    /// A worker's store queries still running past the round that sent them.
    private var pendingRenewal: Task<Void, any Error>?
    private var pendingLeasing: Task<[SourceLease], any Error>?

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
    /// Due times as offsets from ``origin``: a concrete type, so that the heap's code is
    /// specialised instead of comparing through the clock's generic witnesses — a first wave of
    /// 100,000 sources sifts it 200,000 times.
    private var dueQueue = DueQueue<Duration, (name: String, generation: Int)>()
    /// When the watcher was made: where ``dueQueue``'s offsets count from.
    private let origin: C.Instant
    private var nextGeneration = 0
    /// Changed sources waiting for a fetch of their old settings to end before they start.
    private var replacements: [String: SourceConfig] = [:]
    private var inFlight = 0
    private var started = 0
    private var completed = 0
    public private(set) var isStopping = false
    package private(set) var tallies: [String: WatchTally] = [:]

    /// What the timer sleeps until; `nil` while it waits to be woken.
    private var timerTarget: C.Instant?
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
    package init(sources: [SourceConfig], pipeline: FetchPipeline, clock: C, options: Options = Options(), resuming states: [String: SourceState] = [:], leasing: LeasePolicy? = nil) {
        self.pipeline = pipeline
        self.clock = clock
        self.options = options
        self.maxInFlight = options.maxInFlight
        self.leasing = leasing
        (events, eventSink) = AsyncStream<WatchEvent>.makeStream()
        (commands, commandSink) = AsyncStream<Command>.makeStream()
        (allEnded, allEndedSink) = AsyncStream<Void>.makeStream()
        // Queued now, so that a reload before run() compares with them; they start with run().
        let sources = sources.filter(\.isWatched)
        let start = clock.now, wallStart = Date()
        origin = start
        for (index, source) in sources.enumerated() {
            let generation = nextGeneration
            nextGeneration += 1
            watched[source.name] = Watched(config: source, generation: generation)
            guard leasing == nil else { continue }
            var delay = sources.count > 1 ? options.startSpread * (Double(index) / Double(sources.count)) : .zero
            if let due = states[source.name]?.nextDue, due > wallStart {
                delay = max(delay, .milliseconds(Int64(min(due.timeIntervalSince(wallStart), 366 * 86_400) * 1000)))
            }
            dueQueue.insert((source.name, generation), due: delay)
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
        if let leasing {
            do {
                try await leasing.schedule.releaseAll()
            } catch {
                pipeline.logger.warning("could not give this worker's leases back (\(error)); they lapse after the lease time")
            }
        }
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
        if let leasing { try await leasing.schedule.schedule(newSources, now: Date()) }
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

    // MARK: Scheduling

    /// Watches `source` from scratch, fetching it at once (a worker: when the store, which
    /// the reload scheduled it in, hands it out).
    private func startAnew(_ source: SourceConfig) {
        let generation = nextGeneration
        nextGeneration += 1
        watched[source.name] = Watched(config: source, generation: generation)
        if leasing == nil { dueQueue.insert((source.name, generation), due: offset(clock.now)) }
    }

    /// Fetches that may still start, as `maxInFlight` and `maxFetches` allow.
    private var room: Int {
        var room = maxInFlight - inFlight
        if let limit = options.maxFetches { room = min(room, limit - started) }
        return max(0, room)
    }

    /// Starts every fetch that is due, as far as ``room`` allows, and sets the timer for the
    /// next one — waking it if that is sooner than it sleeps. A worker's due fetches come from
    /// the store: its timer is woken when a lease query is worth it (a batch's worth of room,
    /// or nothing in flight).
    private func dispatchDueFetches() {
        guard !isStopping else { return wakeTimer() }
        if let leasing {
            if room > 0, room >= min(leasing.batch, maxInFlight) || inFlight == 0 { wakeTimer() }
            return
        }
        let now = offset(clock.now)
        while room > 0 {
            dueQueue.removeFirst(while: isStale)
            guard let next = dueQueue.first, next.due <= now else { break }
            dueQueue.removeFirst()
            guard let source = watched[next.element.name] else { continue }
            start(source.config, lease: nil)
        }
        if let target = nextTimerTarget, timerTarget.map({ target < $0 }) ?? true { wakeTimer() }
    }

    private func start(_ source: SourceConfig, lease: SourceLease?) {
        guard let generation = watched[source.name]?.generation else { return }
        let (stopped, stopFetch) = AsyncStream<Void>.makeStream()
        watched[source.name]?.stopFetch = stopFetch
        inFlight += 1
        started += 1
        commandSink.yield(.fetch(source, pipeline: pipeline, lease: lease, generation: generation, stopped: stopped))
    }

    /// A worker's round: renews its leases when a third of their time has passed, then leases
    /// due sources while there is room and the store has full batches to give.
    ///
    /// The round is bounded: a store that stops answering (a PostgreSQL server that hangs) must
    /// not hold the loop, which would look dead from outside (/healthz, the watchdog) while it
    /// only waits. It waits for the store until the next turn is due (a third of the lease time
    /// without one). A query not answered by then runs on and its answer is taken at a later
    /// round, never sent twice: a lease query the store answers late has taken its leases.
    private func leaseDueFetches(_ policy: LeasePolicy) async {
        let store = policy.schedule
        let roundEnds = ContinuousClock.now + (options.turnInterval ?? policy.leaseTime / 3)
        if pendingRenewal == nil, lastRenewal.map({ ContinuousClock.now - $0 >= policy.leaseTime / 3 }) ?? true {
            let until = Date().addingTimeInterval(policy.leaseTime.seconds)
            pendingRenewal = Task { try await store.renewLeases(until: until) }
            lastRenewal = .now
        }
        if let renewal = pendingRenewal {
            do {
                if try await value(of: renewal, before: roundEnds) != nil { pendingRenewal = nil }
            } catch {
                pendingRenewal = nil
                pipeline.logger.error("renewing leases: \(error)")
            }
        }
        while !isStopping, room > 0, room >= min(policy.batch, maxInFlight) || inFlight == 0 || pendingLeasing != nil {
            let until = Date().addingTimeInterval(policy.leaseTime.seconds), limit = min(room, policy.batch)
            let query = pendingLeasing ?? Task { try await store.leaseDue(limit: limit, until: until) }
            pendingLeasing = query
            let leased: [SourceLease]
            do {
                guard let answer = try await value(of: query, before: roundEnds) else {
                    pipeline.logger.info("leasing: the state store has not answered yet; its answer is taken at a later turn")
                    return
                }
                pendingLeasing = nil
                leased = answer
            } catch {
                pendingLeasing = nil
                pipeline.logger.error("leasing: \(error)")
                return
            }
            pipeline.metrics.recordLeases(leased.count)
            for lease in leased {
                // Retired by another worker's newer config, stopping meanwhile, or more than
                // there is room for now (a late answer): given back untouched.
                guard !isStopping, room > 0, let source = watched[lease.name], source.stopFetch == nil else {
                    try? await store.release(lease)
                    continue
                }
                start(source.config, lease: lease)
            }
            // A full batch: more may be due at once.
            guard leased.count == policy.batch else { return }
        }
    }

    /// When the timer should next dispatch: the first due time (a worker: the next poll), unless
    /// no fetch could start then — every place taken (the next fetch to end dispatches again),
    /// or `maxFetches` started (the watcher is about to stop) — which would only wake it to do
    /// nothing.
    private var nextTimerTarget: C.Instant? {
        guard room > 0 else { return nil }
        if let leasing { return clock.now.advanced(by: leasing.pollInterval) }
        return dueQueue.first.map { origin.advanced(by: $0.due) }
    }

    /// `instant` as an offset in ``dueQueue``.
    private func offset(_ instant: C.Instant) -> Duration {
        origin.duration(to: instant)
    }

    /// An entry for a source that was removed or replaced since it was queued.
    private func isStale(_ entry: DueQueue<Duration, (name: String, generation: Int)>.Entry) -> Bool {
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
    private func armTimer() async -> C.Instant?? {
        guard !isStopping else { return nil }
        // This arming answers every wake-up asked for so far; only later ones — a fetch that
        // ends while a worker waits for its leases — should count.
        timerWakeUpPending = false
        if let leasing { await leaseDueFetches(leasing) } else { dispatchDueFetches() }
        guard !isStopping else { return nil }
        timerTarget = nextTimerTarget
        if let interval = options.turnInterval {
            let turn = clock.now.advanced(by: interval)
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
                if leasing == nil { dueQueue.insert((report.name, generation), due: offset(clock.now) + nextFetch!) }
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
}
