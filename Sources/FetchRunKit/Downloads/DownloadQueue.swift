import Foundation

/// The persistent download queue of a state directory: a table of `<state_dir>/state.db`, one
/// row per URL (which is what makes a URL download once across items, sources and runs).
///
/// Several processes use it — a `fetchrun run` queuing, a detached `fetchrun transfer`
/// downloading, a `fetchrun downloads` reading — so every change is a read-modify-write in one
/// SQLite write transaction (`BEGIN IMMEDIATE`: one writer at a time across processes, and a
/// crash leaves the queue as it was before or after), writing only the rows that changed.
/// Who may *download* is a separate question, settled by ``lockTransfers()``.
///
/// Each call opens a connection of its own and closes it: the queue changes a few times per
/// download (queued, started, response head, finished), and a value that any task or process
/// can make and drop stays simpler than a shared handle. Source state keeps the process's one
/// long-lived writer, ``SQLiteStateStore``.
///
/// A `downloads/queue.json` left by an earlier fetchrun is imported at the first use and
/// renamed to `queue.json.imported`.
package struct DownloadQueue: Sendable {
    public let directory: String
    private let databasePath: String

    public init(stateDirectory: String) {
        directory = (stateDirectory as NSString).appendingPathComponent("downloads")
        databasePath = StateSchema.path(in: stateDirectory)
    }

    var legacyQueuePath: String { (directory as NSString).appendingPathComponent("queue.json") }
    public var transferLockPath: String { (directory as NSString).appendingPathComponent("transfer.lock") }
    /// Where a detached `fetchrun transfer` writes its log.
    public var transferLogPath: String { (directory as NSString).appendingPathComponent("transfer.log") }

    /// Every entry, oldest first; empty when there is no queue yet.
    /// - Throws: ``DownloadQueueError`` when the database exists but cannot be read as a queue.
    public func entries() throws -> [DownloadEntry] {
        if FileManager.default.fileExists(atPath: legacyQueuePath) { return try update { $0 } }
        guard FileManager.default.fileExists(atPath: databasePath) else { return [] }
        let connection = try open()
        return try rows(in: connection).map(\.entry)
    }

    /// Runs `change` on the entries in one write transaction and writes the rows it changed.
    /// - Throws: ``DownloadQueueError`` when the folder or database cannot be used;
    ///   whatever `change` throws (nothing is written then).
    @discardableResult
    public func update<T>(_ change: (inout [DownloadEntry]) throws -> T) throws -> T {
        try prepare()
        let connection = try open()
        var imported = false
        let result: T
        do {
            result = try connection.transaction {
                imported = try importLegacyQueue(into: connection)
                let before = try rows(in: connection)
                var entries = before.map(\.entry)
                let result = try change(&entries)
                try write(entries, over: before, in: connection)
                return result
            }
        } catch let error as DownloadQueueError {
            throw error
        } catch let error as SQLiteError {
            throw DownloadQueueError(path: databasePath, reason: error.message)
        }
        // Renamed only once the import is committed: a crash before it imports again, and
        // entries already in the table are kept.
        if imported { _ = rename(legacyQueuePath, legacyQueuePath + ".imported") }
        return result
    }

    private typealias Row = (position: Int64, entry: DownloadEntry)

    private func open() throws(DownloadQueueError) -> SQLiteConnection {
        do {
            try StateSchema.refuseAnythingButAFile(databasePath)
        } catch {
            throw DownloadQueueError(path: error.store, reason: error.reason)
        }
        do {
            let connection = try SQLiteConnection(path: databasePath)
            try StateSchema.migrate(connection)
            return connection
        } catch {
            throw DownloadQueueError(path: databasePath, reason: error.message)
        }
    }

    private func rows(in connection: SQLiteConnection) throws -> [Row] {
        var rows: [Row] = []
        var unreadable: String?
        try connection.query("SELECT position, url, entry FROM downloads ORDER BY position") { row in
            guard let position = row.integer(0), let text = row.text(2),
                  let entry = try? SnapshotCoding.decoder.decode(DownloadEntry.self, from: Data(text.utf8))
            else {
                unreadable = unreadable ?? (row.text(1) ?? "?")
                return
            }
            rows.append((position, entry))
        }
        if let unreadable {
            throw DownloadQueueError(path: databasePath, reason: "the download queue's entry for \(TerminalText.safe(unreadable)) is not readable; `fetchrun downloads` lists the rest once it is removed")
        }
        return rows
    }

    /// Writes what `change` did: new and changed entries, and deletes entries it dropped. An
    /// entry keeps its position; new ones go to the end, in the order they were added.
    private func write(_ entries: [DownloadEntry], over before: [Row], in connection: SQLiteConnection) throws {
        let old = Dictionary(before.map { ($0.entry.url, $0) }, uniquingKeysWith: { first, _ in first })
        var next = (before.last?.position ?? -1) + 1
        var kept = Set<String>()
        for entry in entries where kept.insert(entry.url).inserted {
            let position: Int64
            if let previous = old[entry.url] {
                guard previous.entry != entry else { continue }
                position = previous.position
            } else {
                position = next
                next += 1
            }
            try connection.query(
                "INSERT INTO downloads (url, position, state, entry) VALUES (?, ?, ?, ?) ON CONFLICT(url) DO UPDATE SET position = excluded.position, state = excluded.state, entry = excluded.entry",
                [.text(entry.url), .integer(position), .text(entry.state.rawValue), .text(Self.json(entry))]
            )
        }
        for url in old.keys where !kept.contains(url) {
            try connection.query("DELETE FROM downloads WHERE url = ?", [.text(url)])
        }
    }

    private static func json(_ entry: DownloadEntry) -> String {
        var json = JSONWriter(capacity: 700)
        json.beginObject()
        entry.writeMembers(into: &json)
        json.endObject()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    /// Adds the entries of a `queue.json` from before the queue moved into `state.db` (entries
    /// already in the table win). `true` when there was one to import.
    private func importLegacyQueue(into connection: SQLiteConnection) throws -> Bool {
        let data: Data
        do {
            data = try SafeFile.read(legacyQueuePath, maxBytes: 256 << 20)
        } catch {
            if error.code == ENOENT { return false }
            throw DownloadQueueError(path: legacyQueuePath, reason: "cannot read it to import it: \(error)")
        }
        struct LegacyFile: Decodable {
            var version = 1
            var downloads: [DownloadEntry] = []
        }
        let file: LegacyFile
        do {
            file = try SnapshotCoding.decoder.decode(LegacyFile.self, from: data)
        } catch {
            throw DownloadQueueError(path: legacyQueuePath, reason: "not a download queue (\(error)), so it cannot be imported into \(databasePath); move it aside to go on without it")
        }
        guard file.version <= 1 else {
            throw DownloadQueueError(path: legacyQueuePath, reason: "queue version \(file.version) is newer than this fetchrun understands")
        }
        var position = (try connection.integer("SELECT max(position) FROM downloads") ?? -1) + 1
        for entry in file.downloads {
            try connection.query(
                "INSERT INTO downloads (url, position, state, entry) VALUES (?, ?, ?, ?) ON CONFLICT(url) DO NOTHING",
                [.text(entry.url), .integer(position), .text(entry.state.rawValue), .text(Self.json(entry))]
            )
            position += 1
        }
        return true
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
            var counters: [String: Int] = [:]
            for (item, enclosure) in wanted {
                if let index = indexByURL[enclosure.url] {
                    guard entries[index].state == .failed else { continue }
                    entries[index].state = .queued
                    entries[index].failure = nil
                    entries[index].attempts = 0
                    queued.append(entries[index])
                    continue
                }
                // A file of the URL's name that no entry owns may be this very download, left by
                // an earlier state directory: it keeps the name, to be adopted if its size matches.
                let wanted = FileNames.fromURL(enclosure.url)
                let adopts = !taken.contains(wanted) && FileNames.isRegularFile(wanted, in: settings.directory)
                    && !FileNames.exists(wanted + ".part", in: settings.directory)
                let name = adopts ? wanted : FileNames.unique(wanted, in: settings.directory, isTaken: taken.contains, counters: &counters)
                taken.insert(name)
                var entry = DownloadEntry(url: enclosure.url, source: source, item: item, enclosure: enclosure, settings: settings, partName: name, queuedAt: now)
                if adopts { entry.adoptsExisting = true }
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
}

/// The download queue's database, folder or lock could not be used.
package struct DownloadQueueError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public var description: String { "download queue \(path): \(reason)" }
}
