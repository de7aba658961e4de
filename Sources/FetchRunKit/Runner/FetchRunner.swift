import Foundation
import Logging

/// Fetches sources concurrently, each in its own child task under its own deadline, and
/// turns what they return into outcomes and snapshots.
///
/// A source's failure — an error, a crash-free hang cut off at its deadline, a snapshot that
/// cannot be written — is reported for that source alone: it never changes another source's
/// outcome or snapshot.
public struct FetchRunner: Sendable {
    /// Where snapshots are read and written.
    public let store: SnapshotStore
    /// Writes the snapshots of concurrent fetches in batches, one flush each.
    private let writer: SnapshotWriter
    /// Fetch and report, but write nothing: no snapshot, no corrupt file moved aside.
    public var dryRun: Bool
    /// Shared by every source of the run.
    public var http: HTTPClient
    public var logger: Logger
    /// Where sources with `download:` queue the enclosures of their new items; `nil` queues nothing.
    public var downloads: DownloadQueue?
    /// Where each fetch's outcome and the source's next due time are recorded; `nil` records
    /// nothing (and a dry run never does).
    public var state: StateDatabase?
    /// Where sources send new items and failure alerts (through the outbox in ``state``).
    public var outputs: [OutputConfig] = []
    /// Called after a fetch put something in the outbox (watch mode wakes its sender).
    public var onOutboxChanged: @Sendable () -> Void = {}

    public init(store: SnapshotStore, dryRun: Bool = false, http: HTTPClient = HTTPClient(), downloads: DownloadQueue? = nil, state: StateDatabase? = nil, logger: Logger = Logger(label: "fetchrun")) {
        self.store = store
        writer = SnapshotWriter(store: store)
        self.dryRun = dryRun
        self.http = http
        self.downloads = downloads
        self.state = state
        self.logger = logger
    }

    /// Fetches every source once, all at once, and waits for all of them.
    ///
    /// Never throws: every problem is a source's outcome. The run ends when the last source
    /// ends, which is at most its deadline plus the time its adapter takes to honour cancellation.
    /// If the calling task is cancelled, every fetch is cancelled and reported as such.
    ///
    /// - Parameters:
    ///   - maxInFlight: sources fetched at once; the others wait their turn, and a source's
    ///     deadline starts when its fetch does. Bounds the responses and parsed items held in
    ///     memory when downloading outpaces parsing.
    ///   - keepingNewItems: how many new items per source the returned report keeps (its
    ///     `newCount` still counts them all); a run over thousands of feeds need not hold
    ///     every new item until the end. All of them by default.
    ///   - onSourceFinished: called with each source's full report as it finishes, one at a time.
    public func run(
        _ sources: [SourceConfig], maxInFlight: Int = FetchConfig.defaultMaxInFlight, keepingNewItems: Int = .max,
        onSourceFinished: @Sendable (SourceReport) -> Void = { _ in }
    ) async -> RunReport {
        let clock = ContinuousClock()
        let start = clock.now
        let limiter = InFlightLimiter(limit: maxInFlight)
        let reports = await withTaskGroup(of: (Int, SourceReport).self) { group in
            for (index, source) in sources.enumerated() {
                group.addTask {
                    do {
                        try await limiter.acquire()
                    } catch {
                        return (index, SourceReport(name: source.name, type: source.type, outcome: .failed(FetchFailure(.cancelled, "cancelled before it started")), totalItems: 0, duration: .zero))
                    }
                    let report = await fetch(source)
                    await limiter.release()
                    return (index, report)
                }
            }
            var reports = [SourceReport?](repeating: nil, count: sources.count)
            for await (index, var report) in group {
                onSourceFinished(report)
                if case .newData(let items) = report.outcome, items.count > keepingNewItems {
                    report.outcome = .newData(Array(items.prefix(keepingNewItems)))
                }
                if report.updatedItems.count > keepingNewItems { report.updatedItems = Array(report.updatedItems.prefix(keepingNewItems)) }
                reports[index] = report
            }
            return reports.compactMap { $0 }
        }
        return RunReport(sources: reports, duration: clock.now - start)
    }

