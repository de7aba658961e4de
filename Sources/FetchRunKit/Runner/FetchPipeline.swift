import Foundation
import Logging

/// One source's fetch, from its lease to its commit — the one code path of `run`, `watch` and
/// `worker`, whichever store holds the state:
///
/// ```
/// lease ─▶ the past (recorded state; the snapshot, read only when needed)
///       ─▶ adapter.fetch under the deadline
///       ─▶ merge: new and updated items, filters, caps, downloads
///       ─▶ the rules: health, backoff, next due time (SourceState.record), alerts
///       ─▶ commit: outbox rows, snapshot, state — under the lease
/// ```
///
/// A source's failure — an error, a hang cut off at its deadline, a state that cannot be
/// written — is reported for that source alone. With an adapter that does not read its past
/// (`rss`), a fetch that finds nothing changed (a 304, the same body) never reads or writes
/// the snapshot; a snapshot whose items, validators and state are unchanged is not written.
package struct FetchPipeline: Sendable {
    package var store: any SourceStateStore
    /// Shared by every source: connections are reused and limited per host.
    package var http: CurlHTTPClient
    /// Where sources send new items and failure alerts (through the store's outbox).
    package var outputs: [OutputConfig] = []
    /// Where sources with `download:` queue the enclosures of their new items; `nil` queues nothing.
    package var downloads: DownloadQueue?
    /// Fetch and report, but record nothing and move no damaged snapshot aside.
    package var dryRun = false
    package var logger: Logger
    /// A number in -1...1 per failed fetch that spreads its backoff
    /// (``SourceState/record(_:validators:bodyHash:type:settings:at:jitter:)``); not asked for
    /// a fetch that did not fail, whose next time it does not move.
    package var jitter: @Sendable () -> Double = { Double.random(in: -1...1) }
    /// Called after a fetch put something in the outbox (a watch wakes its sender).
    package var onOutboxChanged: @Sendable () -> Void = {}
    /// Where each fetch's outcome is counted (``FetchMetrics``); nowhere by default.
    package var metrics = FetchMetrics.none
    /// When the history's expired records were last pruned: by the first commit of a run, then
    /// hourly, whichever fetch commits then.
    package var historyPruning = HistoryPruning()
    /// The time of every fetch: its deadline, its lease's end, what it records. The HTTP
    /// client's, so that a fetch and its requests read one clock.
    package var clock: any FetchClock { http.clock }
    /// Where `render: browser` pages are fetched; `nil`: such a source fails saying so.
    package var renderer: (any PageRenderer)?
    /// Where a rendered page's screenshots are kept with its changes; `nil`: they are not.
    package var screenshots: ScreenshotFolder?

    package init(store: any SourceStateStore, http: CurlHTTPClient, logger: Logger = Logger(label: "fetchrun")) {
        self.store = store
        self.http = http
        self.logger = logger
    }

    /// What one fetch ended with.
    package struct Fetched: Sendable {
        package var report: SourceReport
        /// The wait until the source's next fetch, as the rules set it (and recorded, unless the
        /// store refused); `nil` after a stop or a dry run, and for `interval: never`.
        package var nextFetch: Duration?
    }

    /// Fetches one source and records what it found.
    ///
    /// - Parameter given: the source's lease when the caller holds it already (a worker's
    ///   leases come in batches); otherwise it is taken here, waiting while another process
    ///   holds it — up to the source's deadline, then the source fails saying who held it.
    /// - Cancellation: the fetch is cancelled and its lease given back; nothing is recorded.
    package func fetch(_ source: SourceConfig, lease given: SourceLease? = nil) async -> Fetched {
        let clock = clock
        let start = clock.now
        var run = SourceFetch(source: source, start: start, clock: clock)
        let lease: SourceLease
        if let given {
            lease = given
        } else {
            switch await takeLease(on: source) {
            case .taken(let taken, let note):
                lease = taken
                if let note { run.notes.append(note) }
            case .notTaken(let failure):
                return Fetched(report: run.report(.failed(failure), total: 0), nextFetch: nil)
            }
        }
        run.state = lease.state
        let adapter = source.adapter
        // A snapshot made by another adapter says nothing about this one's items.
        let typeChanged = lease.state.type.map { $0 != source.type } ?? false
        if typeChanged { run.notes.append("its type changed from \(lease.state.type ?? "?") to \(source.type): starting from a new baseline") }
        /// Whether the recorded validators and body hash still describe what the snapshot holds.
        var pastIsTrusted = !typeChanged
        // The snapshot is left unread only when the store vouches for it: a success is
        // recorded, the snapshot is there, and no download needs recording in it.
        let leaveUnread = !adapter.readsPreviousSnapshot && lease.state.lastSuccess != nil && source.download == nil && lease.hasSnapshot && !typeChanged
        if !leaveUnread {
            let past = await readSnapshot(of: source, under: lease, typeChanged: typeChanged)
            if let failure = past.failure { return await finish(run.report(.failed(failure), total: lease.state.itemCount), of: source, under: lease) }
            run.took(past)
            pastIsTrusted = pastIsTrusted && past.trusted
        }

        var logger = logger
        logger[metadataKey: "source"] = "\(source.name)"
        let deadline = FetchDeadline(start + source.settings.deadline, clock: clock)
        var context = FetchContext(
            sourceName: source.name, previous: run.previous, deadline: start + source.settings.deadline, http: http, logger: logger,
            validators: pastIsTrusted ? (lease.state.validators ?? run.previous?.validators) : nil,
            lastBodyHash: pastIsTrusted ? lease.state.bodyHash : nil
        )
        context.budget = deadline
        context.clock = clock
        context.renderer = renderer
        let output: FetchOutput
        do {
            output = try await withDeadline(deadline) { [context] in try await adapter.fetch(context) }
            (run.queueWait, run.queueHost) = deadline.queued
        } catch {
            (run.queueWait, run.queueHost) = deadline.queued
            let failure = Self.failure(from: error, deadline: source.settings.deadline)
            logger.info("fetch failed: \(failure.message)", metadata: ["kind": "\(failure.kind.rawValue)"])
            return await finish(run.report(.failed(failure), total: run.knownItems, isBaseline: run.snapshotRead && run.previous == nil), of: source, under: lease)
        }
        run.notes += output.notes
        (run.freshFor, run.movedTo) = (output.freshFor, output.movedTo.map(HTTPText.removingCredentials))
        if output.unchanged, source.download == nil {
            // Nothing changed: the snapshot stays as it is. (With downloads it is still read,
            // to record files that finished since.)
            return await finish(run.report(.noData, total: run.knownItems), of: source, under: lease, validators: output.validators, bodyHash: output.bodyHash)
        }
        return await mergeAndCommit(output, of: source, under: lease, run: run, typeChanged: typeChanged)
    }

    /// What the adapter found, merged with the past, turned into the snapshot, the outbox's rows
    /// and the report, then committed. Its own function so that the fetch's frame, which lives
    /// through the wait for the network, holds none of this.
    @inline(never)
    private func mergeAndCommit(_ output: FetchOutput, of source: SourceConfig, under lease: SourceLease, run: SourceFetch, typeChanged: Bool) async -> Fetched {
        var run = run
        if !run.snapshotRead {
            let past = await readSnapshot(of: source, under: lease, typeChanged: typeChanged)
            if let failure = past.failure { return await finish(run.report(.failed(failure), total: lease.state.itemCount), of: source, under: lease) }
            run.took(past)
        }
        let previous = run.previous

        // Whatever the adapter, nothing oversize reaches the snapshot, the report or a terminal.
        var fetched = FetchedItems(output, previous: previous, source: source, at: clock.date)
        if let limitNote = fetched.limitNote { run.notes.append(limitNote) }
        do {
            // The source's deadline bounds its filters too, shifted as the fetch's was by its
            // wait for a connection to the host.
            try await fetched.applyFilter(of: source, until: run.start + source.settings.deadline + run.queueWait, on: clock)
        } catch {
            let failure = error is CancellationError ? FetchFailure(.cancelled, "cancelled") : FetchFailure(.deadlineExceeded, "\(error)")
            return await finish(run.report(.failed(failure), total: run.knownItems), of: source, under: lease)
        }
        var items = fetched.merge.items
        var queued: [DownloadEntry] = []
        if !dryRun, let settings = source.download, let downloads {
            // A first fetch of a podcast can list hundreds of episodes: with `keep`, only the
            // newest that many are worth downloading.
            let candidates = previous == nil && settings.keep != nil ? Array(fetched.newItems.newestFirst().prefix(settings.keep!)) : fetched.newItems
            let merged = items, previousItems = previous?.items ?? [], name = source.name
            do {
                (queued, items) = try await BlockingWork.run {
                    let queued = try downloads.enqueue(source: name, items: candidates, settings: settings, now: clock.date)
                    return (queued, Self.recordingDownloadedFiles(in: merged, previous: previousItems, settings: settings, queue: downloads))
                }
            } catch {
                logger.error("\(error)", metadata: ["source": "\(source.name)"])
                run.notes.append("enclosures not queued for download: \(error)")
            }
        }
        var found = findings(fetched, items: items, queued: queued, output: output, run: run, source: source)
        let condition = notifyWhen(
            output, of: source, under: lease, until: run.start + source.settings.deadline + run.queueWait, isFirstFetch: run.previous == nil, found: &found
        )
        return await finish(
            found.report, of: source, under: lease, snapshot: found.snapshot, deliveries: found.deliveries, validators: output.validators,
            bodyHash: output.bodyHash, condition: condition, screenshot: output.screenshot
        )
    }

    /// The snapshot (`nil` when nothing in it changed), the outbox's rows and the report of
    /// what a fetch found.
    @inline(never)
    private func findings(
        _ fetched: FetchedItems, items: [Item], queued: [DownloadEntry], output: FetchOutput, run: SourceFetch, source: SourceConfig
    ) -> (report: SourceReport, snapshot: Snapshot?, deliveries: [QueuedDelivery]) {
        let previous = run.previous
        var snapshot = Snapshot(
            source: source.name, type: source.type, updatedAt: clock.date, items: items,
            validators: output.validators ?? previous?.validators, adapterState: output.adapterState ?? previous?.adapterState, title: fetched.title
        )
        snapshot.seen = fetched.merge.seen
        let changed = previous.map {
            $0.items != snapshot.items || $0.seen != snapshot.seen || $0.validators != snapshot.validators || $0.adapterState != snapshot.adapterState
                || $0.type != snapshot.type || $0.title != snapshot.title
        } ?? true
        var deliveries: [QueuedDelivery] = []
        if previous != nil || source.routing.sendBaseline {
            for output in source.routing.outputs(for: .items, among: outputs) {
                deliveries += fetched.newItems.map { QueuedDelivery(output: output.name, delivery: .item($0, source: source.name, sourceTitle: fetched.title)) }
            }
        }
        var report = run.report(fetched.newItems.isEmpty ? .noData : .newData(fetched.newItems), total: fetched.merge.heldCount, isBaseline: previous == nil)
        report.queuedDownloads = queued
        report.title = fetched.title
        if source.reportsUpdates, previous != nil { report.updatedItems = fetched.merge.updatedItems }
        return (report, changed ? snapshot : nil, deliveries)
    }

    /// Applies the rules to what the fetch found and commits it under the lease. A commit the
    /// store refuses fails the source, and that failure is recorded in its place; a fetch that
    /// was cancelled, or a dry run, records nothing.
    @inline(never)
    private func finish(
        _ report: SourceReport, of source: SourceConfig, under lease: SourceLease, snapshot: Snapshot? = nil,
        deliveries: [QueuedDelivery] = [], validators: HTTPValidators? = nil, bodyHash: String? = nil, condition: NotifyCondition.State? = nil,
        screenshot: Data? = nil
    ) async -> Fetched {
        var report = report
        // Counted as it ends, with the state as recorded (none when nothing was); a stop is
        // not a fetch that ended.
        var recorded: SourceState?
        defer { if report.outcome.failure?.kind != .cancelled { metrics.recordFetch(report, state: recorded) } }
        if dryRun { return Fetched(report: report, nextFetch: nil) }
        if report.outcome.failure?.kind == .cancelled {
            // A stop is not the source's failure: nothing is recorded, and the lease goes back —
            // from a task of its own, which this one's cancellation does not reach (PostgreSQL's
            // queries end at once in a cancelled task).
            let store = self.store
            await Task { try? await store.release(lease) }.value
            return Fetched(report: report, nextFetch: nil)
        }
        var snapshot = snapshot, deliveries = deliveries, condition = condition
        var recordingFailureInstead = false
        // The work between the awaits is in synchronous helpers: what an async function
        // computes in its own body takes room in its frame for as long as the fetch lasts.
        while true {
            var (commit, delay) = commit(report, of: source, under: lease, snapshot: snapshot, deliveries: deliveries, validators: validators, bodyHash: bodyHash, condition: condition)
            if !recordingFailureInstead, let screenshot { commit = await keeping(screenshot, in: commit, of: source) }
            do {
                guard try await Self.record(commit, in: store, on: clock) else {
                    leaseRanOut(&report, of: source)
                    return Fetched(report: report, nextFetch: delay)
                }
                recorded = commit.state
                if !commit.deliveries.isEmpty { onOutboxChanged() }
                await pruneExpiredHistoryWhenDue()
                if let hint = commit.state.movedHint { report.notes.append(hint) }
                return Fetched(report: report, nextFetch: delay)
            } catch {
                guard !recordingFailureInstead else {
                    // Recording the failure failed as well: the lease goes back, the next fetch tries again.
                    notRecorded(error, of: source, report: &report)
                    try? await store.release(lease)
                    return Fetched(report: report, nextFetch: delay)
                }
                // What was found is not recorded (its items come again); the failure is.
                recordingFailureInstead = true
                recordingFailure(error, of: source, under: lease, instead: &report)
                snapshot = nil
                deliveries = []
                condition = nil
            }
        }
    }

    /// The commit of what `report` found: the state as the rules leave it, with the alerts
    /// they call for, and the wait until the next fetch.
    @inline(never)
    private func commit(
        _ report: SourceReport, of source: SourceConfig, under lease: SourceLease, snapshot: Snapshot?,
        deliveries: [QueuedDelivery], validators: HTTPValidators?, bodyHash: String?, condition: NotifyCondition.State?
    ) -> (FetchCommit, Duration?) {
        var state = lease.state
        if let condition { state.condition = condition }
        let now = clock.date
        // Only a backoff is spread; a random number is a system call (getrandom) per fetch.
        let spread = report.outcome.failure == nil ? 0 : jitter()
        let delay = state.record(report, validators: validators, bodyHash: bodyHash, type: source.type, settings: source.settings, at: now, jitter: spread)
        let alerts = Delivery.alerts(
            for: report, failuresBefore: lease.state.consecutiveFailures, failingSinceBefore: lease.state.failingSince,
            routes: source.routing.outputs(for: .failures, among: outputs).map { ($0.name, $0.alertAfter) }, at: now
        ).map { QueuedDelivery(output: $0.output, delivery: $0.delivery) }
        let retention = source.settings.history
        let records = ChangeRecorder.records(for: report, before: lease.state, after: state, retention: retention, at: now)
        let history = records.isEmpty ? HistoryWrite.none
            : HistoryWrite(records: records, keep: retention.keep, expiresAt: now.addingTimeInterval(Double(retention.maxAge.milliseconds) / 1000))
        return (FetchCommit(lease: lease, state: state, snapshot: snapshot, deliveries: deliveries + alerts, history: history), delay)
    }

    /// Removes the history's expired records, when the last time was an hour ago or more (or
    /// never): one fetch in an hour pays for a delete that an index makes small. A failure is
    /// logged and tried again an hour later (the records only wait longer).
    private func pruneExpiredHistoryWhenDue() async {
        guard historyPruning.claim(at: clock.now) else { return }
        do {
            try await store.pruneHistory(expiredBy: clock.date)
        } catch {
            logger.warning("expired history not pruned: \(error)")
        }
    }

    @inline(never)
    private func leaseRanOut(_ report: inout SourceReport, of source: SourceConfig) {
        logger.warning("its lease ran out before the fetch was recorded; another process has it now, and this fetch is dropped", metadata: ["source": "\(source.name)"])
        report.outcome = .failed(FetchFailure(.state, "not recorded: its lease ran out before the fetch ended, and another process took the source"))
    }

    @inline(never)
    private func notRecorded(_ error: any Error, of source: SourceConfig, report: inout SourceReport) {
        logger.error("\(error)", metadata: ["source": "\(source.name)"])
        report.notes.append("state not recorded: \(error)")
    }

    /// The fetch's findings are dropped and its failure to record them is recorded in their place.
    @inline(never)
    private func recordingFailure(_ error: any Error, of source: SourceConfig, under lease: SourceLease, instead report: inout SourceReport) {
        logger.error("\(error)", metadata: ["source": "\(source.name)"])
        let kind = (error as? StateStoreError)?.failureKind ?? .state
        report.outcome = .failed(FetchFailure(kind, kind == .snapshot ? "\(error)" : "not recorded: \(error)"))
        report.totalItems = lease.state.itemCount
    }

    /// How long a stop waits for the record of a fetch that had ended when the stop came.
    static let recordGrace: Duration = .seconds(2)

    /// Commits a fetch that ended, even when the caller is cancelled meanwhile: a stop keeps
    /// what finished (its snapshot may be written already, and its state follows a moment
    /// later in group commit). A store that does not answer is given ``recordGrace`` after the
    /// cancellation, then the commit is cancelled too and throws.
    static func record(_ commit: FetchCommit, in store: any SourceStateStore, on clock: any FetchClock) async throws -> Bool {
        let recording = Task { try await store.commit(commit) }
        return try await withTaskCancellationHandler {
            try await recording.value
        } onCancel: {
            Task {
                try? await clock.sleep(for: recordGrace)
                recording.cancel()
            }
        }
    }

    /// What reading a source's snapshot found: the previous items, a note when it could not be
    /// read, whether the recorded validators still describe it, or why the fetch must fail.
    fileprivate struct Past {
        var previous: Snapshot?
        var note: String?
        var trusted = true
        var failure: FetchFailure?
    }

    private func readSnapshot(of source: SourceConfig, under lease: SourceLease, typeChanged: Bool) async -> Past {
        let read: SnapshotRead
        if let handedOut = lease.snapshot { read = handedOut } else { read = await store.snapshot(of: source.name, movingCorruptAside: !dryRun) }
        switch read {
        case .missing:
            return Past(trusted: false)
        case .loaded(let snapshot):
            guard !typeChanged else { return Past(trusted: false) }
            // Under another identity the same items have other ids: all of them would be new.
            let identity = snapshot.seen?.identity ?? .guid
            if identity != source.settings.identity {
                return Past(note: "its identity changed from \(identity.rawValue) to \(source.settings.identity.rawValue): starting from a new baseline", trusted: false)
            }
            return Past(previous: snapshot)
        case .corrupt(let note):
            logger.warning("\(note)", metadata: ["source": "\(source.name)"])
            return Past(note: note, trusted: false)
        case .unavailable(let reason):
            return Past(failure: FetchFailure(.state, reason + "; tried again when due"))
        }
    }

    private enum LeaseWait {
        /// Taken; a note when it had to wait for another process.
        case taken(SourceLease, note: String?)
        case notTaken(FetchFailure)
    }

    /// When a lease taken now runs out: long enough for the fetch and its recording; a killed
    /// holder's lease lapses with it. The deadline does not count the wait for a host's slot,
    /// which has its own bound.
    private func leaseEnd(for source: SourceConfig) -> Date {
        clock.date(after: source.settings.deadline + http.queueTimeout + .seconds(60))
    }

    /// Takes the source's lease, waiting while another process holds it, up to the source's deadline.
    private func takeLease(on source: SourceConfig) async -> LeaseWait {
        let clock = clock
        let start = clock.now
        var holder: String?
        while true {
            do {
                switch try await store.lease(source.name, until: leaseEnd(for: source)) {
                case .taken(let lease):
                    return .taken(lease, note: holder.map { "waited \(TextReport.seconds(clock.now - start)) for \($0), which was fetching it" })
                case .held(let by):
                    if holder == nil { logger.info("waiting for \(by), which is fetching it", metadata: ["source": "\(source.name)"]) }
                    holder = by
                }
            } catch {
                logger.error("\(error)", metadata: ["source": "\(source.name)"])
                return .notTaken(FetchFailure(.state, "not leased: \(error)"))
            }
            guard clock.now < start + source.settings.deadline, !Task.isCancelled else {
                let message = Task.isCancelled ? "cancelled while \(holder ?? "another process") was fetching it" : "\(holder ?? "another process") was fetching it for the whole deadline (\(DurationText.format(source.settings.deadline)))"
                return .notTaken(FetchFailure(Task.isCancelled ? .cancelled : .deadlineExceeded, message))
            }
            try? await clock.sleep(for: .milliseconds(50))
        }
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
        let missing = recorded.flatMap { $0.enclosures.filter { $0.file == nil && settings.accepts(type: $0.type) }.map(\.url) }
        if !missing.isEmpty {
            let done = queue.files(of: missing)
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

/// What one fetch has gathered so far, for its report.
private struct SourceFetch {
    let source: SourceConfig
    let start: ContinuousClock.Instant
    let clock: any FetchClock
    var state = SourceState(name: "")
    var previous: Snapshot?
    var snapshotRead = false
    var notes: [String] = []
    var queueWait: Duration = .zero
    var queueHost: String?
    var freshFor: Duration?
    var movedTo: String?

    init(source: SourceConfig, start: ContinuousClock.Instant, clock: any FetchClock) {
        self.source = source
        self.start = start
        self.clock = clock
    }

    mutating func took(_ past: FetchPipeline.Past) {
        snapshotRead = true
        previous = past.previous
        if let note = past.note { notes.append(note) }
    }

    /// Items the source held before this fetch: as recorded (a feed longer than `keep` holds
    /// more than its snapshot), and never fewer than the snapshot holds.
    var knownItems: Int { max(state.itemCount, previous?.items.count ?? 0) }

    func report(_ outcome: SourceOutcome, total: Int, isBaseline: Bool = false) -> SourceReport {
        var report = SourceReport(name: source.name, type: source.type, outcome: outcome, totalItems: total, duration: clock.now - start, notes: notes, isBaseline: isBaseline)
        (report.queueWait, report.queueHost) = (queueWait, queueHost)
        (report.freshFor, report.movedTo) = (freshFor, movedTo)
        return report
    }
}
