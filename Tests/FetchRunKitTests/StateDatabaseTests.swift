import Foundation
import Testing
@testable import FetchRunKit

/// The state database on its own: schema, recording and scheduling, refusals.
@Suite struct StateDatabaseTests {
    func report(_ outcome: SourceOutcome, total: Int = 0) -> SourceReport {
        SourceReport(name: "s", type: "scripted", outcome: outcome, totalItems: total, duration: .zero)
    }

    let settings = SourceSettings(interval: .every(.seconds(60)), maxBackoff: .seconds(3600))

    @Test func recordsHealthAndSchedulesLikeWatch() async throws {
        let directory = try temporaryStateDirectory()
        let (database, note) = try await StateDatabase.open(in: directory)
        #expect(note == nil)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var state = try await database.record(report(.newData([item("a")]), total: 1), settings: settings, at: start, jitter: 0)
        #expect(state.health == .ok && state.itemCount == 1)
        #expect(state.nextDue == start.addingTimeInterval(60))
        state = try await database.record(report(.noData, total: 1), settings: settings, at: start, jitter: 0)
        #expect(state.nextDue == start.addingTimeInterval(90))
        for (index, wait) in [60.0, 120.0, 240.0].enumerated() {
            state = try await database.record(report(.failed(FetchFailure(.network, "refused"))), settings: settings, at: start.addingTimeInterval(Double(index)), jitter: 0)
            #expect(state.nextDue == start.addingTimeInterval(Double(index) + wait))
        }
        #expect(state.consecutiveFailures == 3)
        #expect(state.failingSince == start)
        #expect(state.lastError?.message == "refused")
        // Retry-After asks for longer than the backoff: honoured.
        state = try await database.record(report(.failed(FetchFailure(.httpStatus, "429", status: 429, retryAfter: .seconds(7200)))), settings: settings, at: start, jitter: 0)
        #expect(state.nextDue == start.addingTimeInterval(7200))

        // A stop is not the source's failure.
        let before = try await database.state(of: "s")
        #expect(try await database.record(report(.failed(FetchFailure(.cancelled, "stopped"))), settings: settings) == before)

        // What was recorded is what a second connection reads back.
        let reopened = try #require(try await StateDatabase.openExisting(in: directory))
        #expect(try await reopened.states()["s"] == before)
        try await reopened.forget("s")
        #expect(try await reopened.state(of: "s").health == .neverFetched)
    }

