import Foundation

/// Where the history of changes lives: `state.db`, or PostgreSQL shared by workers — both
/// under one contract, which the contract tests check against both:
///
/// - **Written with the fetch.** A commit's ``FetchCommit/history`` is written in the same
///   transaction as its outbox rows (items and changes, before the snapshot that marks them
///   seen) or its state (failing, recovered, moved), and only while its lease holds: a crash
///   never records a change that was not reported, nor loses one that was. A record whose
///   ``ChangeRecord/id`` is there already is a repeat and is left alone.
/// - **Bounded.** A source keeps its newest ``HistoryWrite/keep`` records: a store that wrote
///   some prunes the older ones when ``HistoryKeep`` says it is time — at a process's first
///   write for the source, then after a tenth of `keep` more — so a source holds at most
///   `keep` plus a tenth per process writing it. ``pruneHistory(expiredBy:)`` removes the
///   records past their source's `max_age`.
/// - **Read newest first**, by source, kind and time (``HistoryQuery``). A stored row that does
///   not read as a record is skipped, never a failure of the whole read.
package protocol HistoryStore: Sendable {
    /// The records `query` asks for, newest first.
    func history(_ query: HistoryQuery) async throws -> [ChangeRecord]
    /// Removes records whose source's `max_age` had passed by `date`; returns how many.
    @discardableResult
    func pruneHistory(expiredBy date: Date) async throws -> Int
}

/// Which records ``HistoryStore/history(_:)`` returns.
package struct HistoryQuery: Sendable, Hashable {
    /// Only these sources' records; every source's when empty.
    package var sources: [String] = []
    /// Only records of these kinds; every kind when empty.
    package var kinds: Set<ChangeRecord.Kind> = []
    /// Only records from this time on.
    package var since: Date?
    /// At most this many, the newest.
    package var limit = 100

    package init(sources: [String] = [], kinds: Set<ChangeRecord.Kind> = [], since: Date? = nil, limit: Int = 100) {
        self.sources = sources
        self.kinds = kinds
        self.since = since
        self.limit = limit
    }
}

/// What one commit adds to the history: its records, and the source's bounds.
package struct HistoryWrite: Sendable {
    package var records: [ChangeRecord]
    /// The newest records the source keeps.
    package var keep: Int
    /// When these records expire (their time plus the source's `max_age`).
    package var expiresAt: Date

    package static let none = HistoryWrite(records: [], keep: HistoryRetention.standard.keep, expiresAt: .distantFuture)

    package init(records: [ChangeRecord], keep: Int, expiresAt: Date) {
        self.records = records
        self.keep = keep
        self.expiresAt = expiresAt
    }

    /// Records written with the outbox rows: what the snapshot marks seen.
    package var foundRecords: [ChangeRecord] { records.filter { $0.kind == .item || $0.kind == .change } }
    /// Records written with the state: what the state's health and redirect count say.
    package var stateRecords: [ChangeRecord] { records.filter { $0.kind != .item && $0.kind != .change } }
}

/// When the history's expired records were last pruned, shared by every copy of a pipeline:
/// the first commit prunes, then one an hour (``claim(at:)``).
package final class HistoryPruning: Sendable {
    private let last = Locked<ContinuousClock.Instant?>(nil)
    /// Time between two prunes.
    package static let interval: Duration = .seconds(3600)

    package init() {}

    /// Whether a prune is due at `now`; when it is, it is taken (no other caller gets it for an
    /// ``interval``).
    package func claim(at now: ContinuousClock.Instant) -> Bool {
        last.withLock { last in
            guard last.map({ now - $0 >= Self.interval }) ?? true else { return false }
            last = now
            return true
        }
    }
}

/// When a store prunes a source's records past its `keep`: counting what is there costs as
/// much as `keep` index entries, so not at every write (at 1,000 records a second that was a
/// million a second) but at a process's first write for the source and then once a tenth of
/// `keep` more were written. The rule is the stores' both; each keeps its own counts.
package struct HistoryKeep: Sendable {
    /// Records written per source since its last prune, in this process.
    private var written: [String: Int] = [:]

    package init() {}

    /// Counts `count` records written for `source`; whether its older ones are to be pruned now
    /// (the count then starts again).
    package mutating func wrote(_ count: Int, for source: String, keep: Int) -> Bool {
        guard let before = written[source] else {
            written[source] = 0
            return true
        }
        let now = before + count
        guard now >= max(1, keep / 10) else {
            written[source] = now
            return false
        }
        written[source] = 0
        return true
    }
}
