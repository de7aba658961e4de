import Foundation

/// The persistent download queue of a state directory: `<state_dir>/downloads/queue.json`.
///
/// Several processes use it — a `fetchrun run` queuing, a detached `fetchrun transfer`
/// downloading, a `fetchrun downloads` reading — so every change is a read-modify-write under
/// an exclusive `flock` on `queue.lock`, and every write is atomic (temporary file, fsync,
/// rename). Who may *download* is a separate question, settled by ``lockTransfers()``.
public struct DownloadQueue: Sendable {
    public let directory: String

    public init(stateDirectory: String) {
        directory = (stateDirectory as NSString).appendingPathComponent("downloads")
    }

    var queuePath: String { (directory as NSString).appendingPathComponent("queue.json") }
    var queueLockPath: String { (directory as NSString).appendingPathComponent("queue.lock") }
    public var transferLockPath: String { (directory as NSString).appendingPathComponent("transfer.lock") }
    /// Where a detached `fetchrun transfer` writes its log.
    public var transferLogPath: String { (directory as NSString).appendingPathComponent("transfer.log") }

    struct File: Decodable {
        var version = 1
        var downloads: [DownloadEntry] = []

        /// One entry per line, for people reading it; written with ``JSONWriter``, since
        /// JSONEncoder took half a second for a queue of 10,000 entries.
        func jsonData() -> Data {
            var json = JSONWriter(capacity: 64 + downloads.count * 700)
            json.beginObject()
            json.key("version")
            json.value(Int64(version))
            json.key("downloads")
            json.beginArray()
            for entry in downloads {
                json.newline(indent: 2)
                json.beginObject()
                entry.writeMembers(into: &json)
                json.endObject()
            }
            json.newline(indent: 0)
            json.endArray()
            json.endObject()
            json.newline(indent: 0)
            return Data(json.bytes)
        }
    }

    /// Every entry, oldest first; empty when there is no queue yet.
    /// - Throws: ``DownloadQueueError`` when the file exists but cannot be read as a queue.
    public func entries() throws -> [DownloadEntry] {
        try read().downloads
    }

    /// Runs `change` on the entries under the queue lock and writes the result atomically.
    /// - Throws: ``DownloadQueueError`` when the folder, lock or file cannot be used;
    ///   whatever `change` throws (nothing is written then).
    @discardableResult
    public func update<T>(_ change: (inout [DownloadEntry]) throws -> T) throws -> T {
        try prepare()
        let lock: Int32
        do {
            lock = try SafeFile.openForWriting(queueLockPath, flags: O_RDWR | O_CREAT)
        } catch {
            throw DownloadQueueError(path: queueLockPath, reason: error.description)
        }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw DownloadQueueError(path: queueLockPath, reason: String(cString: strerror(errno))) }
        }
        var file = try read()
        let before = file.downloads
        let result = try change(&file.downloads)
        if file.downloads != before {
            do {
                try AtomicFile.write(file.jsonData(), to: queuePath)
            } catch {
                throw DownloadQueueError(path: queuePath, reason: "\(error)")
            }
        }
        return result
    }

    /// Takes the transfer lock (`downloads/transfer.lock`): only its holder downloads.
    /// - Throws: ``StateDirectoryError/locked(path:holder:)`` when another process holds it.
    public func lockTransfers() throws(StateDirectoryError) -> StateLock {
        do {
            try prepare()
        } catch {
            throw .unusable(path: directory, reason: error.reason)
        }
        switch StateLock.acquire(transferLockPath) {
        case .success(let lock): return lock
        case .failure(.held(let holder)): throw .locked(path: transferLockPath, holder: holder)
        case .failure(.unusable(let reason)): throw .unusable(path: transferLockPath, reason: reason)
        }
    }

    /// The pid of the process downloading now, if any.
    public var transferHolder: Int32? { StateLock.holder(of: transferLockPath) }

    /// Queues the enclosures of a source's new items that `settings` accepts, skipping any
    /// URL the queue already has (done, queued or in progress) — a failed one is queued again.
    /// - Returns: the entries queued now, in item order.
    public func enqueue(source: String, items: [Item], settings: DownloadSettings, now: Date = Date()) throws -> [DownloadEntry] {
        let wanted = items.flatMap { item in
            item.enclosures.filter { settings.accepts(type: $0.type) }.map { (item, $0) }
        }
        guard !wanted.isEmpty else { return [] }
        return try update { entries in
            var queued: [DownloadEntry] = []
            var indexByURL = Dictionary(entries.enumerated().map { ($1.url, $0) }, uniquingKeysWith: { first, _ in first })
            // Names other entries hold in the folder, finished or not: a file may not exist yet.
            var taken = Set(entries.filter { $0.directory == settings.directory }.flatMap { entry in
                [entry.partName] + (entry.suggestedName.map { [$0] } ?? []) + (entry.file.map { [($0 as NSString).lastPathComponent] } ?? [])
            })
            for (item, enclosure) in wanted {
                if let index = indexByURL[enclosure.url] {
                    guard entries[index].state == .failed else { continue }
                    entries[index].state = .queued
                    entries[index].failure = nil
                    entries[index].attempts = 0
                    queued.append(entries[index])
                    continue
                }
                let name = FileNames.unique(FileNames.fromURL(enclosure.url), in: settings.directory, isTaken: taken.contains)
                taken.insert(name)
                var entry = DownloadEntry(url: enclosure.url, source: source, item: item, enclosure: enclosure, settings: settings, partName: name, queuedAt: now)
                if !Self.isDownloadable(enclosure.url) {
                    entry.state = .failed
                    entry.failure = "only http:// and https:// enclosures are downloaded"
                }
                indexByURL[entry.url] = entries.count
                entries.append(entry)
                queued.append(entry)
            }
            return queued
        }
    }

    /// Local files of done downloads, by URL: what snapshots record per enclosure.
    public func files() -> [String: String] {
        let entries = (try? entries()) ?? []
        return Dictionary(entries.compactMap { entry in entry.state == .done ? entry.file.map { (entry.url, $0) } : nil }, uniquingKeysWith: { first, _ in first })
    }

    static func isDownloadable(_ url: String) -> Bool {
        let lowered = url.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    private func prepare() throws(DownloadQueueError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw DownloadQueueError(path: directory, reason: "cannot create it: \(error.localizedDescription)")
        }
        // Like snapshots/: a link planted in place of this folder would take every write elsewhere.
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw DownloadQueueError(path: directory, reason: "it exists and is not a directory (it is \(SafeFile.describe(info.st_mode & S_IFMT)); fetchrun does not follow links inside the state directory)")
        }
    }

    private func read() throws -> File {
        let data: Data
        do {
            data = try SafeFile.read(queuePath, maxBytes: 256 << 20)
        } catch {
            if error.code == ENOENT { return File() }
            throw DownloadQueueError(path: queuePath, reason: "cannot read it: \(error)")
        }
        do {
            let file = try SnapshotCoding.decoder.decode(File.self, from: data)
            guard file.version <= 1 else { throw DownloadQueueError(path: queuePath, reason: "queue version \(file.version) is newer than this fetchrun understands") }
            return file
        } catch let error as DownloadQueueError {
            throw error
        } catch {
            throw DownloadQueueError(path: queuePath, reason: "not a download queue (\(error)); move it aside to start a new one")
        }
    }

}

/// The download queue's file, folder or lock could not be used.
public struct DownloadQueueError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public var description: String { "download queue \(path): \(reason)" }
}
