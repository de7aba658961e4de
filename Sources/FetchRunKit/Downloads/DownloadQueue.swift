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
/// The queue keeps a row for every URL it ever downloaded, so those routine changes read only
/// the ``Rows`` they are about: reading every row at each step of each download made the
/// bookkeeping grow with the square of the downloads (2,000 enclosures of one feed took 149 s
/// of CPU).
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

    /// Which rows of the queue a read or a change is about.
    package struct Rows: Sendable {
        let condition: String
        let arguments: [SQLiteValue]

        /// Every row: for what a person asks (`downloads`, `--retry`).
        package static let all = Rows(condition: "1", arguments: [])
        /// Queued and downloading.
        package static let pending = Rows(condition: "state IN ('queued', 'downloading')", arguments: [])
        /// Pending, and failed for a passing cause fewer than ``Downloader/maxAttempts`` times:
        /// what a start takes up again. Not every failed row: those stay for good.
        package static let unfinished = Rows(
            condition: "state IN ('queued', 'downloading') OR (state = 'failed' AND retryable = 1 AND attempts < \(Downloader.maxAttempts))",
            arguments: []
        )

        /// The rows of these URLs.
        package static func urls(_ urls: some Sequence<String>) -> Rows {
            var list = JSONWriter()
            list.beginArray()
            for url in urls { list.value(url) }
            list.endArray()
            return Rows(condition: "url IN (SELECT value FROM json_each(?))", arguments: [.text(list.string)])
        }

        /// A source's finished downloads in a folder: what `keep` weighs.
        package static func done(source: String, directory: String) -> Rows {
            Rows(condition: "state = 'done' AND directory = ? AND source = ?", arguments: [.text(directory), .text(source)])
        }

        /// These rows and `other`'s.
        package func or(_ other: Rows) -> Rows {
            Rows(condition: "(\(condition)) OR (\(other.condition))", arguments: arguments + other.arguments)
        }
    }

    /// What a change may ask about rows it did not read, within its transaction.
    package struct Lookup {
        fileprivate let connection: SQLiteConnection

        /// Whether an entry's finished file is `path`.
        package func ownsFile(_ path: String) throws -> Bool {
            try connection.integer("SELECT count(*) FROM downloads WHERE file = ?", [.text(path)]) ?? 0 > 0
        }

        /// Whether a row of `directory`, whatever its state, holds `name` there: as its part
        /// file's, as the name the server suggested, or as its finished file's. A file may not
        /// exist yet, and a removed one's name stays with its row.
        package func holdsName(_ name: String, in directory: String) throws -> Bool {
            try connection.integer(Self.holdsNameQuery, [.text(directory), .text(name)]) == 1
        }

        /// One index lookup per kind of name (`?1` the folder, `?2` the name).
        package static let holdsNameQuery = """
            SELECT EXISTS (SELECT 1 FROM downloads WHERE directory = ?1 AND part_name = ?2)
                OR EXISTS (SELECT 1 FROM downloads WHERE directory = ?1 AND suggested_name = ?2)
                OR EXISTS (SELECT 1 FROM downloads WHERE directory = ?1 AND file_name = ?2)
            """

        /// Whether an entry other than those of `urls` is queued or downloading.
        package func hasPending(besides urls: Set<String>) throws -> Bool {
            var found = false
            try connection.query("SELECT url FROM downloads WHERE \(Rows.pending.condition) LIMIT ?", [.integer(Int64(urls.count) + 1)]) { row in
                if let url = row.text(0), !urls.contains(url) { found = true }
            }
            return found
        }
    }

    /// The URLs of the pending entries (queued, or downloading), in queue order, without
    /// reading the entries: what a downloader chooses from.
    /// - Throws: ``DownloadQueueError`` when the queue cannot be read.
    public func pendingURLs() throws -> [String] {
        guard FileManager.default.fileExists(atPath: databasePath) || FileManager.default.fileExists(atPath: legacyQueuePath) else { return [] }
        if FileManager.default.fileExists(atPath: legacyQueuePath) { try update(.pending) { _ in } }
        let connection = try open()
        var urls: [String] = []
        do {
            try connection.query("SELECT url FROM downloads WHERE \(Rows.pending.condition) ORDER BY position") { row in
                if let url = row.text(0) { urls.append(url) }
            }
        } catch let error as SQLiteError {
            throw DownloadQueueError(path: databasePath, reason: error.message)
        }
        return urls
    }

    /// The entries of `rows`, oldest first; empty when there is no queue yet.
    /// - Throws: ``DownloadQueueError`` when the database exists but cannot be read as a queue.
    public func entries(_ rows: Rows = .all) throws -> [DownloadEntry] {
        if FileManager.default.fileExists(atPath: legacyQueuePath) { return try update(rows) { $0 } }
        guard FileManager.default.fileExists(atPath: databasePath) else { return [] }
        let connection = try open()
        return try self.rows(rows, in: connection).map(\.entry)
    }

    /// Runs `change` on the entries of `rows` in one write transaction and writes the rows it
    /// changed. Entries it drops are deleted; entries it adds go to the end of the queue (one
    /// whose URL the queue has among rows not read replaces that row: read the URLs you add).
    /// - Throws: ``DownloadQueueError`` when the folder or database cannot be used;
    ///   whatever `change` throws (nothing is written then).
    @discardableResult
    public func update<T>(_ rows: Rows = .all, _ change: (inout [DownloadEntry]) throws -> T) throws -> T {
        try update(rows) { entries, _ in try change(&entries) }
    }

    /// The same, with a ``Lookup`` for what the change did not read.
    @discardableResult
    package func update<T>(_ rows: Rows, _ change: (inout [DownloadEntry], Lookup) throws -> T) throws -> T {
        try prepare()
        let connection = try open()
        var imported = false
        let result: T
        do {
            result = try connection.transaction {
                imported = try importLegacyQueue(into: connection)
                let before = try self.rows(rows, in: connection)
                var entries = before.map(\.entry)
                let result = try change(&entries, Lookup(connection: connection))
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

    private func rows(_ selection: Rows, in connection: SQLiteConnection) throws -> [Row] {
        var rows: [Row] = []
        var unreadable: String?
        try connection.query("SELECT position, url, entry FROM downloads WHERE \(selection.condition) ORDER BY position", selection.arguments) { row in
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
        // The end of the whole queue, not only of the rows read.
        var next: Int64 = 0
        if entries.contains(where: { old[$0.url] == nil }) {
            next = (try connection.integer("SELECT max(position) FROM downloads") ?? -1) + 1
        }
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
            try Self.insert(entry, at: position, in: connection, onConflict: """
                DO UPDATE SET position = excluded.position, state = excluded.state, entry = excluded.entry,
                    source = excluded.source, directory = excluded.directory, file = excluded.file,
                    part_name = excluded.part_name, suggested_name = excluded.suggested_name, file_name = excluded.file_name,
                    retryable = excluded.retryable, attempts = excluded.attempts
                """)
        }
        for url in old.keys where !kept.contains(url) {
            try connection.query("DELETE FROM downloads WHERE url = ?", [.text(url)])
        }
    }

    /// A row for `entry`: the entry as JSON, and the columns ``Rows`` select by.
    private static func insert(_ entry: DownloadEntry, at position: Int64, in connection: SQLiteConnection, onConflict: String) throws {
        try connection.query(
            """
            INSERT INTO downloads (url, position, state, entry, source, directory, file, part_name, suggested_name, file_name, retryable, attempts)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(url) \(onConflict)
            """,
            [
                .text(entry.url), .integer(position), .text(entry.state.rawValue), .text(Self.json(entry)), .text(entry.source),
                .text(entry.directory), .optional(entry.file), .text(entry.partName), .optional(entry.suggestedName),
                .optional(entry.file.map { ($0 as NSString).lastPathComponent }), .integer(entry.retryable ? 1 : 0), .integer(Int64(entry.attempts)),
            ]
        )
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
            try Self.insert(entry, at: position, in: connection, onConflict: "DO NOTHING")
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
    public func enqueue(source: String, items: [Item], settings: DownloadSettings, now: Date) throws -> [DownloadEntry] {
        let wanted = items.flatMap { item in
            item.enclosures.filter { settings.accepts(type: $0.type) }.map { (item, $0) }
        }
        guard !wanted.isEmpty else { return [] }
        // Only the wanted URLs' rows: the names the folder's other rows hold are looked up one
        // by one, through an index, however long the folder's history.
        return try update(.urls(wanted.map(\.1.url))) { entries, lookup in
            var queued: [DownloadEntry] = []
            var indexByURL = Dictionary(entries.enumerated().map { ($1.url, $0) }, uniquingKeysWith: { first, _ in first })
            // Names looked up in this call, and those it gave (not written yet): the adoption
            // check and FileNames.unique ask about the same name in turn.
            var known: [String: Bool] = [:]
            var lookupError: (any Error)?
            func isTaken(_ name: String) -> Bool {
                if let taken = known[name] { return taken }
                do {
                    let taken = try lookup.holdsName(name, in: settings.directory)
                    known[name] = taken
                    return taken
                } catch {
                    // Not "taken": that would send FileNames.unique on for ever. The error is
                    // thrown once the name is chosen, and nothing is written.
                    lookupError = lookupError ?? error
                    return false
                }
            }
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
                let adopts = !isTaken(wanted) && FileNames.isRegularFile(wanted, in: settings.directory)
                    && !FileNames.exists(wanted + ".part", in: settings.directory)
                let name = adopts ? wanted : FileNames.unique(wanted, in: settings.directory, isTaken: isTaken, counters: &counters)
                if let lookupError { throw lookupError }
                known[name] = true
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

    /// Local files of these URLs' done downloads, by URL: what snapshots record per enclosure.
    public func files(of urls: some Sequence<String>) -> [String: String] {
        let entries = (try? entries(.urls(urls))) ?? []
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
