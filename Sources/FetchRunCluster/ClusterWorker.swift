import FetchRunKit
import Foundation
import Logging
import ServiceLifecycle

/// One of N identical workers over PostgreSQL state: it leases due sources in batches, fetches
/// them under their deadlines, and completes each in one transaction guarded by its lease.
///
/// Every worker loads the same config and syncs it into the sources table when it starts (and
/// when it is reloaded, SIGHUP).
/// Heartbeats (every third of the lease time) say the worker is alive and extend the leases it
/// holds; a worker that dies loses its leases when they run out, and the others take its
/// sources over. Per-host limits are each worker's own: N workers may open N × `per_host`
/// connections to one host (see docs/scale-out.md).
public actor ClusterWorker: Service {
    public struct Options: Sendable {
        /// Sources leased per query.
        public var batch = 50
        /// How long a lease lasts without a heartbeat: the longest a dead worker's sources wait.
        public var leaseTime: Duration = .seconds(60)
        /// Fetches in flight at once in this worker.
        public var maxInFlight = FetchConfig.defaultMaxInFlight
        /// How often to look for due sources when none was found.
        public var pollInterval: Duration = .milliseconds(250)
        /// Stop after this many fetches (tests, benchmarks); `nil` runs until shut down.
        public var maxFetches: Int?

        public init() {}
    }

    private let state: ClusterState
    private let completions: CompletionQueue
    private var sources: [String: SourceConfig]
    private var outputs: [OutputConfig]
    private let http: HTTPClient
    private var options: Options
    private let logger: Logger
    private let onOutboxChanged: @Sendable () -> Void
    private var stopping = false
    private var completed = 0
    private let started = Date()

    /// Each fetch's report and when the source is due next, as fetches end.
    public nonisolated let reports: AsyncStream<(SourceReport, Date)>
    private let reportSink: AsyncStream<(SourceReport, Date)>.Continuation

    public init(state: ClusterState, config: FetchConfig, options: Options = Options(), logger: Logger = Logger(label: "fetchrun.worker"), onOutboxChanged: @escaping @Sendable () -> Void = {}) {
        self.state = state
        completions = CompletionQueue(state: state)
        sources = Dictionary(config.sources.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        outputs = config.outputs
        http = HTTPClient(configuration: config.http)
        self.options = options
        self.logger = logger
        self.onOutboxChanged = onOutboxChanged
        (reports, reportSink) = AsyncStream<(SourceReport, Date)>.makeStream()
    }

    private enum Event: Sendable {
        case fetched
        case tick
    }

    /// Works until a graceful shutdown (fetches in flight finish and are completed; leases are
    /// given back) or until ``Options/maxFetches``.
    public func run() async throws {
        defer { reportSink.finish() }
        try await state.heartbeat(startedAt: started, renewingFor: options.leaseTime)
        var lastHeartbeat = ContinuousClock.now
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Event.self) { group in
                var inFlight = 0
                var ticking = false
                while !stopping || inFlight > 0 {
                    if ContinuousClock.now - lastHeartbeat >= options.leaseTime / 3 {
                        do {
                            try await state.heartbeat(startedAt: started, renewingFor: options.leaseTime)
                        } catch {
                            logger.error("heartbeat: \(error)")
                        }
                        lastHeartbeat = .now
                    }
                    var leased: [LeasedSource] = []
                    let room = options.maxInFlight - inFlight
                    // Leasing for every fetch that ends would cost a query per fetch; a batch's
                    // worth of room (or an idle worker) is worth one.
                    if !stopping, room > 0, room >= min(options.batch, options.maxInFlight) || inFlight == 0 {
                        do {
                            leased = try await state.leaseDue(limit: min(room, options.batch), ttl: options.leaseTime)
                        } catch {
                            logger.error("lease: \(error)")
                        }
                    }
                    for source in leased {
                        inFlight += 1
                        group.addTask { await self.fetchAndComplete(source); return .fetched }
                    }
                    // A full batch: more may be due at once; otherwise wait for a fetch or the poll.
                    if leased.count == options.batch, inFlight < options.maxInFlight, !stopping { continue }
                    if !ticking, !stopping {
                        ticking = true
                        let interval = options.pollInterval
                        group.addTask {
                            try? await Task.sleep(for: interval)
                            return .tick
                        }
                    }
                    guard let event = await group.next() else { break }
                    switch event {
                    case .fetched: inFlight -= 1
                    case .tick: ticking = false
                    }
                    if stopping, inFlight == 0 { group.cancelAll() }
                }
            }
        } onGracefulShutdown: {
            Task { await self.stop() }
        }
        do {
            try await state.leave()
        } catch {
            logger.warning("could not give this worker's leases back (\(error is CancellationError ? "PostgreSQL did not answer within the lease time" : "\(error)")); they lapse after the lease time")
        }
    }

    private func stop() {
        stopping = true
    }

    /// Applies a reloaded config: its sources are synced into PostgreSQL (added ones due soon,
    /// changed ones due now, removed ones retired), and fetches leased from now on use its
    /// sources, outputs and `max_in_flight`. Fetches in flight finish with what they started
    /// with. The HTTP client's limits stay those of the start.
    /// - Returns: the names of the sources added, removed and changed (another fingerprint).
    /// - Throws: ``ClusterStateError`` when the sources could not be synced; nothing changed.
    public func reload(_ config: FetchConfig) async throws -> (added: [String], removed: [String], changed: [String]) {
        try await state.syncSources(config.sources)
        let reloaded = Dictionary(config.sources.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let added = reloaded.keys.filter { sources[$0] == nil }.sorted()
        let removed = sources.keys.filter { reloaded[$0] == nil }.sorted()
        let changed = reloaded.filter { name, source in sources[name].map { $0.fingerprint != source.fingerprint } ?? false }.keys.sorted()
        sources = reloaded
        outputs = config.outputs
        options.maxInFlight = config.maxInFlight
        return (added, removed, changed)
    }

    private func fetchAndComplete(_ leased: LeasedSource) async {
        guard let source = sources[leased.name] else {
            // Retired while leased (another worker's newer config): give it back untouched.
            return
        }
        let (report, completion) = await fetch(leased, source: source)
        do {
            if try await completions.complete(completion) {
                if !completion.deliveries.isEmpty { onOutboxChanged() }
                reportSink.yield((report, completion.dueAt))
            } else {
                logger.warning("lease on \(leased.name) ran out before the fetch was recorded; another worker has it now, and this fetch is dropped")
            }
        } catch is CancellationError {
            logger.warning("\(leased.name): the worker stopped before this fetch was recorded; its lease lapses and another worker fetches it")
        } catch {
            logger.error("\(leased.name): \(error)")
        }
        completed += 1
        if let limit = options.maxFetches, completed >= limit { stopping = true }
    }

    /// A stored snapshot, decoded; an unreadable one is noted and the fetch starts from an
    /// empty baseline, as a one-shot run does with an unreadable snapshot file.
    private static func decode(_ text: String?, of name: String, notes: inout [String]) -> Snapshot? {
        guard let text else { return nil }
        do {
            return try Snapshot(json: Data(text.utf8))
        } catch {
            notes.append("the snapshot of '\(name)' in PostgreSQL was unreadable (\(error)); starting from an empty baseline")
            return nil
        }
    }

    /// The fetch itself: the adapter under the source's deadline, then merge, filter, and what
    /// to write — as a one-shot run does it, with the snapshot kept in PostgreSQL.
    private func fetch(_ leased: LeasedSource, source: SourceConfig) async -> (SourceReport, Completion) {
        let clock = ContinuousClock()
        let start = clock.now
        var logger = logger
        logger[metadataKey: "source"] = "\(source.name)"
        // An adapter that reads only validators and the body hash gets no snapshot: most
        // fetches find nothing changed, and then it is never loaded or decoded.
        var notes: [String] = []
        var previous = Self.decode(leased.snapshot, of: source.name, notes: &notes)
        let snapshotLoaded = leased.snapshot != nil || !leased.hasSnapshot
        let context = FetchContext(
            sourceName: source.name, previous: previous, deadline: start + source.settings.deadline, http: http, logger: logger,
            validators: leased.validators ?? previous?.validators, lastBodyHash: leased.bodyHash
        )
        let deadline = FetchDeadline(start + source.settings.deadline)
        let adapter = source.adapter
        var report: SourceReport
        var snapshotText: String?
        var validators: HTTPValidators?
        var bodyHash: String?
        var deliveries: [(output: String, delivery: Delivery)] = []
        var freshFor: Duration?
        do {
            let output = try await withDeadline(deadline) { try await adapter.fetch(context) }
            validators = output.validators
            bodyHash = output.bodyHash
            freshFor = output.freshFor
            if output.unchanged {
                report = SourceReport(name: source.name, type: source.type, outcome: .noData, totalItems: previous?.items.count ?? leased.itemCount, duration: clock.now - start, notes: notes + output.notes)
            } else {
                if !snapshotLoaded {
                    // A failure here fails the fetch: taking a missing past for an empty one
                    // would send every item again as new.
                    let stored: String?
                    do {
                        stored = try await state.storedSnapshot(of: source.name)
                    } catch {
                        throw FetchFailure(.snapshot, "its snapshot could not be read from PostgreSQL (\(error)); tried again when due")
                    }
                    previous = Self.decode(stored, of: source.name, notes: &notes)
                }
                let fetchedItems = FetchedItems(output, previous: previous, source: source)
                let merge = fetchedItems.merge, newItems = fetchedItems.newItems, title = fetchedItems.title
                let snapshot = Snapshot(
                    source: source.name, type: source.type, updatedAt: Date(), items: merge.items,
                    validators: output.validators ?? previous?.validators, adapterState: output.adapterState ?? previous?.adapterState, title: title
                )
                if previous.map({ $0.items != snapshot.items || $0.adapterState != snapshot.adapterState || $0.title != snapshot.title || $0.validators != snapshot.validators }) ?? true {
                    snapshotText = String(decoding: snapshot.jsonData(), as: UTF8.self)
                }
                if previous != nil || source.routing.sendBaseline {
                    for output in source.routing.outputs(for: .items, among: outputs) {
                        deliveries += newItems.map { (output.name, Delivery.item($0, source: source.name, sourceTitle: title)) }
                    }
                }
                report = SourceReport(name: source.name, type: source.type, outcome: newItems.isEmpty ? .noData : .newData(newItems), totalItems: merge.items.count, duration: clock.now - start, notes: notes + output.notes + (fetchedItems.limitNote.map { [$0] } ?? []), isBaseline: previous == nil)
                report.title = title
            }
        } catch {
            report = SourceReport(name: source.name, type: source.type, outcome: .failed(FetchRunner.failure(from: error, deadline: source.settings.deadline)), totalItems: previous?.items.count ?? leased.itemCount, duration: clock.now - start, notes: notes)
        }
        report.freshFor = freshFor
        (report.queueWait, report.queueHost) = (await deadline.queueWait, await deadline.queueHost)

        deliveries += Delivery.alerts(
            for: report, failuresBefore: leased.consecutiveFailures, failingSinceBefore: leased.failingSince,
            routes: source.routing.outputs(for: .failures, among: outputs).map { ($0.name, $0.alertAfter) }
        )

        // The schedule of a watch, carried in the row; a hash of the name spreads due times
        // by up to ±5 % so that sources added together drift apart.
        var delay = Duration.seconds(3600)
        var currentInterval: Duration?
        if case .every(let interval) = source.settings.interval {
            var schedule = FetchSchedule(interval: interval, maxInterval: source.settings.maxInterval, maxBackoff: source.settings.maxBackoff,
                                         resuming: leased.currentInterval, consecutiveFailures: leased.consecutiveFailures)
            let spread = Double(Item.fnv1a(source.name) % 2001) / 1000 - 1
            delay = schedule.delay(after: report.outcome, jitter: spread, freshFor: freshFor)
            if report.outcome.failure == nil { delay = delay * (1 + 0.05 * spread) }
            currentInterval = schedule.currentInterval
        }
        let completion = Completion(
            name: source.name, token: leased.token, report: report, dueAt: Date().addingTimeInterval(Double(delay.milliseconds) / 1000),
            currentInterval: currentInterval, validators: validators, bodyHash: bodyHash, snapshot: snapshotText, deliveries: deliveries
        )
        return (report, completion)
    }
}
