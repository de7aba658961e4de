import Foundation
import Logging

/// Downloads what the queue holds, several at once, each resumable.
///
/// Only a process holding the queue's transfer lock (``DownloadQueue/lockTransfers()``) may
/// run one. A download has no overall deadline; it ends when its file is complete, when it
/// stalls, fails or passes `max_size`, or when the run is cancelled — then its `.part` file
/// stays, and the next run resumes it with `Range` / `If-Range`.
public actor Downloader {
    public enum Mode: Sendable {
        /// Return once nothing is queued or running (a one-shot run, `fetchrun transfer`).
        case untilDrained
        /// Keep going until cancelled; new work arrives through ``wake()`` (watch mode).
        case untilCancelled
        /// Keep going until cancelled, looking at the queue file every `interval` for work
        /// queued by other processes (`fetchrun transfer --keep-running`).
        case untilCancelledPollingQueue(interval: Duration)
    }

    /// Failed downloads with a passing cause are retried at the next start this many times.
    public static let maxAttempts = 5
    static let tick: Duration = .milliseconds(250)

    private let queue: DownloadQueue
    private let http: HTTPClient
    private let limits: DownloadLimits
    private let userAgent: String
    /// Where finished files are recorded per item; `nil` leaves snapshots alone.
    private let snapshots: SnapshotRecorder?
    private let logger: Logger
    private let onEvent: @Sendable (DownloadEvent) -> Void

    private var active: [String: Running] = [:]
    private var signals: AsyncStream<Signal>.Continuation?
    private var tally = DownloadTally()

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
        case wake, tick
    }

    public init(
        queue: DownloadQueue, http: HTTPClient, limits: DownloadLimits, snapshots: SnapshotRecorder? = nil,
        userAgent: String = HTTPRequest.defaultUserAgent, logger: Logger = Logger(label: "fetchrun.downloads"),
        onEvent: @escaping @Sendable (DownloadEvent) -> Void = { _ in }
    ) {
        self.queue = queue
        self.http = http
        self.limits = limits
        self.snapshots = snapshots
        self.userAgent = userAgent
        self.logger = logger
        self.onEvent = onEvent
    }

    /// Tells a running downloader that the queue has new work.
    public func wake() {
        signals?.yield(.wake)
    }

    private func tickNow() {
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
    public func run(_ mode: Mode, transferLock: StateLock? = nil) async -> DownloadTally {
        tally = DownloadTally()
        do {
            try queue.update { entries in
                for index in entries.indices {
                    if entries[index].state == .downloading { entries[index].state = .queued }
                    if entries[index].state == .failed, entries[index].retryable, entries[index].attempts < Self.maxAttempts {
                        entries[index].state = .queued
                    }
                }
            }
        } catch {
            logger.error("\(error)")
            return tally
        }
        let (stream, continuation) = AsyncStream<Signal>.makeStream()
        signals = continuation
        continuation.yield(.wake)
        await withTaskGroup(of: Void.self) { group in
            var ticker: Task<Void, Never>?
            if case .untilCancelledPollingQueue(let interval) = mode {
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        continuation.yield(.wake)
                    }
                }
            }
            for await signal in stream {
                if case .tick = signal {
                    reportProgress()
                    continue
                }
                let drained = startWhatFits(in: &group, releasing: mode.isUntilDrained ? transferLock : nil)
                if active.isEmpty {
                    ticker?.cancel()
                    ticker = nil
                } else if ticker == nil {
                    ticker = Task {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: Self.tick)
                            continuation.yield(.tick)
                        }
                    }
                }
                if drained, mode.isUntilDrained { break }
            }
            ticker?.cancel()
            group.cancelAll()
        }
        signals = nil
        return tally
    }

    /// Starts queued entries while the limits allow. `true` when nothing is queued or running.
    private func startWhatFits(in group: inout TaskGroup<Void>, releasing transferLock: StateLock?) -> Bool {
        var hosts: [String: Int] = [:]
        for running in active.values { hosts[running.entry.hostKey, default: 0] += 1 }
        let running = Set(active.keys)
        let slots = limits.maxInFlight - active.count
        let perHost = limits.maxPerHost
        let (started, adopted, nothingLeft): ([DownloadEntry], [DownloadEntry], Bool)
        do {
            (started, adopted, nothingLeft) = try queue.update { entries in
                var started: [DownloadEntry] = []
                var adopted: [DownloadEntry] = []
                for index in entries.indices where entries[index].isPending && !running.contains(entries[index].url) {
                    let owned = { (path: String) in entries.contains { $0.file == path } }
                    if let path = Self.finishedEarlier(entries[index], ownedByAnother: owned) {
                        entries[index].record(.done(path: path, bytes: entries[index].size ?? 0, added: 0))
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
                let nothingLeft = running.isEmpty && !entries.contains(where: \.isPending)
                if nothingLeft { transferLock?.release() }
                return (started, adopted, nothingLeft)
            }
        } catch {
            logger.error("\(error)")
            return active.isEmpty
        }
        for entry in adopted {
            tally.done += 1
            onEvent(.done(entry))
            snapshots?.record(entry)
        }
        for entry in started {
            active[entry.url] = Running(entry: entry)
            group.addTask { [self] in
                let outcome = await download(entry)
                await finish(entry, outcome)
                await wake()
            }
        }
        return nothingLeft
    }

    // MARK: - One download

    enum Outcome {
        case done(path: String, bytes: Int64, added: Int64)
        case failed(reason: String, retryable: Bool, deletePart: Bool)
        case cancelled(added: Int64)
    }

    /// Downloads one entry into its `.part` file and, when complete, renames it into place.
    private nonisolated func download(_ entry: DownloadEntry) async -> Outcome {
        let directory = entry.directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            return .failed(reason: "cannot create \(directory): \(error.localizedDescription)", retryable: false, deletePart: false)
        }
        // O_NOFOLLOW: a symlink planted at the part's name must not send bytes elsewhere.
        let descriptor = open(entry.partPath, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else {
            return .failed(reason: "cannot open \(entry.partPath): \(String(cString: strerror(errno)))", retryable: false, deletePart: false)
        }
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        var offset = Int64(info.st_size)
        let startBytes = offset
        if offset > 0, entry.validator == nil {
            // Nothing to prove the server's file is still the one these bytes came from.
            logger.info("\(entry.partName).part: \(offset) bytes but no ETag or Last-Modified to resume with; starting over")
            ftruncate(descriptor, 0)
            offset = 0
        }

        // At most twice: a 416 for a stale offset starts the file over once.
        for _ in 0..<2 {
            let resume = offset > 0 ? DownloadRequest.Resume(offset: offset, validator: entry.validator!) : nil
            // A tick right away saves the new validator: a kill from then on can resume.
            let file = DownloadFile(descriptor: descriptor, currentSize: offset) { [weak self] in
                Task { await self?.tickNow() }
            }
            await attach(file, to: entry, resumingAt: resume?.offset)
            let request = DownloadRequest(
                url: entry.url, maxBytes: entry.maxSize, maxBytesPerSecond: entry.maxRate,
                connectTimeout: limits.connectTimeout, stallTimeout: limits.stallTimeout, userAgent: userAgent, resume: resume
            )
            let response: DownloadResponse
            do {
                response = try await http.download(request, into: file)
            } catch is CancellationError {
                return .cancelled(added: max(0, file.bytesInFile - startBytes))
            } catch let error as HTTPError {
                return .failed(reason: error.message, retryable: error.kind == .network, deletePart: error.kind == .bodyTooLarge)
            } catch {
                return .failed(reason: "\(error)", retryable: true, deletePart: false)
            }

            // 416 with `bytes */<size>`: nothing past the offset. When the size is the offset,
            // the part was already whole (a kill before it was moved into place).
            let wholeAlready = response.status == 416 && resume != nil && Self.unsatisfiedRangeSize(response.headers["content-range"]) == offset
            if response.status == 416, resume != nil, !wholeAlready {
                ftruncate(descriptor, 0)
                offset = 0
                continue
            }
            guard response.wroteBody || wholeAlready else {
                let retryable = response.status >= 500 || response.status == 429 || response.status == 408
                return .failed(reason: "HTTP \(response.status)", retryable: retryable, deletePart: false)
            }
            let added = response.status == 200 ? response.fileBytes : response.fileBytes - startBytes
            let expected = wholeAlready ? offset : response.announcedSize ?? entry.enclosureLength.flatMap { $0 > 0 ? $0 : nil }
            if let expected, expected != response.fileBytes {
                let whose = response.announcedSize != nil ? "the server announced" : "the feed gave"
                return .failed(reason: "incomplete: \(response.fileBytes) bytes, \(whose) \(expected)", retryable: true, deletePart: false)
            }
            guard fsync(descriptor) == 0 else {
                return .failed(reason: "cannot write \(entry.partPath): \(String(cString: strerror(errno)))", retryable: true, deletePart: false)
            }
            let suggested = response.headers["content-disposition"].flatMap(FileNames.fromContentDisposition)
            // A resumed response may leave out the name the first one gave.
            switch Self.moveIntoPlace(entry.partPath, directory: directory, name: suggested ?? entry.suggestedName ?? entry.partName) {
            case .success(let path):
                return .done(path: path, bytes: response.fileBytes, added: added)
            case .failure(.failed(let reason)):
                return .failed(reason: reason, retryable: false, deletePart: false)
            }
        }
        return .failed(reason: "the server refused the range twice (HTTP 416)", retryable: false, deletePart: true)
    }

    /// The file of an entry a killed process had already moved into place but not yet
    /// recorded as done: at its name, of the size the server announced, owned by no other
    /// entry. Its part file, left when the kill came between link and unlink, is removed.
    static func finishedEarlier(_ entry: DownloadEntry, ownedByAnother: (String) -> Bool) -> String? {
        guard let size = entry.size else { return nil }
        let path = (entry.directory as NSString).appendingPathComponent(entry.suggestedName ?? entry.partName)
        guard FileManager.default.fileExists(atPath: path), fileSize(path) == size, !ownedByAnother(path) else { return nil }
        let part = fileSize(entry.partPath)
        guard part == 0 || part == size else { return nil }
        unlink(entry.partPath)
        return path
    }

    /// The size in a 416's `Content-Range: bytes */<size>`.
    static func unsatisfiedRangeSize(_ header: String?) -> Int64? {
        guard let header, let slash = header.firstIndex(of: "/"), header.lowercased().hasPrefix("bytes *") else { return nil }
        return Int64(header[header.index(after: slash)...].trimmingCharacters(in: .whitespaces))
    }

    enum PlacementError: Error { case failed(String) }

    /// Renames the finished part to `name`, or `name-2.ext`, … — never over an existing file
    /// (`link` fails rather than replace), then makes the new entry durable.
    static func moveIntoPlace(_ partPath: String, directory: String, name: String) -> Result<String, PlacementError> {
        let (stem, ext) = FileNames.split(name)
        var candidate = name
        var counter = 2
        while true {
            let target = (directory as NSString).appendingPathComponent(candidate)
            if link(partPath, target) == 0 {
                unlink(partPath)
                let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if folder >= 0 {
                    fsync(folder)
                    close(folder)
                }
                return .success(target)
            }
            guard errno == EEXIST, counter < 10_000 else {
                return .failure(.failed("cannot move \(partPath) to \(target): \(String(cString: strerror(errno)))"))
            }
            candidate = "\(stem)-\(counter)\(ext)"
            counter += 1
        }
    }

    // MARK: - Bookkeeping on the actor

    private func attach(_ file: DownloadFile, to entry: DownloadEntry, resumingAt offset: Int64?) {
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
            entry = try queue.update { entries in
                guard let index = entries.firstIndex(where: { $0.url == started.url }) else { return nil }
                var entry = entries[index]
                if let head { Self.remember(head, in: &entry) }
                entry.record(outcome)
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
            onEvent(.done(entry))
            snapshots?.record(entry)
        case .failed(let reason, _, _):
            tally.failed += 1
            logger.info("\(entry.url): \(reason)")
            onEvent(.failed(entry))
        case .cancelled(let added):
            tally.bytes += added
        }
        for entry in removed { onEvent(.removed(entry)) }
    }

    /// Deletes the files of a source's done downloads beyond the newest `keep`.
    static func prune(_ entries: inout [DownloadEntry], source: String, directory: String, keep: Int) -> [DownloadEntry] {
        let done = entries.indices.filter { entries[$0].source == source && entries[$0].directory == directory && entries[$0].state == .done }
        let newestFirst = done.sorted { (entries[$0].published ?? entries[$0].queuedAt) > (entries[$1].published ?? entries[$1].queuedAt) }
        var removed: [DownloadEntry] = []
        for index in newestFirst.dropFirst(keep) {
            if let file = entries[index].file { unlink(file) }
            entries[index].state = .removed
            removed.append(entries[index])
        }
        return removed
    }

    /// Keeps what a response said about the file: the validator a resume needs, its size, its name.
    static func remember(_ head: DownloadFile.ResponseHead, in entry: inout DownloadEntry) {
        guard head.status == 200 || head.status == 206 else { return }
        if head.status == 200 {
            let etag = head.headers["etag"].flatMap { $0.hasPrefix("W/") ? nil : $0 }
            entry.validator = etag ?? head.headers["last-modified"]
        }
        let range = head.headers["content-range"].flatMap(ContentRange.init)
        if let size = head.status == 206 ? range?.total : head.headers["content-length"].flatMap({ Int64($0) }) {
            entry.size = size
        }
        if let disposition = head.headers["content-disposition"].flatMap(FileNames.fromContentDisposition) {
            entry.suggestedName = disposition
        }
    }

    /// Bytes of an entry's partial file on disk now (what `fetchrun downloads` shows for one
    /// another process is downloading).
    public static func partSize(of entry: DownloadEntry) -> Int64 {
        fileSize(entry.partPath)
    }

    static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Each tick: progress for every running download, and the first time a response is seen,
    /// its validator, size and name saved (a kill from then on can resume). Bytes so far are
    /// not written each time: the part file's size says them, and `fetchrun downloads` reads it.
    private func reportProgress() {
        let now = ContinuousClock.now
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
                try queue.update { entries in
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

extension DownloadEntry {
    /// The entry after a download attempt ended this way.
    mutating func record(_ outcome: Downloader.Outcome) {
        switch outcome {
        case .done(let path, let bytes, _):
            state = .done
            file = path
            received = bytes
            size = bytes
            failure = nil
            finishedAt = Date()
        case .failed(let reason, let retryable, let deletePart):
            state = .failed
            failure = reason
            self.retryable = retryable
            attempts += 1
            finishedAt = Date()
            if deletePart {
                unlink(partPath)
                received = 0
                validator = nil
            } else {
                received = Downloader.fileSize(partPath)
            }
        case .cancelled:
            state = .queued
            received = Downloader.fileSize(partPath)
        }
    }
}

extension Downloader.Mode {
    var isUntilDrained: Bool {
        if case .untilDrained = self { return true }
        return false
    }
}
