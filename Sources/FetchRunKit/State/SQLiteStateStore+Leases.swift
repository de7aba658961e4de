import Foundation

/// Leases and commits in `state.db`: a lease is this process's id and a time it runs out, and
/// a token that grows with every lease of the source. A process that is gone holds nothing.
extension SQLiteStateStore {
    package nonisolated func lease(_ name: String, until: Date) async throws(StateStoreError) -> LeaseAttempt {
        guard case .lease(let attempt) = try await inNextBatch(.lease(name: name, until: until)) else {
            throw StateStoreError(store: path, reason: "a lease was answered with something else")
        }
        return attempt
    }

    package func release(_ lease: SourceLease) throws(StateStoreError) {
        try run {
            try connection.query(
                "UPDATE sources SET lease_owner = NULL, lease_until = NULL WHERE name = ? AND lease_owner = ? AND lease_token = ?",
                [.text(lease.name), .integer(owner), .integer(lease.token)]
            )
        }
    }

    /// Outbox rows and found changes first, then the snapshot file, then the state with the
    /// changes of health: a crash after the rows fetches the items again as new and the outbox
    /// and history already have them; a crash after the snapshot fetches it again and finds
    /// nothing new. Each write holds only while the lease does.
    package nonisolated func commit(_ commit: FetchCommit) async throws(StateStoreError) -> Bool {
        if !commit.deliveries.isEmpty || commit.snapshot != nil || !commit.history.foundRecords.isEmpty {
            guard case .written(true) = try await inNextBatch(.deliveries(commit)) else { return false }
        }
        if let snapshot = commit.snapshot {
            do {
                try await writer.save(snapshot)
            } catch {
                throw StateStoreError(store: snapshots.path(for: snapshot.source), reason: "snapshot not written: \(error)", failureKind: .snapshot)
            }
        }
        guard case .written(let written) = try await inNextBatch(.state(commit)) else { return false }
        return written
    }

    // MARK: Inside a batch's transaction

    /// Takes the lease unless another living process holds one that has not run out.
    func lease(_ name: String, until: Date, now: Date) throws -> LeaseAttempt {
        var found: SourceLease?
        // The usual case in one statement: nobody else holds a live lease.
        try connection.query(
            """
            UPDATE sources SET lease_owner = ?, lease_until = ?, lease_token = lease_token + 1
            WHERE name = ? AND (lease_owner IS NULL OR lease_until <= ? OR lease_owner = ?)
            RETURNING name, lease_token, state, next_due_at
            """,
            [.integer(owner), .integer(SourceState.milliseconds(until)), .text(name), .integer(SourceState.milliseconds(now)), .integer(owner)]
        ) { row in found = sourceLease(from: row) }
        if let found { return .taken(found) }
        // A new source, or another process's lease.
        try connection.query("INSERT OR IGNORE INTO sources (name) VALUES (?)", [.text(name)])
        var holder: Int64?, expires: Int64?
        try connection.query("SELECT lease_owner, lease_until FROM sources WHERE name = ?", [.text(name)]) { row in
            holder = row.integer(0)
            expires = row.integer(1)
        }
        if let holder, holder != owner, let expires, expires > SourceState.milliseconds(now), Self.isAlive(holder) {
            return .held(by: "process \(holder)")
        }
        try connection.query(
            "UPDATE sources SET lease_owner = ?, lease_until = ?, lease_token = lease_token + 1 WHERE name = ? RETURNING name, lease_token, state, next_due_at",
            [.integer(owner), .integer(SourceState.milliseconds(until)), .text(name)]
        ) { row in found = sourceLease(from: row) }
        guard let found else { throw StateStoreError(store: path, reason: "the row of '\(name)' vanished while its lease was taken") }
        return .taken(found)
    }

    private func sourceLease(from row: SQLiteRow) -> SourceLease {
        let name = row.text(0) ?? ""
        return SourceLease(
            name: name, token: row.integer(1) ?? 0,
            state: SourceState(name: name, json: row.text(2) ?? "{}", nextDue: row.integer(3).map(SourceState.date)),
            hasSnapshot: SafeFile.exists(snapshots.path(for: name))
        )
    }

    /// Whether the lease of `commit` still holds: same token, this process.
    private func holds(_ lease: SourceLease) throws -> Bool {
        try connection.integer("SELECT count(*) FROM sources WHERE name = ? AND lease_token = ? AND lease_owner = ?", [.text(lease.name), .integer(lease.token), .integer(owner)]) == 1
    }

    func insertDeliveries(of commit: FetchCommit) throws -> Bool {
        guard try holds(commit.lease) else { return false }
        _ = try insert(commit.deliveries, at: clock.date)
        try insertHistory(commit.history.foundRecords, of: commit)
        return true
    }

    /// The state as the rules left it, and the lease given back.
    func recordState(of commit: FetchCommit) throws -> Bool {
        try connection.query(
            """
            UPDATE sources SET state = ?, next_due_at = ?, lease_owner = NULL, lease_until = NULL
            WHERE name = ? AND lease_token = ? AND lease_owner = ?
            """,
            [.text(commit.state.json), .optional(commit.state.nextDue.map(SourceState.milliseconds)), .text(commit.lease.name), .integer(commit.lease.token), .integer(owner)]
        )
        guard connection.changes == 1 else { return false }
        try insertHistory(commit.history.stateRecords, of: commit)
        return true
    }

    /// A process that was killed leaves its leases and claims behind: they lapse with it.
    static func isAlive(_ pid: Int64) -> Bool {
        guard let pid = Int32(exactly: pid), pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno != ESRCH
    }
}
