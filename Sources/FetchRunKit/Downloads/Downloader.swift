import Foundation
import Logging

/// Downloads what the queue holds, several at once, each resumable.
///
/// Only a process holding the queue's transfer lock (``DownloadQueue/lockTransfers()``) may
/// run one. A download has no overall deadline; it ends when its file is complete, when it
/// stalls, fails or passes `max_size`, or when the run is cancelled — then its `.part` file
/// stays, and the next run resumes it with `Range` / `If-Range`.
package actor Downloader {
    package enum Mode: Sendable {
        /// Return once nothing is queued or running (a one-shot run, `fetchrun transfer`).
        case untilDrained
        /// Keep going until cancelled; new work arrives through ``wake()`` (watch mode).
        case untilCancelled
        /// Keep going until cancelled, looking at the queue file every `interval` for work
        /// queued by other processes (`fetchrun transfer --keep-running`).
        case untilCancelledPollingQueue(interval: Duration)
    }

    /// Its queue updates block (a `flock`, an `fsync`): the actor's code runs on a thread of
    /// its own, never on the cooperative pool.
    private static let executor = DedicatedThreadExecutor(name: "fetchrun-downloads")
    package nonisolated var unownedExecutor: UnownedSerialExecutor { Self.executor.asUnownedSerialExecutor() }

    /// Failed downloads with a passing cause are retried at the next start this many times.
    package static let maxAttempts = 5
    static let tick: Duration = .milliseconds(250)

    private let queue: DownloadQueue
    let http: CurlHTTPClient
    /// Where the bytes downloaded are counted.
    let metrics: FetchMetrics
    let limits: DownloadLimits
    let userAgent: String
    /// Where finished files are recorded per item; `nil` leaves snapshots alone.
    private let snapshots: SnapshotRecorder?
    let logger: Logger
    private let onEvent: @Sendable (DownloadEvent) -> Void

    private var active: [String: Running] = [:]
    /// The pending URLs not running, in queue order, with their hosts, that this downloader
    /// chooses the next downloads from. Read (URLs only) when there may be new work — at the
    /// start, on a ``wake()``, at a poll, when it runs out — and used up as downloads start:
    /// a download's end reads only the rows it starts, not every queued one.
    private var backlog: [(url: String, host: String)] = []
    private var backlogIsCurrent = false
    private var signals: AsyncStream<Signal>.Continuation?
    private var tally = DownloadTally()
    /// Finished downloads whose files their sources' snapshots do not show yet: recorded
    /// together at the next tick, when nothing runs any more, and when the run ends.
    private var unrecorded: [DownloadEntry] = []
    /// A download ended cancelled: the run is stopping — its task cancelled, or its HTTP client
    /// stopped by the same shutdown a moment before the task heard of it. Nothing new starts,
    /// or a download put back in the queue would start again and fail on the stopped client.
    private var stopping = false

    private struct Running {
        var entry: DownloadEntry
        var file: DownloadFile?
        var headSaved = false
        /// Bytes on disk at recent ticks, oldest first, for the rate: ``rateWindow`` of them.
        var samples: [(bytes: Int64, at: ContinuousClock.Instant)] = []

        /// Bytes per second over the samples; 0 until they span half a second.
        var rate: Double {
            guard let first = samples.first, let last = samples.last else { return 0 }
            let span = last.at - first.at
            guard span >= .milliseconds(500) else { return 0 }
            let (seconds, attoseconds) = span.components
            return Double(last.bytes - first.bytes) / (Double(seconds) + Double(attoseconds) / 1e18)
        }
    }

    /// The rate is measured over the last three seconds: steady enough for an ETA, recent
    /// enough to follow a change, and not fooled by the bursts a rate cap makes.
    static let rateWindow: Duration = .seconds(3)

    private enum Signal {
        /// There may be new work in the queue.
        case wake
        /// A download of this downloader ended: a slot is free.
        case slotFreed
        case tick
    }

    package init(
        queue: DownloadQueue, http: CurlHTTPClient, metrics: FetchMetrics = .none, limits: DownloadLimits, snapshots: SnapshotRecorder? = nil,
        userAgent: String = HTTPRequest.defaultUserAgent, logger: Logger = Logger(label: "fetchrun.downloads"),
        onEvent: @escaping @Sendable (DownloadEvent) -> Void = { _ in }
    ) {
        self.queue = queue
        self.http = http
        self.metrics = metrics
        self.limits = limits
        self.snapshots = snapshots
        self.userAgent = userAgent
        self.logger = logger
        self.onEvent = onEvent
    }

    /// Tells a running downloader that the queue has new work.
    package func wake() {
        signals?.yield(.wake)
    }

    private func freeSlot() {
        signals?.yield(.slotFreed)
    }

    func tickNow() {
        signals?.yield(.tick)
    }

    /// Downloads until `mode` says to stop.
    ///
    /// Entries left `downloading` by a process that died are taken up again, and failed ones
    /// with a passing cause are retried (up to ``maxAttempts``).
    /// - Parameter transferLock: released, in `.untilDrained` mode, at the moment the queue is
    ///   seen empty, while the queue is still locked — so a process that queues work a moment
    ///   later finds the lock free and starts a transfer of its own instead of counting on this one.
    /// - Returns: what this run downloaded and what failed.
    /// - Cancellation: running downloads stop at once; their entries go back to `queued` and
    ///   their partial files stay for the next run.
    package func run(_ mode: Mode, transferLock: StateLock? = nil) async -> DownloadTally {
        tally = DownloadTally()
        stopping = false
        do {
            try queue.update(.unfinished) { entries in
                for index in entries.indices where entries[index].isTakenUpAtStart {
                    entries[index].state = .queued
                }
            }
        } catch {
            logger.error("\(error)")
            return tally
        }
        let (stream, continuation) = AsyncStream<Signal>.makeStream()
        signals = continuation
        continuation.yield(.wake)
        let clock = http.clock
        await withTaskGroup(of: Void.self) { group in
            var ticker: Task<Void, Never>?
            if case .untilCancelledPollingQueue(let interval) = mode {
                group.addTask {
                    while !Task.isCancelled {
                        try? await clock.sleep(for: interval)
                        continuation.yield(.wake)
                    }
                }
            }
            for await signal in stream {
                switch signal {
                case .tick:
                    reportProgress()
                    recordFinishedFiles()
                    continue
                case .wake:
                    backlogIsCurrent = false
                case .slotFreed:
                    break
                }
                if stopping || Task.isCancelled {
                    if active.isEmpty { break }
                    continue
                }
                let drained = startWhatFits(in: &group, releasing: mode.isUntilDrained ? transferLock : nil)
                if active.isEmpty {
                    recordFinishedFiles()
                    ticker?.cancel()
                    ticker = nil
                } else if ticker == nil {
                    ticker = Task {
                        while !Task.isCancelled {
                            try? await clock.sleep(for: Self.tick)
                            continuation.yield(.tick)
                        }
                    }
                }
                if drained, mode.isUntilDrained { break }
            }
            ticker?.cancel()
            group.cancelAll()
        }
        recordFinishedFiles()
        signals = nil
        return tally
    }

    private func recordFinishedFiles() {
        guard !unrecorded.isEmpty else { return }
        snapshots?.record(unrecorded)
        unrecorded = []
    }

    /// Starts queued entries while the limits allow. `true` when nothing is queued or running.
    private func startWhatFits(in group: inout TaskGroup<Void>, releasing transferLock: StateLock?) -> Bool {
        var hosts: [String: Int] = [:]
        for running in active.values { hosts[running.entry.hostKey, default: 0] += 1 }
        let running = Set(active.keys)
        let slots = limits.maxInFlight - active.count
        let perHost = limits.maxPerHost
        if backlog.isEmpty { backlogIsCurrent = false }
        if !backlogIsCurrent {
            do {
                backlog = try queue.pendingURLs().filter { !running.contains($0) }.map { ($0, DownloadEntry.hostKey(of: $0)) }
                backlogIsCurrent = true
            } catch {
                logger.error("\(error)")
                return active.isEmpty
            }
        }
        // The next in queue order whose host has room; the rest stay for the next start.
        var chosenPlaces: [Int] = []
        var chosenHosts = hosts
        for place in backlog.indices {
            guard chosenPlaces.count < slots else { break }
            let host = backlog[place].host
            guard chosenHosts[host, default: 0] < perHost else { continue }
            chosenPlaces.append(place)
            chosenHosts[host, default: 0] += 1
        }
        let chosen = chosenPlaces.map { backlog[$0].url }
        if let last = chosenPlaces.last {
            let taken = Set(chosenPlaces)
            backlog.replaceSubrange(...last, with: backlog[...last].indices.filter { !taken.contains($0) }.map { backlog[$0] })
        }
        let folders = limits.folders
        let (started, adopted, refused, nothingLeft): ([DownloadEntry], [DownloadEntry], [DownloadEntry], Bool)
        do {
            // Only the chosen rows: each is checked again, as another process may have changed it.
            (started, adopted, refused, nothingLeft) = try queue.update(.urls(chosen)) { entries, lookup in
                var started: [DownloadEntry] = []
                var adopted: [DownloadEntry] = []
                var refused: [DownloadEntry] = []
                for index in entries.indices where entries[index].isPending && !running.contains(entries[index].url) {
                    if let problem = entries[index].placementProblem(folders: folders) {
                        entries[index].record(.failed(reason: problem, retryable: false, deletePart: false), at: http.clock.date)
                        refused.append(entries[index])
                        continue
                    }
                    // A file another entry finished into is not this one's; unsure is not.
                    let owned = { (path: String) in (try? lookup.ownsFile(path)) ?? true }
                    if let path = Self.finishedEarlier(entries[index], ownedByAnother: owned) {
                        entries[index].record(.done(path: path, bytes: entries[index].size ?? 0, added: 0), at: http.clock.date)
                        adopted.append(entries[index])
                        continue
                    }
                    guard started.count < slots else { break }
                    let host = entries[index].hostKey
                    guard hosts[host, default: 0] < perHost else { continue }
                    hosts[host, default: 0] += 1
                    entries[index].state = .downloading
                    started.append(entries[index])
                }
                // Seen empty while the queue is locked: one who queues a moment later finds the
                // transfer lock free.
                let nothingLeft = try running.isEmpty && started.isEmpty && !lookup.hasPending(besides: Set((adopted + refused).map(\.url)))
                if nothingLeft { transferLock?.release() }
                return (started, adopted, refused, nothingLeft)
            }
        } catch {
            logger.error("\(error)")
            return active.isEmpty
        }
        for entry in refused {
            tally.failed += 1
            logger.warning("\(TerminalText.safe(entry.url)): \(entry.failure ?? "")")
            onEvent(.failed(entry))
        }
        for entry in adopted {
            tally.done += 1
            onEvent(.done(entry))
            unrecorded.append(entry)
        }
        for entry in started {
            active[entry.url] = Running(entry: entry)
            group.addTask { [self] in
                let outcome = await download(entry)
                await finish(entry, outcome)
                await freeSlot()
            }
        }
        // Chosen rows that did not start (refused, adopted, or changed by another process) left
        // their slots unused: look again, or the loop would wait for a download never begun.
        if started.count < chosen.count { freeSlot() }
        return nothingLeft
    }

    // MARK: - Bookkeeping on the actor

    func attach(_ file: DownloadFile, to entry: DownloadEntry, resumingAt offset: Int64?) {
        active[entry.url]?.file = file
        active[entry.url]?.headSaved = false
        active[entry.url]?.samples = []
        onEvent(.started(entry, resumingAt: offset))
    }

    private func finish(_ started: DownloadEntry, _ outcome: Outcome) {
        let running = active.removeValue(forKey: started.url)
        let head = running?.file?.responseHead
        var removed: [DownloadEntry] = []
        let entry: DownloadEntry?
        do {
            // The entry, and when `keep` may delete older files, its source's finished ones.
            let rows: DownloadQueue.Rows = started.keep == nil ? .urls([started.url]) : .urls([started.url]).or(.done(source: started.source, directory: started.directory))
            entry = try queue.update(rows) { entries in
                guard let index = entries.firstIndex(where: { $0.url == started.url }) else { return nil }
                var entry = entries[index]
                if let head { Self.remember(head, in: &entry) }
                entry.record(outcome, at: http.clock.date)
                entries[index] = entry
                if case .done = outcome, let keep = entry.keep {
                    removed = Self.prune(&entries, source: entry.source, directory: entry.directory, keep: keep)
                }
                return entry
            }
        } catch {
            // The file itself is safe (done, or a part to resume); only its record is missing.
            logger.error("\(started.url): \(error)")
            return
        }
        guard let entry else { return }
        switch outcome {
        case .done(_, _, let added):
            tally.done += 1
            tally.bytes += added
            metrics.recordDownloaded(bytes: added)
            onEvent(.done(entry))
            unrecorded.append(entry)
        case .failed(let reason, _, _):
            tally.failed += 1
            logger.info("\(entry.url): \(reason)")
            onEvent(.failed(entry))
        case .cancelled(let added):
            stopping = true
            tally.bytes += added
            metrics.recordDownloaded(bytes: added)
        }
        for entry in removed { onEvent(.removed(entry)) }
    }

    /// Each tick: progress for every running download, and the first time a response is seen,
    /// its validator, size and name saved (a kill from then on can resume). Bytes so far are
    /// not written each time: the part file's size says them, and `fetchrun downloads` reads it.
    private func reportProgress() {
        let now = http.clock.now
        var progress: [DownloadProgress] = []
        var newHeads: [(String, DownloadFile.ResponseHead)] = []
        for (url, var running) in active {
            guard let file = running.file else { continue }
            let bytes = file.bytesInFile
            running.samples.append((bytes, now))
            running.samples.removeAll { now - $0.at > Self.rateWindow }
            if !running.headSaved, let head = file.responseHead {
                running.headSaved = true
                newHeads.append((url, head))
                Self.remember(head, in: &running.entry)
            }
            active[url] = running
            progress.append(DownloadProgress(
                url: url, source: running.entry.source, name: running.entry.suggestedName ?? running.entry.partName,
                received: bytes, size: running.entry.size ?? running.entry.enclosureLength.flatMap { $0 > 0 ? $0 : nil },
                bytesPerSecond: running.rate
            ))
        }
        if !newHeads.isEmpty {
            let heads = Dictionary(newHeads, uniquingKeysWith: { first, _ in first })
            do {
                try queue.update(.urls(heads.keys)) { entries in
                    for index in entries.indices {
                        guard let head = heads[entries[index].url] else { continue }
                        Self.remember(head, in: &entries[index])
                        entries[index].received = active[entries[index].url]?.file?.bytesInFile ?? entries[index].received
                    }
                }
            } catch {
                logger.warning("\(error)")
            }
        }
        if !progress.isEmpty { onEvent(.progress(progress.sorted { $0.name < $1.name })) }
    }
}

extension Downloader.Mode {
    var isUntilDrained: Bool {
        if case .untilDrained = self { return true }
        return false
    }
}
