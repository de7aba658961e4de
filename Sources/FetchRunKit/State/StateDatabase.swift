import Foundation
import Logging

/// `<state_dir>/state.db`: per-source state in SQLite — health, last success and error, the
/// schedule (due time, adaptive interval, consecutive failures) — so that `status` can say how
/// sources are doing and `run --due` keeps the intervals that watch keeps.
///
/// One connection per process, in WAL mode (readers such as `status` never wait for a writer),
/// statements prepared once, the schema versioned by `PRAGMA user_version` with migrations.
/// SQLite's calls block on the disk, so the actor runs on a thread of its own. Snapshots stay
/// the per-source JSON files; this holds what is *about* a source, not its items.
///
/// A fetch's two writes — ``beginFetch(of:until:now:)`` and ``record(_:settings:validators:bodyHash:alerts:at:jitter:)``
/// — are group-committed: those asked for while a batch is being written go together in the
/// next transaction. A run of a thousand sources would otherwise commit two thousand times, each
/// commit taking SQLite's file locks and appending to the WAL; one process's thread of SQLite
/// calls was the line every fetch queued in.
public actor StateDatabase {
    private static let executor = DedicatedThreadExecutor(name: "fetchrun-state")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { Self.executor.asUnownedSerialExecutor() }

    let connection: SQLiteConnection
    public nonisolated let path: String
    /// Writes waiting for the next batch, in the order they were asked for.
    private var queuedWrites: [QueuedWrite] = []

    /// Opens the state directory's database, creating it or bringing its schema up to date.
    ///
    /// A file that is not a database, or a damaged one, is moved aside to
    /// `state.db.corrupt-<time>` and a new one is built from the snapshots (item counts and
    /// last successes); `note` then says so. Nothing else is lost: the snapshots are untouched.
    /// - Throws: ``StateDatabaseError`` when the database cannot be opened or written at all,
    ///   or was written by a newer fetchrun.
    public static func open(in stateDirectory: StateDirectory) async throws(StateDatabaseError) -> (database: StateDatabase, note: String?) {
        let path = StateSchema.path(in: stateDirectory.path)
        try StateSchema.refuseAnythingButAFile(path)
        do {
            return (try await StateDatabase(path: path), nil)
        } catch let error where error.isCorruption {
            let aside = try moveAside(path)
            let database: StateDatabase
            do {
                database = try await StateDatabase(path: path)
            } catch {
                throw StateDatabaseError(path: path, reason: error.description)
            }
            let rebuilt = await database.rebuild(from: stateDirectory.snapshots)
            return (database, "\(path) was unreadable (\(error.message)); moved to \(aside) and rebuilt from \(rebuilt) snapshot\(rebuilt == 1 ? "" : "s")")
        } catch {
            throw StateDatabaseError(path: path, reason: error.description)
        }
    }

    /// Opens the database for reading what is recorded, without creating it (`status`).
    /// `nil` when there is none yet.
    public static func openExisting(in stateDirectory: StateDirectory) async throws(StateDatabaseError) -> StateDatabase? {
        let path = StateSchema.path(in: stateDirectory.path)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        try StateSchema.refuseAnythingButAFile(path)
        do {
            return try await StateDatabase(path: path, create: false)
        } catch {
            throw StateDatabaseError(path: path, reason: error.description)
        }
    }

    private init(path: String, create: Bool = true) async throws(SQLiteError) {
        self.path = path
        connection = try SQLiteConnection(path: path, create: create)
        try StateSchema.migrate(connection)
    }

    private static func moveAside(_ path: String) throws(StateDatabaseError) -> String {
        let stamp = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withYear, .withMonth, .withDay, .withTime, .withTimeZone])
        let aside = path + ".corrupt-" + stamp
        guard rename(path, aside) == 0 else {
            throw StateDatabaseError(path: path, reason: "it is damaged and could not be moved aside: \(String(cString: strerror(errno)))")
        }
        // The journal files belong to the damaged database, not to the new one.
        for suffix in ["-wal", "-shm"] { _ = rename(path + suffix, aside + suffix) }
        return aside
    }

    /// Fills a new database from the snapshots: each source's item count, last success and
    /// validators.
    private func rebuild(from snapshots: SnapshotStore) -> Int {
        var count = 0
        for name in snapshots.sourceNames() {
            guard case .loaded(let snapshot) = snapshots.load(source: name, moveCorruptAside: false) else { continue }
            let at = Self.milliseconds(snapshot.updatedAt)
            try? connection.query(
                "INSERT OR REPLACE INTO sources (name, last_fetch_at, last_outcome, last_success_at, item_count, etag, last_modified) VALUES (?, ?, 'noData', ?, ?, ?, ?)",
                [.text(name), .integer(at), .integer(at), .integer(Int64(snapshot.items.count)), .optional(snapshot.validators?.etag), .optional(snapshot.validators?.lastModified)]
            )
            count += 1
        }
        return count
    }

    // MARK: Reading

    /// Every recorded source, by name.
    public func states() throws(StateDatabaseError) -> [String: SourceState] {
        var states: [String: SourceState] = [:]
        do {
            try connection.query(Self.selectColumns) { row in
                let state = Self.state(from: row)
                states[state.name] = state
            }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
        return states
    }

    /// One source's state; a fresh one when nothing is recorded.
    public func state(of name: String) throws(StateDatabaseError) -> SourceState {
        do {
            return try readState(of: name)
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
    }

    private func readState(of name: String) throws -> SourceState {
        var state = SourceState(name: name)
        try connection.query(Self.selectColumns + " WHERE name = ?", [.text(name)]) { row in state = Self.state(from: row) }
        return state
    }

    private static let selectColumns = """
        SELECT name, last_fetch_at, last_outcome, last_success_at, consecutive_failures, failing_since,
               last_error_kind, last_error_message, last_error_at, next_due_at, current_interval_ms, item_count,
               etag, last_modified, body_hash, moved_to, moved_count
        FROM sources
        """

    private static func state(from row: SQLiteRow) -> SourceState {
        var state = SourceState(name: row.text(0) ?? "")
        state.lastFetch = row.integer(1).map(date)
        state.lastOutcome = row.text(2)
        state.lastSuccess = row.integer(3).map(date)
        state.consecutiveFailures = Int(clamping: row.integer(4) ?? 0)
        state.failingSince = row.integer(5).map(date)
        if let kind = row.text(6).flatMap(FetchFailure.Kind.init(rawValue:)), let at = row.integer(8) {
            state.lastError = .init(kind: kind, message: row.text(7) ?? "", at: date(at))
        }
        state.nextDue = row.integer(9).map(date)
        state.currentInterval = row.integer(10).map { .milliseconds($0) }
        state.itemCount = Int(clamping: row.integer(11) ?? 0)
        if !row.isNull(12) || !row.isNull(13) {
            state.validators = HTTPValidators(etag: row.text(12), lastModified: row.text(13))
        }
        state.bodyHash = row.text(14)
        state.movedTo = row.text(15)
        state.movedCount = Int(clamping: max(0, row.integer(16) ?? 0))
        return state
    }

    // MARK: Recording

    /// Records a fetch that ended at `now` and schedules the next one as watch mode would:
    /// back to `interval` after new data, stretched after none, backed off after failures
    /// (Retry-After honoured). A cancelled fetch (a stop, not the source's fault) is not
    /// recorded. A successful fetch's `validators` and `bodyHash` replace the recorded ones
    /// (`nil` validators keep them).
    /// - Returns: the state as recorded.
    /// - Throws: ``StateDatabaseError`` when it cannot be written.
    ///
    /// `alerts` are the outputs that want to hear when this source starts failing (after
    /// their `alert_after` failures in a row) and when it recovers: those alerts go into the
    /// outbox in the same transaction.
    ///
    /// The write goes in the next batch (see the type's notes); the call returns once it is
    /// committed. It finishes even if the calling task is cancelled: a batch takes milliseconds.
    @discardableResult
    public func record(
        _ report: SourceReport, settings: SourceSettings, validators: HTTPValidators? = nil, bodyHash: String? = nil,
        alerts: [AlertRoute] = [], at now: Date = Date(), jitter: Double = Double.random(in: -1...1)
    ) async throws(StateDatabaseError) -> SourceState {
        try await inNextBatch {
            try self.recordRow(report, settings: settings, validators: validators, bodyHash: bodyHash, alerts: alerts, at: now, jitter: jitter)
        }
    }

    /// ``record(_:settings:validators:bodyHash:alerts:at:jitter:)``'s work, inside the caller's transaction.
    private func recordRow(
        _ report: SourceReport, settings: SourceSettings, validators: HTTPValidators?, bodyHash: String?,
        alerts: [AlertRoute], at now: Date, jitter: Double
    ) throws -> SourceState {
        var state = try readState(of: report.name)
        let failuresBefore = state.consecutiveFailures
        let failingSinceBefore = state.failingSince
        if report.outcome.failure?.kind == .cancelled {
            try connection.query(Self.releaseLeaseStatement, [.text(report.name), .integer(Int64(getpid()))])
            return state
        }
        var nextDelay: Duration?
        if case .every(let interval) = settings.interval {
            var schedule = FetchSchedule(
                interval: interval, maxInterval: settings.maxInterval, maxBackoff: settings.maxBackoff,
                resuming: state.currentInterval, consecutiveFailures: state.consecutiveFailures
            )
            nextDelay = schedule.delay(after: report.outcome, jitter: jitter, freshFor: report.freshFor)
            state.currentInterval = schedule.currentInterval
        }
        state.lastFetch = now
        state.lastOutcome = report.outcome.name
        state.nextDue = nextDelay.map { now.addingTimeInterval(Double($0.milliseconds) / 1000) }
        if let failure = report.outcome.failure {
            state.consecutiveFailures = min(state.consecutiveFailures, Int.max - 1) + 1
            state.failingSince = state.failingSince ?? now
            state.lastError = .init(kind: failure.kind, message: failure.message, at: now)
        } else {
            state.consecutiveFailures = 0
            state.failingSince = nil
            state.lastSuccess = now
            state.itemCount = report.totalItems
            state.validators = validators ?? state.validators
            state.bodyHash = bodyHash
            if let movedTo = report.movedTo {
                state.movedCount = state.movedTo == movedTo ? min(state.movedCount, Int.max - 1) + 1 : 1
                state.movedTo = movedTo
            } else {
                state.movedTo = nil
                state.movedCount = 0
            }
        }
        let alertsToSend = Delivery.alerts(
            for: report, failuresBefore: failuresBefore, failingSinceBefore: failingSinceBefore,
            routes: alerts.map { ($0.output, $0.alertAfter) }, at: now
        )
        for (output, delivery) in alertsToSend { _ = try insert([delivery], for: [output], at: now) }
        try connection.query(
            """
            INSERT OR REPLACE INTO sources (name, last_fetch_at, last_outcome, last_success_at, consecutive_failures, failing_since,
                last_error_kind, last_error_message, last_error_at, next_due_at, current_interval_ms, item_count,
                etag, last_modified, body_hash, moved_to, moved_count)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(state.name), .optional(state.lastFetch.map(Self.milliseconds)), .optional(state.lastOutcome),
                .optional(state.lastSuccess.map(Self.milliseconds)), .integer(Int64(state.consecutiveFailures)),
                .optional(state.failingSince.map(Self.milliseconds)), .optional(state.lastError?.kind.rawValue),
                .optional(state.lastError?.message), .optional(state.lastError.map { Self.milliseconds($0.at) }),
                .optional(state.nextDue.map(Self.milliseconds)), .optional(state.currentInterval.map { $0.milliseconds }),
                .integer(Int64(state.itemCount)), .optional(state.validators?.etag), .optional(state.validators?.lastModified),
                .optional(state.bodyHash), .optional(state.movedTo), .integer(Int64(state.movedCount)),
            ]
        )
        return state
    }

    /// An output that sends this source's failing and recovered alerts, after how many
    /// failures in a row.
    public struct AlertRoute: Sendable, Hashable {
        public var output: String
        public var alertAfter: Int

        public init(output: String, alertAfter: Int) {
            self.output = output
            self.alertAfter = alertAfter
        }
    }

    // MARK: Leases

    /// What asking for a source's lease found.
    public enum LeaseAttempt: Sendable, Equatable {
        /// This process holds it now (it may have held it already).
        case taken
        /// Another living process holds it until its time runs out.
        case held(by: Int32)
    }

    /// Takes the lease on a source — "this process is fetching it" — until `until`, unless
    /// another process that is still alive holds one that has not run out. Leases keep a
    /// `run` and a `watch` on one state directory from fetching one source at once.
    /// - Throws: ``StateDatabaseError`` when the database cannot be written.
    public func takeLease(on name: String, until: Date, now: Date = Date()) throws(StateDatabaseError) -> LeaseAttempt {
        do {
            return try connection.transaction { try lease(on: name, until: until, now: now) }
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
    }

    /// What a fetch starts from: whether it holds its source's lease, and what is recorded
    /// about the source.
    public struct FetchStart: Sendable, Equatable {
        public var lease: LeaseAttempt
        /// Read after taking the lease; while another process holds it, that process may be
        /// about to change it.
        public var state: SourceState
    }

    /// ``takeLease(on:until:now:)`` and ``state(of:)`` in one step, group-committed with the
    /// other fetches starting at the same time (see the type's notes).
    /// - Throws: ``StateDatabaseError`` when the database cannot be written.
    /// - Cancellation: the call finishes with its batch (milliseconds) either way.
    public func beginFetch(of name: String, until: Date, now: Date = Date()) async throws(StateDatabaseError) -> FetchStart {
        try await inNextBatch {
            let lease = try self.lease(on: name, until: until, now: now)
            return FetchStart(lease: lease, state: try self.readState(of: name))
        }
    }

    /// ``takeLease(on:until:now:)``'s work, inside the caller's transaction.
    private func lease(on name: String, until: Date, now: Date) throws -> LeaseAttempt {
        let me = Int64(getpid())
        // The usual case in one statement: nobody else holds a live lease.
        try connection.query(
            "UPDATE sources SET lease_owner = ?, lease_until = ? WHERE name = ? AND (lease_owner IS NULL OR lease_until <= ?)",
            [.integer(me), .integer(Self.milliseconds(until)), .text(name), .integer(Self.milliseconds(now))]
        )
        if connection.changes == 1 { return .taken }
        // A new source, our own lease, or another process's.
        try connection.query("INSERT OR IGNORE INTO sources (name) VALUES (?)", [.text(name)])
        var owner: Int64?, expires: Int64?
        try connection.query("SELECT lease_owner, lease_until FROM sources WHERE name = ?", [.text(name)]) { row in
            owner = row.integer(0)
            expires = row.integer(1)
        }
        if let owner, owner != me, let expires, expires > Self.milliseconds(now), Self.isAlive(owner) {
            return .held(by: Int32(clamping: owner))
        }
        try connection.query("UPDATE sources SET lease_owner = ?, lease_until = ? WHERE name = ?", [.integer(me), .integer(Self.milliseconds(until)), .text(name)])
        return .taken
    }

    private static let releaseLeaseStatement = "UPDATE sources SET lease_owner = NULL, lease_until = NULL WHERE name = ? AND lease_owner = ?"

    /// Gives up this process's lease on a source, if it holds one.
    public func releaseLease(on name: String) throws(StateDatabaseError) {
        do {
            try connection.query(Self.releaseLeaseStatement, [.text(name), .integer(Int64(getpid()))])
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
    }

    /// A process that was killed leaves its leases behind: they lapse with it.
    static func isAlive(_ pid: Int64) -> Bool {
        guard let pid = Int32(exactly: pid), pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno != ESRCH
    }

    /// Forgets a source (`reset`): it is never fetched, and due at once.
    public func forget(_ name: String) throws(StateDatabaseError) {
        do {
            try connection.query("DELETE FROM sources WHERE name = ?", [.text(name)])
        } catch {
            throw StateDatabaseError(path: path, reason: "\(error)")
        }
    }

    // MARK: Group commit

    /// A write waiting for its batch: `write` runs inside the batch's transaction (again, in
    /// one of its own, if the batch fails), `finish` hands its outcome to the caller once
    /// committed.
    private struct QueuedWrite {
        let write: () throws -> Void
        let finish: (StateDatabaseError?) -> Void
    }

    /// Runs `write` in the next batch's transaction and returns what it returned, once committed.
    ///
    /// The first write queued schedules the batch as a job on this actor's executor, which runs
    /// jobs in order: every write asked for before that job runs (the other fetches that ended
    /// while the previous batch was being written) joins it. So a lone write waits for nothing,
    /// and a thousand at once cost a few commits instead of a thousand.
    private func inNextBatch<T: Sendable>(_ write: @escaping () throws -> T) async throws(StateDatabaseError) -> T {
        let result: Result<T, StateDatabaseError> = await withCheckedContinuation { continuation in
            var written: T?
            queuedWrites.append(QueuedWrite(
                write: { written = try write() },
                finish: { [path] error in
                    // Every path resumes the caller: a write left waiting would hang its fetch.
                    guard error == nil, let written else {
                        return continuation.resume(returning: .failure(error ?? StateDatabaseError(path: path, reason: "the write returned nothing")))
                    }
                    continuation.resume(returning: .success(written))
                }
            ))
            if queuedWrites.count == 1 { Task { self.writeQueued() } }
        }
        return try result.get()
    }

    /// Writes every queued write in one transaction. If SQLite refuses the batch, each write is
    /// tried again alone, so that one bad write fails only its own caller.
    private func writeQueued() {
        let batch = queuedWrites
        queuedWrites.removeAll()
        guard !batch.isEmpty else { return }
        do {
            try connection.transaction { for queued in batch { try queued.write() } }
            for queued in batch { queued.finish(nil) }
        } catch where batch.count > 1 {
            for queued in batch {
                do {
                    try connection.transaction { try queued.write() }
                    queued.finish(nil)
                } catch {
                    queued.finish(StateDatabaseError(path: path, reason: "\(error)"))
                }
            }
        } catch {
            for queued in batch { queued.finish(StateDatabaseError(path: path, reason: "\(error)")) }
        }
    }

    /// A date as milliseconds since 1970, clamped: a date read back from a hostile row can be
    /// as far out as `Int64` milliseconds reach, and converting it back must not trap.
    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        guard value.isFinite else { return 0 }
        return value >= 9.2e18 ? 9_200_000_000_000_000_000 : value <= -9.2e18 ? -9_200_000_000_000_000_000 : Int64(value)
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

/// The state database could not be opened, read or written.
public struct StateDatabaseError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public var description: String { "state database \(path): \(reason)" }
}
