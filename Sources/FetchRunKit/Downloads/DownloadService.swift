import Logging
import ServiceLifecycle

/// Enclosure downloads of one state directory, as a `Service`: everything about downloading
/// except printing, which belongs to whoever reads ``events``.
///
/// It makes its own HTTP client (downloads never hold back fetches) that lets the downloader
/// keep to `per_host` itself, takes the queue's transfer lock — only its holder downloads —
/// and, in ``Mode/untilDrained``, hands the lock back the moment it sees the queue empty, so
/// that a process queuing work a moment later starts downloading it instead of counting on
/// this one. Failed downloads with a passing cause are retried when it starts.
///
/// Stopping: graceful shutdown or cancellation stops the downloads in flight at once; their
/// entries go back to `queued` and their partial files stay, to resume with `Range` at the next
/// start. ``events`` ends with ``Event/finished(_:interrupted:duration:)`` and then finishes.
package actor DownloadService: Service {
    public enum Mode: Sendable, Equatable {
        /// Download what the queue holds, then return (a one-shot run, `fetchrun transfer`).
        case untilDrained
        /// Run until shut down; download when the queue has work at start or ``wake()`` says a
        /// fetch queued some. When another process holds the transfer lock, try again at the
        /// next wake (watch mode).
        case untilShutdown
        /// Run until shut down, looking at the queue every `interval` for work other processes
        /// queued (`fetchrun transfer --keep-running`).
        case untilShutdownPollingQueue(interval: Duration)
    }

    public enum Event: Sendable {
        case download(DownloadEvent)
        /// Another process holds the transfer lock and downloads this queue; in
        /// ``Mode/untilShutdown`` said once, however often the service tries again.
        case transferElsewhere(pid: Int32?)
        /// Downloads could not run at all (the queue's folder or lock is unusable).
        case unusable(StateDirectoryError)
        /// The service is done; `interrupted` when shutdown or cancellation stopped downloads
        /// before the queue was drained.
        case finished(DownloadTally, interrupted: Bool, duration: Duration)
    }

    /// The lock the process running the service holds: it decides when a finished file can be
    /// written into its source's snapshot at once (no one else can be fetching the source) and
    /// when it is left to the source's next fetch.
    public enum LockHeld: Sendable {
        /// The state directory's lock (a `run`).
        case stateDirectory
        /// The watch lock (a `watch`).
        case watch
        /// Neither (a detached transfer, or a program of its own).
        case none
    }

    /// What the service reports, in order; finishes when ``run()`` returns.
    public nonisolated let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation

    public nonisolated let queue: DownloadQueue
    private let mode: Mode
    private let downloader: Downloader
    private var transferLock: StateLock?
    private var wakeSink: AsyncStream<Void>.Continuation?
    private var downloading = false
    private var toldAboutHolder = false

    /// - Parameters:
    ///   - lockHeld: which of the state directory's locks the caller holds (see ``LockHeld``).
    ///   - metrics: where the downloads' responses and bytes are counted.
    public init(stateDirectory: StateDirectory, limits: DownloadLimits, mode: Mode, lockHeld: LockHeld, metrics: FetchMetrics = .none, logger: Logger = Logger(label: "fetchrun.downloads")) {
        queue = stateDirectory.downloads
        self.mode = mode
        let (events, eventSink) = AsyncStream<Event>.makeStream()
        self.events = events
        self.eventSink = eventSink
        // The downloader keeps to `per_host` itself; curl must not queue what it starts, or
        // the wait would count towards the stall limit.
        var http = CurlHTTPClient.Configuration()
        http.maxConnectionsPerHost = max(http.maxConnectionsPerHost, limits.maxPerHost)
        downloader = Downloader(
            queue: stateDirectory.downloads, http: CurlHTTPClient(configuration: http, metrics: metrics), metrics: metrics, limits: limits,
            snapshots: SnapshotRecorder(stateDirectory: stateDirectory, holder: lockHeld == .stateDirectory ? .run : lockHeld == .watch ? .watch : .neither, logger: logger),
            logger: logger, onEvent: { eventSink.yield(.download($0)) }
        )
    }

    /// Whether the queue holds downloads to run: queued, left `downloading` by a process that
    /// died, or failed for a passing cause and not yet tried ``Downloader/maxAttempts`` times —
    /// which a start retries, so a run with nothing new still retries them.
    /// - Throws: ``DownloadQueueError`` when the queue cannot be read.
    public nonisolated func hasPendingWork() throws -> Bool {
        try Self.hasPendingWork(queue)
    }

    /// ``hasPendingWork()`` for any queue.
    public static func hasPendingWork(_ queue: DownloadQueue) throws -> Bool {
        try queue.entries(.unfinished).contains { $0.isPending || $0.isTakenUpAtStart }
    }

    /// Queues every failed download again, whatever its cause, with its attempts reset: it
    /// runs at the next start of a service on this queue.
    /// - Returns: every entry after the change.
    /// - Throws: ``DownloadQueueError`` when the queue cannot be read or written.
    public static func retryFailed(in queue: DownloadQueue) throws -> [DownloadEntry] {
        try queue.update { entries in
            for index in entries.indices where entries[index].state == .failed {
                entries[index].state = .queued
                entries[index].attempts = 0
                entries[index].failure = nil
            }
            return entries
        }
    }

    /// Takes the transfer lock now, for a caller that must know before ``run()`` whether this
    /// process will download; ``run()`` takes it otherwise. Taking it twice is harmless.
    /// - Throws: ``StateDirectoryError/locked(path:holder:)`` when another process downloads
    ///   this queue; ``StateDirectoryError/unusable(path:reason:)`` when the lock cannot be used.
    public func takeTransferLock() throws(StateDirectoryError) {
        if transferLock == nil { transferLock = try queue.lockTransfers() }
    }

    /// Says that a fetch queued work: a running downloader picks it up; in
    /// ``Mode/untilShutdown`` a service still waiting for the lock tries again.
    public func wake() async {
        if downloading {
            await downloader.wake()
        } else {
            wakeSink?.yield()
        }
    }

    /// Downloads as ``Mode`` says, until drained or shut down.
    /// - Throws: in ``Mode/untilDrained`` and ``Mode/untilShutdownPollingQueue(interval:)``,
    ///   ``StateDirectoryError`` when the transfer lock cannot be taken (another process holds
    ///   it, or it is unusable). ``Mode/untilShutdown`` reports those as events and waits.
    public func run() async throws {
        let clock = downloader.http.clock
        let started = clock.now
        defer { eventSink.finish() }
        let downloaderMode: Downloader.Mode
        switch mode {
        case .untilDrained:
            try takeTransferLock()
            downloaderMode = .untilDrained
        case .untilShutdownPollingQueue(let interval):
            try takeTransferLock()
            downloaderMode = .untilCancelledPollingQueue(interval: interval)
        case .untilShutdown:
            guard await lockWhenWorkArrives() else {
                eventSink.yield(.finished(DownloadTally(), interrupted: false, duration: clock.now - started))
                return
            }
            downloaderMode = .untilCancelled
        }
        downloading = true
        let downloader = self.downloader, lock = transferLock
        // Cancelled, the downloader stops its transfers and returns what it did so far. Its
        // HTTP client runs as long as it does.
        let tally = await withRunning(downloader.http) {
            await cancelWhenGracefulShutdown { await downloader.run(downloaderMode, transferLock: lock) }
        }
        downloading = false
        transferLock?.release()
        transferLock = nil
        let interrupted = Task.isCancelled || Task.isShuttingDownGracefully
        eventSink.yield(.finished(tally, interrupted: interrupted, duration: clock.now - started))
    }

    /// Watch mode: waits for work (at start, or a ``wake()``) that this process can take the
    /// transfer lock for. `false` when shut down first.
    private func lockWhenWorkArrives() async -> Bool {
        let (wakes, wakeSink) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.wakeSink = wakeSink
        defer { self.wakeSink = nil }
        if (try? hasPendingWork()) == true { wakeSink.yield() }
        for await _ in wakes.cancelOnGracefulShutdown() {
            do {
                try takeTransferLock()
                return true
            } catch .locked {
                if !toldAboutHolder {
                    toldAboutHolder = true
                    eventSink.yield(.transferElsewhere(pid: queue.transferHolder))
                }
            } catch {
                eventSink.yield(.unusable(error))
                return false
            }
        }
        return false
    }
}