    /// Fetches one source: read its snapshot, fetch under its deadline, merge, write; then
    /// record the outcome in the state database, if there is one.
    ///
    /// With a state database, an adapter that does not read the previous snapshot (`rss`) is
    /// fetched with the recorded validators and body hash alone; when it finds nothing
    /// changed (a 304, the same body), the source is `noData` and its snapshot is neither read
    /// nor written. A snapshot whose items, validators and state are unchanged is not written
    /// either: files change only when a source does.
    ///
    /// With a state database the source's lease is taken first, so that two processes on one
    /// state directory (a `run` beside a `watch`) never fetch it at once: while another holds
    /// it, the fetch waits — up to the source's deadline, then it fails saying who held it.
    public func fetch(_ source: SourceConfig) async -> SourceReport {
        var leaseNote: String?
        var recorded: SourceState?
        if let state, !dryRun {
            var heldElsewhere = false
            do {
                let start = try await state.beginFetch(of: source.name, until: leaseEnd(for: source))
                if start.lease == .taken { recorded = start.state } else { heldElsewhere = true }
            } catch {
                // A database that cannot be used lets the fetch go ahead (and is logged).
                logger.error("\(error)", metadata: ["source": "\(source.name)"])
            }
            if heldElsewhere {
                switch await waitForLease(on: source, in: state) {
                case .taken(let waited):
                    leaseNote = waited
                case .stillHeld(let failure):
                    return SourceReport(name: source.name, type: source.type, outcome: .failed(failure), totalItems: 0, duration: source.settings.deadline)
                }
                recorded = await recordedState(of: source.name)
            }
        }
        let fetched = await fetchAndMerge(source, recorded: recorded)
        var report = fetched.report
        if let leaseNote { report.notes.insert(leaseNote, at: 0) }
        if let state, !dryRun {
            do {
                // Recording the fetch also gives its lease back.
                let alerts = source.routing.outputs(for: .failures, among: outputs).map { StateDatabase.AlertRoute(output: $0.name, alertAfter: $0.alertAfter) }
                let recorded = try await state.record(report, settings: source.settings, validators: fetched.validators, bodyHash: fetched.bodyHash, alerts: alerts)
                if let hint = recorded.movedHint { report.notes.append(hint) }
                if !alerts.isEmpty { onOutboxChanged() }
            } catch {
                logger.error("\(error)", metadata: ["source": "\(source.name)"])
                report.notes.append("state not recorded: \(error)")
                try? await state.releaseLease(on: source.name)
            }
        }
        return report
    }

    private enum LeaseWait {
        /// Taken; a note when it had to wait for another process.
        case taken(String?)
        case stillHeld(FetchFailure)
    }

    /// When a lease taken now runs out: long enough for the fetch and its recording; a killed
    /// holder's lease lapses with it. The deadline does not count the wait for a host's slot,
    /// which has its own bound.
    private func leaseEnd(for source: SourceConfig) -> Date {
        Date().addingTimeInterval(Double((source.settings.deadline + http.hosts.limits.queueTimeout).milliseconds) / 1000 + 60)
    }

