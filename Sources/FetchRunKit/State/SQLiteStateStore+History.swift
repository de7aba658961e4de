import Foundation

/// The history of changes in `state.db` (``HistoryStore``): found changes written with the
/// outbox rows, state changes with the state, each inside the batch's transaction.
extension SQLiteStateStore {
    /// Writes `records` of `commit`'s source, inside the caller's transaction, then keeps the
    /// source's newest ``HistoryWrite/keep`` when ``HistoryKeep`` says so. A record already
    /// there (same id) is left alone.
    func insertHistory(_ records: [ChangeRecord], of commit: FetchCommit) throws {
        guard !records.isEmpty else { return }
        let write = commit.history
        let expires = SourceState.milliseconds(write.expiresAt)
        var inserted = 0
        for record in records {
            try connection.query(
                "INSERT OR IGNORE INTO history (id, source, kind, at, expires_at, record) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(record.id), .text(record.source), .text(record.kind.rawValue), .integer(SourceState.milliseconds(record.at)), .integer(expires), .text(record.json)]
            )
            inserted += connection.changes
        }
        guard historyKeep.wrote(inserted, for: commit.lease.name, keep: write.keep) else { return }
        // The newest `keep` stay: every row at or below the first one past them goes.
        try connection.query(
            """
            DELETE FROM history WHERE source = ?1 AND seq <= (
                SELECT seq FROM history WHERE source = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)
            """,
            [.text(commit.lease.name), .integer(Int64(max(1, write.keep)))]
        )
    }

    package func history(_ query: HistoryQuery) throws(StateStoreError) -> [ChangeRecord] {
        var conditions: [String] = [], values: [SQLiteValue] = []
        if !query.sources.isEmpty {
            conditions.append("source IN (" + query.sources.map { _ in "?" }.joined(separator: ", ") + ")")
            values += query.sources.map { .text($0) }
        }
        if !query.kinds.isEmpty {
            conditions.append("kind IN (" + query.kinds.map { _ in "?" }.joined(separator: ", ") + ")")
            values += query.kinds.map(\.rawValue).sorted().map { .text($0) }
        }
        if let since = query.since {
            conditions.append("at >= ?")
            values.append(.integer(SourceState.milliseconds(since)))
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        values.append(.integer(Int64(max(0, query.limit))))
        return try run {
            var records: [ChangeRecord] = []
            try connection.query("SELECT record FROM history \(filter) ORDER BY at DESC, seq DESC LIMIT ?", values) { row in
                // A row edited into something else is skipped; the others still read.
                if let text = row.text(0), let record = try? ChangeRecord(json: text) { records.append(record) }
            }
            return records
        }
    }

    package func pruneHistory(expiredBy date: Date) throws(StateStoreError) -> Int {
        try run {
            try connection.query("DELETE FROM history WHERE expires_at < ?", [.integer(SourceState.milliseconds(date))])
            return connection.changes
        }
    }
}
