import Foundation
import Testing
@testable import FetchRunKit

/// What is particular to `state.db`: its schema and migrations, refusals, hostile rows, and
/// its group commit. What both stores promise is in the contract tests.
@Suite struct SQLiteStateStoreTests {
    let settings = SourceSettings(interval: .every(.seconds(60)), maxBackoff: .seconds(3600))

    func taken(_ attempt: LeaseAttempt) throws -> SourceLease {
        guard case .taken(let lease) = attempt else { throw StateStoreError(store: "test", reason: "not taken: \(attempt)") }
        return lease
    }

    @Test func aDatabaseOfTheColumnSchemaMigratesInPlaceKeepingEveryField() async throws {
        let directory = try temporaryStateDirectory()
        let path = directory.path + "/state.db"
        do {
            // state.db as the fetchrun before one engine left it: schema version 6, a column a field.
            let connection = try SQLiteConnection(path: path)
            for step in StateSchema.migrations.prefix(6) { try connection.execute(step) }
            try connection.execute("PRAGMA user_version = 6")
            try connection.execute("""
                INSERT INTO sources (name, last_fetch_at, last_outcome, last_success_at, consecutive_failures, failing_since,
                    last_error_kind, last_error_message, last_error_at, next_due_at, current_interval_ms, item_count,
                    etag, last_modified, body_hash, moved_to, moved_count, lease_owner, lease_until)
                VALUES ('s', 1800000000000, 'failed', 1799999940000, 2, 1799999970000, 'httpStatus', 'HTTP 503', 1800000000000,
                    1800000120000, 90000, 12, '"v1"', 'Wed, 21 Oct 2026 07:28:00 GMT', '0123456789abcdef', 'https://new.example/', 1, NULL, NULL);
                INSERT INTO outbox (output, delivery_id, source, kind, payload, created_at, next_attempt_at)
                    VALUES ('log', 's/a', 's', 'item', '{}', 1800000000000, 1800000000000);
                """)
        }
        let store = try await SQLiteStateStore.open(in: directory).store
        let state = try #require(try await store.states()["s"])
        var expected = SourceState(name: "s")
        expected.lastFetch = Date(timeIntervalSince1970: 1_800_000_000)
        expected.lastOutcome = "failed"
        expected.lastSuccess = Date(timeIntervalSince1970: 1_799_999_940)
        expected.consecutiveFailures = 2
        expected.failingSince = Date(timeIntervalSince1970: 1_799_999_970)
        expected.lastError = .init(kind: .httpStatus, message: "HTTP 503", at: Date(timeIntervalSince1970: 1_800_000_000))
        expected.nextDue = Date(timeIntervalSince1970: 1_800_000_120)
        expected.currentInterval = .seconds(90)
        expected.itemCount = 12
        expected.validators = HTTPValidators(etag: "\"v1\"", lastModified: "Wed, 21 Oct 2026 07:28:00 GMT")
        expected.bodyHash = "0123456789abcdef"
        expected.movedTo = "https://new.example/"
        expected.movedCount = 1
        #expect(state == expected)
        #expect(try await store.pendingDeliveries().map(\.delivery.id) == ["s/a"])
        // And it goes on from there under a lease.
        let lease = try taken(try await store.lease("s", until: Date().addingTimeInterval(60)))
        #expect(lease.state == expected)
    }

    @Test func aDatabaseFromANewerFetchrunIsRefusedNotTouched() async throws {
        let directory = try temporaryStateDirectory()
        let path = directory.path + "/state.db"
        do {
            let connection = try SQLiteConnection(path: path)
            try connection.execute("PRAGMA user_version = 99")
        }
        do {
            _ = try await SQLiteStateStore.open(in: directory)
            Issue.record("opened a database from a newer fetchrun")
        } catch {
            #expect(error.description.contains("schema version 99 is newer"), "\(error)")
        }
        #expect(try !FileManager.default.contentsOfDirectory(atPath: directory.path).contains { $0.contains("corrupt") })
    }

