import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// The shared history of changes: the same contract as `state.db`'s (``HistoryStore``); its
/// records are written with the commits (``complete(_:)``).
extension PostgresStateStore {
    package func history(_ query: HistoryQuery) async throws(StateStoreError) -> [ChangeRecord] {
        let sources = query.sources.map(Self.storable), kinds = query.kinds.map(\.rawValue).sorted()
        let since = query.since ?? .distantPast, limit = Int64(max(0, query.limit))
        return try await run {
            var records: [ChangeRecord] = []
            let rows = try await client.query("""
                SELECT record FROM fetchrun_history
                WHERE (cardinality(\(sources)::text[]) = 0 OR source = ANY(\(sources)::text[]))
                  AND (cardinality(\(kinds)::text[]) = 0 OR kind = ANY(\(kinds)::text[]))
                  AND at >= \(since)
                ORDER BY at DESC, seq DESC LIMIT \(limit)
                """, logger: logger)
            for try await text in rows.decode(String.self) {
                // A row edited into something else is skipped; the others still read.
                if let record = try? ChangeRecord(json: text) { records.append(record) }
            }
            return records
        }
    }

    package func pruneHistory(expiredBy date: Date) async throws(StateStoreError) -> Int {
        try await run {
            var count = 0
            for try await _ in try await client.query("DELETE FROM fetchrun_history WHERE expires_at < \(date) RETURNING seq", logger: logger).decode(Int64.self) { count += 1 }
            return count
        }
    }
}