    /// Takes the source's lease, waiting while another process holds it, up to the source's
    /// deadline. A database that cannot be used lets the fetch go ahead (and is logged).
    private func waitForLease(on source: SourceConfig, in state: StateDatabase) async -> LeaseWait {
        let clock = ContinuousClock()
        let start = clock.now
        let giveUp = start + source.settings.deadline
        let until = leaseEnd(for: source)
        var holder: Int32?
        while true {
            do {
                switch try await state.takeLease(on: source.name, until: until) {
                case .taken:
                    guard let holder else { return .taken(nil) }
                    return .taken("waited \(TextReport.seconds(clock.now - start)) for process \(holder), which was fetching it")
                case .held(let by):
                    if holder == nil { logger.info("waiting for process \(by), which is fetching it", metadata: ["source": "\(source.name)"]) }
                    holder = by
                }
            } catch {
                logger.error("\(error)", metadata: ["source": "\(source.name)"])
                return .taken(nil)
            }
            guard clock.now < giveUp, !Task.isCancelled else {
                let message = Task.isCancelled ? "cancelled while process \(holder ?? 0) was fetching it" : "process \(holder ?? 0) was fetching it for the whole deadline (\(DurationText.format(source.settings.deadline)))"
                return .stillHeld(FetchFailure(Task.isCancelled ? .cancelled : .deadlineExceeded, message))
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func recordedState(of name: String) async -> SourceState? {
        guard let state, !dryRun else { return nil }
        do {
            return try await state.state(of: name)
        } catch {
            logger.error("\(error)", metadata: ["source": "\(name)"])
            return nil
        }
    }

    private func fetchAndMerge(_ source: SourceConfig, recorded: SourceState?) async -> (report: SourceReport, validators: HTTPValidators?, bodyHash: String?) {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + source.settings.deadline
        var logger = logger
        logger[metadataKey: "source"] = "\(source.name)"
        var notes: [String] = []
        let adapter = source.adapter
        // Reading, queuing and writing block on the disk (and a lock, an fsync): off the pool.
        let store = self.store, dryRun = self.dryRun, name = source.name

        var previous: Snapshot?
        var snapshotRead = false
        /// Whether the last fetch's validators and body hash still describe what the snapshot holds.
        var pastIsTrusted = true
        func readSnapshot() async {
            snapshotRead = true
            switch await BlockingWork.run({ store.load(source: name, moveCorruptAside: !dryRun) }) {
            case .missing:
                pastIsTrusted = false
            case .loaded(let snapshot):
                previous = snapshot
            case .corrupt(let reason, let movedTo):
                pastIsTrusted = false
                let note = "snapshot \(store.path(for: name)) was unreadable (\(reason)); "
                    + (movedTo.map { "moved to \($0), starting from an empty baseline" } ?? "starting from an empty baseline")
                logger.warning("\(note)")
                notes.append(note)
            }
        }
        // The snapshot is left unread only when the database vouches for it: a success is
        // recorded, the file is there, and no download needs recording in it.
        let leaveUnread = !adapter.readsPreviousSnapshot && recorded?.lastSuccess != nil && source.download == nil
            && SafeFile.exists(store.path(for: name))
        if !leaveUnread { await readSnapshot() }

        let context = FetchContext(
            sourceName: name, previous: previous, deadline: deadline, http: http, logger: logger,
            validators: pastIsTrusted ? (recorded?.validators ?? previous?.validators) : nil,
            lastBodyHash: pastIsTrusted ? recorded?.bodyHash : nil
        )
        var queueWait: (Duration, String?) = (.zero, nil)
        var answer: (freshFor: Duration?, movedTo: String?) = (nil, nil)
        func report(_ outcome: SourceOutcome, total: Int, isBaseline: Bool) -> SourceReport {
            var report = SourceReport(name: name, type: source.type, outcome: outcome, totalItems: total, duration: clock.now - start, notes: notes, isBaseline: isBaseline)
            (report.queueWait, report.queueHost) = queueWait
            (report.freshFor, report.movedTo) = answer
            return report
        }
        let knownItems = snapshotRead ? previous?.items.count ?? 0 : recorded?.itemCount ?? 0

        let output: FetchOutput
        let fetchDeadline = FetchDeadline(deadline)
        do {
            output = try await withDeadline(fetchDeadline) { try await adapter.fetch(context) }
            queueWait = (await fetchDeadline.queueWait, await fetchDeadline.queueHost)
        } catch {
            queueWait = (await fetchDeadline.queueWait, await fetchDeadline.queueHost)
            let failure = Self.failure(from: error, deadline: source.settings.deadline)
            logger.info("fetch failed: \(failure.message)")
            return (report(.failed(failure), total: knownItems, isBaseline: snapshotRead && previous == nil), nil, nil)
        }
        notes += output.notes
        answer = (output.freshFor, output.movedTo.map(HTTPText.removingCredentials))
        if output.unchanged, source.download == nil {
            // Nothing changed: the snapshot stays as it is. (With downloads it is still read,
            // to record files that finished since.)
            return (report(.noData, total: knownItems, isBaseline: false), output.validators, output.bodyHash)
        }
        if !snapshotRead { await readSnapshot() }

        // Whatever the adapter, nothing oversize reaches the snapshot, the report or a terminal.
        let fetchedItems = FetchedItems(output, previous: previous, source: source)
        if let limitNote = fetchedItems.limitNote { notes.append(limitNote) }
        let merge = fetchedItems.merge, newItems = fetchedItems.newItems
        var items = merge.items
        var queued: [DownloadEntry] = []
        if !dryRun, let settings = source.download, let downloads {
            // A first fetch of a podcast can list hundreds of episodes: with `keep`, only the
            // newest that many are worth downloading.
            let candidates = previous == nil && settings.keep != nil ? Array(newItems.newestFirst().prefix(settings.keep!)) : newItems
            let merged = items, previousItems = previous?.items ?? []
            do {
                (queued, items) = try await BlockingWork.run {
                    let queued = try downloads.enqueue(source: name, items: candidates, settings: settings)
                    return (queued, Self.recordingDownloadedFiles(in: merged, previous: previousItems, settings: settings, queue: downloads))
                }
            } catch {
                logger.error("\(error)")
                notes.append("enclosures not queued for download: \(error)")
            }
        }
        let validators = output.validators ?? previous?.validators
        let adapterState = output.adapterState ?? previous?.adapterState
        let title = fetchedItems.title
        let changed = previous.map { $0.items != items || $0.validators != validators || $0.adapterState != adapterState || $0.type != source.type || $0.title != title } ?? true
        // The outbox first, then the snapshot: a crash between the two fetches the items again
        // as new, and the outbox already has them (a repeat is ignored) — none is lost.
        var queuedForOutputs = 0
        let itemOutputs = source.routing.outputs(for: .items, among: outputs).map(\.name)
        if !dryRun, let state, !itemOutputs.isEmpty, !newItems.isEmpty, previous != nil || source.routing.sendBaseline {
            let deliveries = newItems.map { Delivery.item($0, source: name, sourceTitle: title) }
            do {
                queuedForOutputs = try await state.enqueue(deliveries, for: itemOutputs)
            } catch {
                logger.error("\(error)")
                return (report(.failed(FetchFailure(.snapshot, "new items not put in the outbox (\(error)); the snapshot is left as it was, so they come again")), total: previous?.items.count ?? 0, isBaseline: previous == nil), nil, nil)
            }
        }
        if !dryRun, changed {
            let snapshot = Snapshot(source: name, type: source.type, updatedAt: Date(), items: items, validators: validators, adapterState: adapterState, title: title)
            do {
                try await writer.save(snapshot)
            } catch {
                logger.error("\(error)")
                return (report(.failed(FetchFailure(.snapshot, "snapshot not written: \(error)")), total: previous?.items.count ?? 0, isBaseline: previous == nil), nil, nil)
            }
        }
        if queuedForOutputs > 0 { onOutboxChanged() }
        var finished = report(newItems.isEmpty ? .noData : .newData(newItems), total: merge.items.count, isBaseline: previous == nil)
        finished.queuedDownloads = queued
        finished.title = title
        if source.reportsUpdates, previous != nil { finished.updatedItems = merge.updatedItems }
        return (finished, output.validators, output.bodyHash)
    }

    /// The items with each downloaded enclosure's local file: kept from the previous snapshot
    /// (a fetched item arrives without it), and looked up in the queue only when some wanted
    /// enclosure still has none — so a source whose files are all recorded reads no queue.
    static func recordingDownloadedFiles(in items: [Item], previous: [Item], settings: DownloadSettings, queue: DownloadQueue) -> [Item] {
        var files: [String: String] = [:]
        for item in previous {
            for enclosure in item.enclosures { if let file = enclosure.file { files[enclosure.url] = file } }
        }
        var recorded = items.map { $0.withDownloadedFiles(files) }
        let missing = recorded.contains { $0.enclosures.contains { $0.file == nil && settings.accepts(type: $0.type) } }
        if missing {
            let done = queue.files()
            recorded = recorded.map { $0.withDownloadedFiles(done) }
        }
        return recorded
    }

    package static func failure(from error: any Error, deadline: Duration) -> FetchFailure {
        switch error {
        case is DeadlineExceeded:
            return FetchFailure(.deadlineExceeded, "deadline exceeded after \(DurationText.format(deadline))")
        case let failure as FetchFailure:
            return failure
        case is CancellationError:
            return FetchFailure(.cancelled, "cancelled before it finished")
        default:
            return FetchFailure(.adapter, "\(error)")
        }
    }
}