    @Test func aLinkInPlaceOfTheDatabaseIsRefused() async throws {
        let directory = try temporaryStateDirectory()
        let target = directory.path + "/elsewhere.db"
        _ = FileManager.default.createFile(atPath: target, contents: Data())
        try FileManager.default.createSymbolicLink(atPath: directory.path + "/state.db", withDestinationPath: target)
        do {
            _ = try await SQLiteStateStore.open(in: directory)
            Issue.record("opened through a link")
        } catch {
            #expect(error.description.contains("a symbolic link"), "\(error)")
        }
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.size] as? Int == 0)
    }

    @Test func aStoredStateReadsBackAsWrittenWhateverElseTheDocumentHolds() {
        var state = SourceState(name: "s")
        state.lastFetch = Date(timeIntervalSince1970: 1_800_000_000)
        state.lastOutcome = "failed"
        state.consecutiveFailures = 3
        state.lastError = .init(kind: .httpStatus, message: "HTTP 503", at: Date(timeIntervalSince1970: 1_800_000_000))
        state.currentInterval = .seconds(90)
        state.validators = HTTPValidators(etag: nil, lastModified: nil)
        state.bodyHash = "0123456789abcdef"
        state.type = "rss"
        #expect(SourceState(name: "s", json: state.json, nextDue: nil) == state)
        // A newer fetchrun's members are skipped, nested or not; of two of the same name the
        // later counts, even when it is of the wrong type.
        let document = #"{"future": {"a": [1, {"b": null}]}, "items": 4, "items": 7, "type": "rss", "type": 5, "error_kind": "network", "error_at": 1800000000000, "extra": "x"}"#
        let read = SourceState(name: "s", json: document, nextDue: nil)
        #expect(read.itemCount == 7 && read.type == nil)
        #expect(read.lastError == .init(kind: .network, message: "", at: Date(timeIntervalSince1970: 1_800_000_000)))
        // Cut short, it reads as nothing recorded rather than as its first half.
        #expect(SourceState(name: "s", json: #"{"items": 4, "type": "rss""#, nextDue: nil) == SourceState(name: "s"))
    }

    @Test func hostileStatesNeitherTrapNorReachTheTerminalRaw() async throws {
        let directory = try temporaryStateDirectory()
        _ = try await SQLiteStateStore.open(in: directory)
        do {
            // Written by anyone who can write the state folder: extremes in every field, wrong
            // types, a document that is not an object.
            let other = try SQLiteConnection(path: directory.path + "/state.db")
            try other.execute("""
                INSERT INTO sources (name, state, next_due_at, lease_owner, lease_until) VALUES ('s', '{"last_fetch": 1e300, "last_outcome": "failed",
                    "last_success": -9223372036854775808, "failures": 9223372036854775807, "failing_since": 1e19,
                    "error_kind": "network", "error_message": "evil \\u001b[31m message", "error_at": -1, "interval_ms": -5e30,
                    "items": -5, "etag": 5, "moved_count": "many"}', 9223372036854775807, 9223372036854775807, 9223372036854775807);
                INSERT INTO sources (name, state) VALUES ('t', '[1, 2, 3]'), ('u', 'not json');
                """)
        }
        let store = try await SQLiteStateStore.open(in: directory).store
        let states = try await store.states()
        let state = try #require(states["s"])
        #expect(state.health == .failing && state.itemCount == 0 && state.validators == nil)
        #expect(states["t"]?.health == .neverFetched && states["u"]?.health == .neverFetched)
        let source = SourceConfig(name: "s", adapter: ScriptedAdapter { _ in FetchOutput(items: []) }, settings: settings)
        let lines = StatusReport().lines(for: [(source, state)])
        #expect(!lines.joined().contains("\u{1B}"))
        #expect(!StatusDocument(sources: [source], states: states).jsonLines(0..<1).contains(0x1B))
        // A restarted watch and the next fetch cope with them too.
        _ = Watcher(sources: [source], pipeline: try await pipeline(in: directory), resuming: states)
        let failing = SourceConfig(name: "s", adapter: ScriptedAdapter { _ in throw FetchFailure(.network, "x") }, settings: settings)
        let fetched = try await pipeline(in: directory).fetch(failing)
        #expect(fetched.report.outcome.failure?.kind == .network)
        #expect(try await store.states()["s"]?.consecutiveFailures ?? 0 > 0)
    }

    @Test func fetchesStartingAndEndingTogetherAreWrittenInBatchesEachToItsOwnRow() async throws {
        let directory = try temporaryStateDirectory()
        let store = try await SQLiteStateStore.open(in: directory).store
        let names = (0..<300).map { "source-\($0)" }
        let later = Date().addingTimeInterval(600)
        let leases = await withTaskGroup(of: SourceLease?.self) { group in
            for name in names { group.addTask { try? taken(try await store.lease(name, until: later)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(leases.compactMap { $0?.name }) == Set(names))
        await withTaskGroup(of: Void.self) { group in
            for case let lease? in leases {
                group.addTask {
                    var state = lease.state
                    state.itemCount = Int(String(lease.name.dropFirst("source-".count)))!
                    state.lastFetch = Date()
                    _ = try? await store.commit(FetchCommit(lease: lease, state: state, snapshot: nil, deliveries: []))
                }
            }
        }
        let states = try await store.states()
        #expect(names.allSatisfy { states[$0]?.itemCount == Int(String($0.dropFirst("source-".count))) && states[$0]?.health == .ok })
        // Committing gave every lease back: another process may take them now.
        let reader = try SQLiteConnection(path: directory.path + "/state.db")
        #expect(try reader.integer("SELECT count(*) FROM sources WHERE lease_owner IS NOT NULL") == 0)
    }

    @Test func aWriteSQLiteRefusesFailsOnlyItsOwnFetchNotTheOthersInItsBatch() async throws {
        let directory = try temporaryStateDirectory()
        let store = try await SQLiteStateStore.open(in: directory).store
        do {
            // Anything that makes one row's write fail: here a trigger, as a damaged or
            // hand-edited database might have.
            let other = try SQLiteConnection(path: directory.path + "/state.db")
            try other.execute("CREATE TRIGGER refuse BEFORE UPDATE OF state ON sources WHEN NEW.name = 'bad' BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END")
        }
        let names = (0..<40).map { $0 == 20 ? "bad" : "good-\($0)" }
        let outcomes = await withTaskGroup(of: (String, Result<Bool, any Error>).self) { group in
            for name in names {
                group.addTask {
                    do {
                        let lease = try taken(try await store.lease(name, until: Date().addingTimeInterval(60)))
                        var state = lease.state
                        state.lastFetch = Date()
                        return (name, .success(try await store.commit(FetchCommit(lease: lease, state: state, snapshot: nil, deliveries: []))))
                    } catch {
                        return (name, .failure(error))
                    }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (name, outcome) in outcomes {
            switch outcome {
            case .success(let written): #expect(name != "bad" && written)
            case .failure(let error): #expect(name == "bad" && "\(error)".contains("refused by a trigger"), "\(name): \(error)")
            }
        }
        let states = try await store.states()
        #expect(states.values.filter { $0.health == .ok }.count == names.count - 1 && states["bad"]?.health == .neverFetched)
    }

    /// Sent rows are kept for 30 days (millions, at a few deliveries a second): what a delivery
    /// pass and a scrape run must not step through them row by row.
    @Test func theOutboxsRoutineStatementsDoNotStepThroughSentRows() async throws {
        let directory = try temporaryStateDirectory()
        let store = try await SQLiteStateStore.open(in: directory).store
        let sentRows = 5_000
        do {
            let other = try SQLiteConnection(path: directory.path + "/state.db")
            try other.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(sentRows))
                INSERT INTO outbox (output, delivery_id, source, kind, payload, created_at, next_attempt_at, delivered_at)
                SELECT 'chat', 'sent-' || i, 's', 'item', '{}', 1, 1, 1800000000000 FROM n
                """)
        }
        let lease = try #require({ if case .taken(let lease) = $0 { lease } else { nil } }(try await store.lease("s", until: Date().addingTimeInterval(60))))
        let deliveries = ["1", "2", "3"].map { QueuedDelivery(output: "chat", delivery: .item(Item(id: $0, title: "Story \($0)"), source: "s", sourceTitle: nil)) }
        #expect(try await store.commit(FetchCommit(lease: lease, state: lease.state, snapshot: nil, deliveries: deliveries)))

        let before = await store.fullScanSteps
        let now = Date()
        let claimed = try await store.claimDue(for: "chat", limit: 2, at: now, dueBy: nil, after: 0)
        let rest = try await store.claimDue(for: "chat", limit: 2, at: now, dueBy: nil, after: claimed.last?.row ?? 0)
        #expect(claimed.count + rest.count == 3)
        try await store.markDelivered(claimed.map(\.row), at: now)
        try await store.markFailed(rest.map { ($0.row, now.addingTimeInterval(60)) }, error: "HTTP 503", at: now)
        #expect(try await store.pendingDeliveries().count == 1)
        #expect(try await store.pendingCounts() == ["chat": 1])
        #expect(try await store.nextDeliveryDue(for: ["chat"]) != nil)
        #expect(try await store.pruneDelivered(before: Date(timeIntervalSince1970: 1_700_000_000)) == 0)
        #expect(try await store.retryNow(output: "chat", givenUp: false, at: now) == 1)
        let steps = await store.fullScanSteps - before
        // A handful for the three pending rows; every sent row once would be thousands.
        #expect(steps < 100, "\(steps) rows stepped through in full scans, beside \(sentRows) sent rows")
    }

    @Test func aScheduleResumesWithinItsBounds() {
        var schedule = FetchSchedule(interval: .seconds(60), maxInterval: .seconds(120), maxBackoff: .seconds(600), resuming: .seconds(100_000), consecutiveFailures: 2)
        #expect(schedule.currentInterval == .seconds(120))
        #expect(schedule.delay(after: .failed(FetchFailure(.network, "x")), jitter: 0) == .seconds(240))
    }
}
