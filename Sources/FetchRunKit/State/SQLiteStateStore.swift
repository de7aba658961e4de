import Foundation

/// The state store of a state directory: `<state_dir>/state.db` (SQLite, WAL) for each source's
/// state, lease and due time and for the outbox, and `<state_dir>/snapshots/<name>.json` for
/// its items — the visible artefact, written only when a source's items change.
///
/// One connection per process, statements prepared once, the schema versioned by
/// `PRAGMA user_version` with migrations. SQLite's calls block on the disk, so the actor runs
/// on a thread of its own. Leases belong to a process: one whose process is gone lapses at
/// once; run, watch and workers on one state directory never fetch one source at once. Leases
/// and records are group-committed (``GroupCommit``).
package actor SQLiteStateStore: SourceStateStore {
    private static let executor = DedicatedThreadExecutor(name: "fetchrun-state")
    package nonisolated var unownedExecutor: UnownedSerialExecutor { Self.executor.asUnownedSerialExecutor() }

    let connection: SQLiteConnection
    package nonisolated let path: String
    package nonisolated let snapshots: SnapshotStore
    let writer: SnapshotWriter
    /// Leases and claims are this process's.
    let owner: Int64
    /// The time of leases, and of deliveries queued with a commit.
    let clock: any FetchClock
    /// A statement gave up waiting for another process's lock (``limitLockWaits(until:)``).
    package private(set) var lockedOut = false
    /// When each source's records past its `keep` are pruned (``HistoryKeep``).
    var historyKeep = HistoryKeep()
    package static let lockedReason = "locked by another process (a backup tool, or sqlite3 holding a write transaction); try again when it is done"

    /// Stops waiting for another process's lock at `end` (a run's deadline budget): from then
    /// on a locked database fails each statement at once, as ``lockedOut``.
    package func limitLockWaits(until end: ContinuousClock.Instant) {
        connection.lockWaitsEnd = end
    }

    /// Reached without a hop onto the store's thread: only the batches are written there.
    private nonisolated let writes = GroupCommit<Write, Outcome>()

    /// Opens the state directory's database, creating it or bringing its schema up to date.
    ///
    /// A file that is not a database, or a damaged one, is moved aside to
    /// `state.db.corrupt-<time>` and a new one is built from the snapshots (item counts and
    /// last successes); `note` then says so. Nothing else is lost: the snapshots are untouched.
    /// - Throws: ``StateStoreError`` when the database cannot be opened or written at all, or
    ///   was written by a newer fetchrun.
    /// - Parameter owner: whose leases and claims these are: this process's (tests act as another).
    /// - Parameter clock: the time of leases and of deliveries queued with a commit.
    package static func open(in stateDirectory: StateDirectory, owner: Int64 = Int64(getpid()), clock: any FetchClock = SystemClock()) async throws(StateStoreError) -> (store: SQLiteStateStore, note: String?) {
        let path = StateSchema.path(in: stateDirectory.path)
        try StateSchema.refuseAnythingButAFile(path)
        do {
            return (try await SQLiteStateStore(path: path, snapshots: stateDirectory.snapshots, owner: owner, clock: clock), nil)
        } catch let error where error.isCorruption {
            let aside = try moveAside(path, at: clock.date)
            let store: SQLiteStateStore
            do {
                store = try await SQLiteStateStore(path: path, snapshots: stateDirectory.snapshots, owner: owner, clock: clock)
            } catch {
                throw StateStoreError(store: path, reason: error.description)
            }
            let rebuilt = await store.rebuild()
            return (store, "\(path) was unreadable (\(error.message)); moved to \(aside) and rebuilt from \(rebuilt) snapshot\(rebuilt == 1 ? "" : "s")")
        } catch {
            throw StateStoreError(store: path, reason: error.isBusy ? lockedReason : error.description, isLocked: error.isBusy)
        }
    }

    /// Opens the database for reading what is recorded, without creating it (`status`,
    /// `outputs`). `nil` when there is none yet.
    package static func openExisting(in stateDirectory: StateDirectory) async throws(StateStoreError) -> SQLiteStateStore? {
        let path = StateSchema.path(in: stateDirectory.path)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        try StateSchema.refuseAnythingButAFile(path)
        // A folder (or database) this user cannot write is read as it is: `status`, `show`
        // and `outputs` still work; what would write says the folder is read-only.
        if access(stateDirectory.path, W_OK) != 0 || access(path, W_OK) != 0 {
            do {
                return try await SQLiteStateStore(readingOnly: path, snapshots: stateDirectory.snapshots)
            } catch {
                throw StateStoreError(store: path, reason: "the state directory is read-only for this user, and the database could not be read as it is: \(error.description)")
            }
        }
        do {
            return try await SQLiteStateStore(path: path, snapshots: stateDirectory.snapshots, create: false)
        } catch {
            throw StateStoreError(store: path, reason: error.isBusy ? lockedReason : error.description, isLocked: error.isBusy)
        }
    }

    /// A store that records nothing on disk (a database in memory) and reads the state
    /// directory's snapshots: what a dry run fetches with.
    package static func inMemory(readingSnapshotsOf stateDirectory: StateDirectory) async throws(StateStoreError) -> SQLiteStateStore {
        do {
            return try await SQLiteStateStore(path: ":memory:", snapshots: stateDirectory.snapshots)
        } catch {
            throw StateStoreError(store: ":memory:", reason: error.description)
        }
    }

    /// The database read as it is, for a folder this user cannot write: no migration (a schema
    /// older than this fetchrun's is refused), nothing written.
    private init(readingOnly path: String, snapshots: SnapshotStore) async throws(SQLiteError) {
        self.path = path
        owner = Int64(getpid())
        // Nothing is leased or queued through a store that only reads.
        clock = SystemClock()
        self.snapshots = snapshots
        writer = SnapshotWriter(store: snapshots)
        let (connection, version) = try Self.connectionReadingAsItIs(path)
        self.connection = connection
        guard version == Int64(StateSchema.migrations.count) else {
            throw SQLiteError(code: 0, message: "its schema is version \(version), this fetchrun's \(StateSchema.migrations.count); it can be brought up to date only where it can be written")
        }
    }

    /// A connection that reads `path` without writing beside it, and the schema version it read.
    ///
    /// What a writer recorded stays in `state.db-wal` until it is copied into the file: while a
    /// watch runs, and after a process that ended without closing the database. SQLite reads a
    /// WAL for a user who cannot write (its shared memory then kept in this process), so where
    /// there is one it is read with it. Without one, a plain read-only open would have to make
    /// the shared-memory file, which this user cannot: the file is read as it is (`immutable`),
    /// which is all there is to read.
    private static func connectionReadingAsItIs(_ path: String) throws(SQLiteError) -> (SQLiteConnection, Int64) {
        func open(immutable: Bool) throws(SQLiteError) -> (SQLiteConnection, Int64) {
            let connection = try SQLiteConnection(path: path, readOnly: true, immutable: immutable)
            do {
                return (connection, try connection.integer("PRAGMA user_version") ?? 0)
            } catch let error as SQLiteError {
                throw error
            } catch {
                throw SQLiteError(code: 0, message: "\(error)")
            }
        }
        // The writer may close, and remove its WAL, between this look and the open.
        if FileManager.default.fileExists(atPath: path + "-wal"), let withItsWAL = try? open(immutable: false) {
            return withItsWAL
        }
        return try open(immutable: true)
    }

    private init(path: String, snapshots: SnapshotStore, create: Bool = true, owner: Int64 = Int64(getpid()), clock: any FetchClock = SystemClock()) async throws(SQLiteError) {
        self.path = path
        self.owner = owner
        self.clock = clock
        self.snapshots = snapshots
        writer = SnapshotWriter(store: snapshots)
        connection = try SQLiteConnection(path: path, create: create)
        try StateSchema.migrate(connection)
    }

    private static func moveAside(_ path: String, at date: Date) throws(StateStoreError) -> String {
        let stamp = ISO8601DateFormatter.string(from: date, timeZone: .gmt, formatOptions: [.withYear, .withMonth, .withDay, .withTime, .withTimeZone])
        let aside = path + ".corrupt-" + stamp
        guard rename(path, aside) == 0 else {
            throw StateStoreError(store: path, reason: "it is damaged and could not be moved aside: \(String(cString: strerror(errno)))")
        }
        // The journal files belong to the damaged database, not to the new one.
        for suffix in ["-wal", "-shm"] { _ = rename(path + suffix, aside + suffix) }
        return aside
    }

    /// Fills a new database from the snapshots: each source's item count, last success,
    /// validators and type.
    private func rebuild() -> Int {
        var count = 0
        for name in snapshots.sourceNames() {
            guard case .loaded(let snapshot) = snapshots.load(source: name, moveCorruptAside: false) else { continue }
            var state = SourceState(name: name)
            state.lastFetch = snapshot.updatedAt
            state.lastOutcome = SourceOutcome.noData.name
            state.lastSuccess = snapshot.updatedAt
            state.itemCount = snapshot.items.count
            state.validators = snapshot.validators
            state.type = snapshot.type
            try? connection.query("INSERT OR REPLACE INTO sources (name, state) VALUES (?, ?)", [.text(name), .text(state.json)])
            count += 1
        }
        return count
    }

    /// ``SQLiteConnection/fullScanSteps`` of the store's connection.
    var fullScanSteps: Int { connection.fullScanSteps }

    /// Runs `body`, turning SQLite's errors into ``StateStoreError``s that name the file.
    func run<T>(_ body: () throws -> T) throws(StateStoreError) -> T {
        do {
            return try body()
        } catch let error as StateStoreError {
            throw error
        } catch let error as SQLiteError where error.isReadOnly {
            throw StateStoreError(store: path, reason: "the state directory is read-only for this user: what is recorded can be read, not changed")
        } catch let error as SQLiteError where error.isBusy {
            lockedOut = true
            throw StateStoreError(store: path, reason: Self.lockedReason, isLocked: true)
        } catch {
            throw StateStoreError(store: path, reason: "\(error)")
        }
    }

    // MARK: Reading

    package func states() throws(StateStoreError) -> [String: SourceState] {
        try run {
            var states: [SourceState] = []
            try connection.query("SELECT name, state, next_due_at FROM sources") { row in
                states.append(SourceState(name: row.text(0) ?? "", json: row.text(1) ?? "{}", nextDue: row.integer(2).map(SourceState.date)))
            }
            return SourceState.byName(states)
        }
    }

    package func snapshot(of name: String, movingCorruptAside: Bool) async -> SnapshotRead {
        let snapshots = self.snapshots
        switch await BlockingWork.run({ snapshots.load(source: name, moveCorruptAside: movingCorruptAside) }) {
        case .missing:
            return .missing
        case .loaded(let snapshot):
            return .loaded(snapshot)
        case .corrupt(let reason, let movedTo):
            return .corrupt(note: "snapshot \(snapshots.path(for: name)) was unreadable (\(reason)); "
                + (movedTo.map { "moved to \($0), starting from an empty baseline" } ?? "starting from an empty baseline"))
        }
    }

    package func forget(_ name: String) async throws(StateStoreError) -> String? {
        try run { try connection.query("DELETE FROM sources WHERE name = ?", [.text(name)]) }
        let snapshots = self.snapshots
        let removed = await BlockingWork.run { Result { try snapshots.remove(source: name) } }
        do {
            return try removed.get() ? snapshots.path(for: name) : nil
        } catch {
            throw StateStoreError(store: snapshots.path(for: name), reason: "\(error)")
        }
    }

    // MARK: Group commit

    /// A write that goes in the next batch.
    enum Write: Sendable {
        case lease(name: String, until: Date)
        /// Outbox rows, under the lease: written only while the lease holds.
        case deliveries(FetchCommit)
        /// The state, under the lease; the lease is given back.
        case state(FetchCommit)
    }

    enum Outcome: Sendable {
        case lease(LeaseAttempt)
        case written(Bool)
    }

    /// Runs `write` in the next batch's transaction (see ``GroupCommit``).
    nonisolated func inNextBatch(_ write: Write) async throws(StateStoreError) -> Outcome {
        do {
            return try await writes.write(write) { [self] batch in try await self.write(batch) }
        } catch let error as StateStoreError {
            throw error
        } catch {
            throw StateStoreError(store: path, reason: error is CancellationError ? "cancelled before it was written" : "\(error)")
        }
    }

    /// Writes a batch in one transaction. A batch that queues deliveries is on the disk when
    /// it returns: the snapshot that marks their items seen comes next, and under
    /// `synchronous=NORMAL` a commit waits in the WAL until the next checkpoint — a power cut
    /// in between would keep the snapshot and lose the deliveries (a batch of several
    /// snapshots flushes the whole file system, but a single snapshot syncs only its file).
    /// Records of the history go in the same transaction but do not ask for that: under WAL a
    /// committed transaction outlives the process, and only a power cut may lose the last ones —
    /// as it may the last state (a sync for every new item cost a watch 8 % more CPU).
    private func write(_ batch: [Write]) throws(StateStoreError) -> [Outcome] {
        let queuesDeliveries = batch.contains { write in
            if case .deliveries(let commit) = write { return !commit.deliveries.isEmpty }
            return false
        }
        return try run {
            if queuesDeliveries { try connection.execute("PRAGMA synchronous=FULL") }
            defer { if queuesDeliveries { try? connection.execute("PRAGMA synchronous=NORMAL") } }
            return try connection.transaction {
                try batch.map { write in
                    switch write {
                    case .lease(let name, let until): return .lease(try lease(name, until: until, now: clock.date))
                    case .deliveries(let commit): return .written(try insertDeliveries(of: commit))
                    case .state(let commit): return .written(try recordState(of: commit))
                    }
                }
            }
        }
    }
}