    @Test func aDatabaseFromANewerFetchrunIsRefusedNotTouched() async throws {
        let directory = try temporaryStateDirectory()
        let path = directory.path + "/state.db"
        do {
            let connection = try SQLiteConnection(path: path)
            try connection.execute("PRAGMA user_version = 99")
        }
        await #expect(throws: StateDatabaseError.self) { _ = try await StateDatabase.open(in: directory) }
        do {
            _ = try await StateDatabase.open(in: directory)
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
            _ = try await StateDatabase.open(in: directory)
            Issue.record("opened through a link")
        } catch {
            #expect(error.description.contains("a symbolic link"), "\(error)")
        }
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.size] as? Int == 0)
    }

    @Test func leasesKeepOutOtherLiveProcessesUntilTheyLapse() async throws {
        let directory = try temporaryStateDirectory()
        let (database, _) = try await StateDatabase.open(in: directory)
        let later = Date().addingTimeInterval(600)
        #expect(try await database.takeLease(on: "s", until: later) == .taken)
        #expect(try await database.takeLease(on: "s", until: later) == .taken)
        try await database.releaseLease(on: "s")
        // Another process's leases, written as it would: pid 1 is alive; 4194305 is past pid_max.
        do {
            let other = try SQLiteConnection(path: directory.path + "/state.db")
            try other.execute("UPDATE sources SET lease_owner = 1, lease_until = \(Int64(later.timeIntervalSince1970 * 1000)) WHERE name = 's'")
        }
        #expect(try await database.takeLease(on: "s", until: later) == .held(by: 1))
        // A lease that has run out is taken over…
        #expect(try await database.takeLease(on: "s", until: later, now: later.addingTimeInterval(1)) == .taken)
        // …and so is one whose holder is gone.
        do {
            let other = try SQLiteConnection(path: directory.path + "/state.db")
            try other.execute("UPDATE sources SET lease_owner = 4194305, lease_until = \(Int64(later.timeIntervalSince1970 * 1000)) WHERE name = 's'")
        }
        #expect(try await database.takeLease(on: "s", until: later) == .taken)
    }

    @Test func fetchesStartingAndEndingTogetherAreWrittenInBatchesEachToItsOwnRow() async throws {
        let directory = try temporaryStateDirectory()
        let (database, _) = try await StateDatabase.open(in: directory)
        let names = (0..<300).map { "source-\($0)" }
        let later = Date().addingTimeInterval(600)
        let starts = await withTaskGroup(of: StateDatabase.FetchStart?.self) { group in
            for name in names { group.addTask { try? await database.beginFetch(of: name, until: later) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(starts.compactMap { $0?.state.name }) == Set(names))
        #expect(starts.allSatisfy { $0?.lease == .taken && $0?.state.health == .neverFetched })
        await withTaskGroup(of: Void.self) { group in
            for (index, name) in names.enumerated() {
                group.addTask {
                    let report = SourceReport(name: name, type: "scripted", outcome: .noData, totalItems: index, duration: .zero)
                    _ = try? await database.record(report, settings: settings)
                }
            }
        }
        let states = try await database.states()
        #expect(names.allSatisfy { states[$0]?.itemCount == Int(String($0.dropFirst("source-".count))) && states[$0]?.health == .ok })
        // Recording gave every lease back: another process may take them now.
        let reader = try SQLiteConnection(path: directory.path + "/state.db")
        #expect(try reader.integer("SELECT count(*) FROM sources WHERE lease_owner IS NOT NULL") == 0)
    }

    @Test func aWriteSQLiteRefusesFailsOnlyItsOwnFetchNotTheOthersInItsBatch() async throws {
        let directory = try temporaryStateDirectory()
        let (database, _) = try await StateDatabase.open(in: directory)
        do {
            // Anything that makes one row's write fail: here a trigger, as a damaged or
            // hand-edited database might have.
            let other = try SQLiteConnection(path: directory.path + "/state.db")
            try other.execute("CREATE TRIGGER refuse BEFORE INSERT ON sources WHEN NEW.name = 'bad' BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END")
        }
        let names = (0..<40).map { $0 == 20 ? "bad" : "good-\($0)" }
        let outcomes = await withTaskGroup(of: (String, Result<SourceState, any Error>).self) { group in
            for name in names {
                group.addTask {
                    let report = SourceReport(name: name, type: "scripted", outcome: .noData, totalItems: 1, duration: .zero)
                    do {
                        return (name, .success(try await database.record(report, settings: settings)))
                    } catch {
                        return (name, .failure(error))
                    }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (name, outcome) in outcomes {
            switch outcome {
            case .success: #expect(name != "bad")
            case .failure(let error): #expect(name == "bad" && "\(error)".contains("refused by a trigger"), "\(name): \(error)")
            }
        }
        let states = try await database.states()
        #expect(states.count == names.count - 1 && states["bad"] == nil)
    }

    @Test func hostileValuesInTheDatabaseNeitherTrapNorReachTheTerminalRaw() async throws {
        let directory = try temporaryStateDirectory()
        _ = try await StateDatabase.open(in: directory)
        do {
            // Written by anyone who can write the state folder: extremes in every column.
            let other = try SQLiteConnection(path: directory.path + "/state.db")
            try other.execute("""
                INSERT INTO sources (name, last_fetch_at, last_outcome, last_success_at, consecutive_failures, failing_since,
                    last_error_kind, last_error_message, last_error_at, next_due_at, current_interval_ms, item_count, lease_owner, lease_until)
                VALUES ('s', 9223372036854775807, 'failed', -9223372036854775808, 9223372036854775807, 9223372036854775807,
                    'network', 'evil ' || char(27) || '[31m message', -1, 9223372036854775807, -9223372036854775808, -5,
                    9223372036854775807, 9223372036854775807)
                """)
        }
        let (database, _) = try await StateDatabase.open(in: directory)
        let state = try await database.state(of: "s")
        #expect(state.health == .failing)
        let source = SourceConfig(name: "s", adapter: ScriptedAdapter { _ in FetchOutput(items: []) }, settings: settings)
        let lines = StatusReport().lines(for: [(source, state)])
        #expect(!lines.joined().contains("\u{1B}"))
        _ = StatusReport.jsonLines(for: [(source, state)])
        // A restarted watch and the next record cope with them too.
        _ = Watcher(sources: [source], runner: FetchRunner(store: directory.snapshots), clock: ContinuousClock(), resuming: ["s": state])
        #expect(try await database.takeLease(on: "s", until: Date().addingTimeInterval(60)) == .taken)
        let recorded = try await database.record(report(.failed(FetchFailure(.network, "x"))), settings: settings)
        #expect(recorded.consecutiveFailures > 0)
    }

    @Test func aScheduleResumesWithinItsBounds() {
        var schedule = FetchSchedule(interval: .seconds(60), maxInterval: .seconds(120), maxBackoff: .seconds(600), resuming: .seconds(100_000), consecutiveFailures: 2)
        #expect(schedule.currentInterval == .seconds(120))
        #expect(schedule.delay(after: .failed(FetchFailure(.network, "x")), jitter: 0) == .seconds(240))
    }
}
