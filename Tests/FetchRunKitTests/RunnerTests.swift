import Foundation
import Logging
import Synchronization
import Testing
import FixtureServer
@testable import FetchRunKit
import TestSupport

/// An adapter whose behaviour each test chooses: built in code, no config involved.
struct ScriptedAdapter: SourceAdapter {
    var behaviour: @Sendable (FetchContext) async throws -> FetchOutput

    init(_ behaviour: @escaping @Sendable (FetchContext) async throws -> FetchOutput) {
        self.behaviour = behaviour
    }

    func fetch(_ context: FetchContext) async throws -> FetchOutput {
        try await behaviour(context)
    }
}

func item(_ id: String) -> Item {
    Item(id: id, title: "Title \(id)")
}

func source(_ name: String, deadline: Duration = .seconds(5), keep: Int = 200, _ behaviour: @escaping @Sendable (FetchContext) async throws -> FetchOutput) -> SourceConfig {
    SourceConfig(name: name, adapter: ScriptedAdapter(behaviour), settings: SourceSettings(deadline: deadline, keep: keep), type: "scripted")
}

/// A fresh state directory under the system's temporary folder.
func temporaryStateDirectory() throws -> StateDirectory {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-tests-\(UUID().uuidString)").path
    let directory = StateDirectory(path: path)
    try directory.prepare()
    return directory
}

/// A pipeline over the state directory's store (a fresh one unless given), with no jitter in
/// its schedules; a dry run's reads the snapshots and records nothing.
func pipeline(in state: StateDirectory? = nil, dryRun: Bool = false, http: CurlHTTPClient = CurlHTTPClient()) async throws -> FetchPipeline {
    let state = try state ?? temporaryStateDirectory()
    let store = dryRun ? try await SQLiteStateStore.inMemory(readingSnapshotsOf: state) : try await SQLiteStateStore.open(in: state).store
    var pipeline = FetchPipeline(store: store, http: http)
    pipeline.dryRun = dryRun
    pipeline.jitter = { 0 }
    return pipeline
}

/// A one-pass runner over the state directory's store.
func runner(in state: StateDirectory, dryRun: Bool = false) async throws -> FetchRunner {
    FetchRunner(pipeline: try await pipeline(in: state, dryRun: dryRun))
}

/// The seen-id set of a snapshot that holds `items` and was their last fetch.
func seen(_ items: [Item]) -> SeenItems {
    SeenItems(identity: .guid, lastFetch: items.map(\.id))
}

@Suite struct SnapshotMergeTests {
    @Test func newItemsAreThoseThePreviousSnapshotLacks() {
        let merge = SnapshotMerge(previous: [item("b"), item("a")], seen: seen([item("b"), item("a")]), fetched: [item("c"), item("b")], keep: 10, at: Date())
        #expect(merge.newItems.map(\.id) == ["c"])
        #expect(merge.items.map(\.id) == ["c", "b", "a"])
    }

    @Test func keepCutsTheOldest() {
        let merge = SnapshotMerge(previous: [item("b"), item("a")], seen: seen([item("b"), item("a")]), fetched: [item("d"), item("c")], keep: 3, at: Date())
        #expect(merge.items.map(\.id) == ["d", "c", "b"])
    }

    @Test func duplicateIDsInOneFetchCountOnce() {
        let merge = SnapshotMerge(previous: [], seen: seen([]), fetched: [item("a"), item("a"), item("b")], keep: 10, at: Date())
        #expect(merge.newItems.map(\.id) == ["a", "b"])
    }

    @Test func currentVersionOfAKnownItemReplacesTheStoredOne() {
        var changed = item("a")
        changed.title = "Changed"
        let merge = SnapshotMerge(previous: [item("a")], seen: seen([item("a")]), fetched: [changed], keep: 10, at: Date())
        #expect(merge.newItems.isEmpty)
        #expect(merge.items.first?.title == "Changed")
        #expect(merge.updatedItems.map(\.title) == ["Changed"])
    }

    @Test func onlyATitleOrLinkChangeIsAnUpdate() {
        var moved = item("b")
        moved.link = "https://new.example/b"
        var summaryOnly = item("c")
        summaryOnly.summary = "edited"
        let merge = SnapshotMerge(previous: [item("a"), item("b"), item("c")], seen: seen([item("a"), item("b"), item("c")]), fetched: [item("a"), moved, summaryOnly, item("d")], keep: 10, at: Date())
        #expect(merge.updatedItems.map(\.id) == ["b"])
        #expect(merge.newItems.map(\.id) == ["d"])
    }
}

@Suite struct RunResultTests {
    let failure = SourceOutcome.failed(FetchFailure(.adapter, "x"))

    @Test func anyNewDataWins() {
        #expect(RunResult(aggregating: [.noData, .newData([item("a")]), failure]) == .newData)
    }

    @Test func failedOnlyWhenEverySourceFailed() {
        #expect(RunResult(aggregating: [failure, failure]) == .failed)
        #expect(RunResult(aggregating: [failure, .noData]) == .noData)
    }

    @Test func noSourcesIsNoData() {
        #expect(RunResult(aggregating: []) == .noData)
    }
}

@Suite struct FetchRunnerTests {
    @Test func deadlineCancelsTheSlowSourceOnly() async throws {
        let state = try temporaryStateDirectory(), clock = TestClock()
        let runner = FetchRunner(pipeline: try await pipeline(in: state, http: CurlHTTPClient(clock: clock)))
        let running = Task {
            await runner.run([
                source("slow", deadline: .milliseconds(200)) { context in
                    try await context.sleep(for: .seconds(30))
                    return FetchOutput(items: [item("never")])
                },
                source("fast") { _ in FetchOutput(items: [item("a")]) },
            ])
        }
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(200))
        let report = await running.value
        #expect(report.sources.map(\.name) == ["slow", "fast"])
        #expect(report.sources[0].outcome.failure?.kind == .deadlineExceeded)
        #expect(report.sources[1].outcome == .newData([item("a")]))
        #expect(report.result == .newData)
        // Cancellation reached the sleep: the run took the deadline, not the 30 seconds.
        #expect(report.duration == .milliseconds(200))
    }

    @Test func throwingAdapterFailsAloneAndKeepsItsSnapshot() async throws {
        let state = try temporaryStateDirectory()
        let runner = try await runner(in: state)
        _ = await runner.run([source("flaky") { _ in FetchOutput(items: [item("a")]) }])
        let before = try Data(contentsOf: URL(fileURLWithPath: state.snapshots.path(for: "flaky")))

        struct Broken: Error, CustomStringConvertible { var description: String { "server on fire" } }
        let report = await runner.run([
            source("flaky") { _ in throw Broken() },
            source("steady") { _ in FetchOutput(items: [item("s")]) },
        ])
        #expect(report.sources[0].outcome == .failed(FetchFailure(.adapter, "server on fire")))
        #expect(report.sources[0].totalItems == 1)
        #expect(report.sources[1].outcome == .newData([item("s")]))
        let after = try Data(contentsOf: URL(fileURLWithPath: state.snapshots.path(for: "flaky")))
        #expect(before == after)
    }

    @Test func onlyAFailureDrawsTheSpreadOfItsBackoff() async throws {
        struct Broken: Error {}
        let draws = Mutex(0)
        var pipeline = try await pipeline()
        pipeline.jitter = {
            draws.withLock { $0 += 1 }
            return 1
        }
        let report = await FetchRunner(pipeline: pipeline).run([
            source("new") { _ in FetchOutput(items: [item("a")]) },
            source("same") { _ in FetchOutput(items: [], unchanged: true) },
            source("broken") { _ in throw Broken() },
        ])
        #expect(report.sources.map(\.outcome.name) == ["newData", "noData", "failed"])
        #expect(draws.withLock { $0 } == 1)
    }

    @Test func secondFetchReportsOnlyTheDeltaAndSeesThePreviousSnapshot() async throws {
        let state = try temporaryStateDirectory()
        let runner = try await runner(in: state)
        let first = await runner.run([source("s") { _ in FetchOutput(items: [item("a")], adapterState: .object(["n": .number(1)])) }])
        #expect(first.sources[0].outcome == .newData([item("a")]))

        let second = await runner.run([source("s") { context in
            #expect(context.previousItems.map(\.id) == ["a"])
            #expect(context.previous?.adapterState?["n"]?.intValue == 1)
            return FetchOutput(items: [item("b"), item("a")])
        }])
        #expect(second.sources[0].outcome == .newData([item("b")]))
        #expect(second.sources[0].totalItems == 2)

        let third = await runner.run([source("s") { _ in FetchOutput(items: [item("b"), item("a")]) }])
        #expect(third.sources[0].outcome == .noData)
        // State the adapter did not return again is kept.
        guard case .loaded(let snapshot) = state.snapshots.load(source: "s") else { Issue.record("no snapshot"); return }
        #expect(snapshot.adapterState?["n"]?.intValue == 1)
    }

    @Test func corruptSnapshotIsMovedAsideAndReported() async throws {
        let state = try temporaryStateDirectory()
        let path = state.snapshots.path(for: "s")
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: path))

        let report = try await runner(in: state).run([source("s") { context in
            #expect(context.previous == nil)
            return FetchOutput(items: [item("a")])
        }])
        #expect(report.sources[0].outcome == .newData([item("a")]))
        #expect(report.sources[0].notes.count == 1)
        #expect(report.sources[0].notes[0].contains("moved to"))
        let files = try FileManager.default.contentsOfDirectory(atPath: state.snapshots.directory)
        let aside = try #require(files.first { $0.hasPrefix("s.json.corrupt-") })
        #expect(try String(contentsOfFile: state.snapshots.directory + "/" + aside, encoding: .utf8) == "{ not json")
        #expect(files.contains("s.json"))
    }

    @Test func dryRunWritesNothing() async throws {
        let state = try temporaryStateDirectory()
        let path = state.snapshots.path(for: "bad")
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: path))
        let runner = try await runner(in: state, dryRun: true)
        let report = await runner.run([
            source("s") { _ in FetchOutput(items: [item("a")]) },
            source("bad") { _ in FetchOutput(items: [item("b")]) },
        ])
        #expect(report.newItemCount == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: state.snapshots.directory) == ["bad.json"])
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "garbage")
    }

    @Test func unwritableSnapshotFailsTheSourceOnly() async throws {
        let state = try temporaryStateDirectory()
        // A directory where the snapshot file should be: the rename cannot replace it.
        try FileManager.default.createDirectory(atPath: state.snapshots.path(for: "blocked"), withIntermediateDirectories: false)
        let report = try await runner(in: state).run([
            source("blocked") { _ in FetchOutput(items: [item("a")]) },
            source("fine") { _ in FetchOutput(items: [item("a")]) },
        ])
        #expect(report.sources[0].outcome.failure?.kind == .snapshot)
        #expect(report.sources[1].outcome == .newData([item("a")]))
    }

    @Test func aRunCanKeepFewerNewItemsThanItCountsAndStreamTheRest() async throws {
        let state = try temporaryStateDirectory()
        let streamed = Locked<[String]>([])
        let report = try await runner(in: state).run(
            [source("s") { _ in FetchOutput(items: [item("c"), item("b"), item("a")]) }], keepingNewItems: 1
        ) { finished in
            streamed.withLock { $0 += finished.outcome.newItems.map(\.id) }
        }
        #expect(streamed.withLock { $0 } == ["c", "b", "a"])
        #expect(report.sources[0].newCount == 3)
        #expect(report.sources[0].outcome.newItems.map(\.id) == ["c"])
        #expect(report.newItemCount == 3)
        #expect(report.result == .newData)
    }

    @Test func aFirstFetchKeepsItsOwnNumberOfNewItems() async throws {
        let state = try temporaryStateDirectory()
        let fetches = Locked(0)
        let feed = source("s") { _ in
            let round = fetches.withLock { $0 += 1; return $0 }
            return FetchOutput(items: round == 1 ? [item("c"), item("b"), item("a")] : [item("f"), item("e"), item("d"), item("c")])
        }
        let first = try await runner(in: state).run([feed], keepingNewItems: 2, keepingBaselineItems: 0)
        #expect(first.sources[0].isBaseline)
        #expect(first.sources[0].newCount == 3)
        #expect(first.sources[0].outcome.newItems.isEmpty)
        // Not a first fetch any more: the other limit.
        let second = try await runner(in: state).run([feed], keepingNewItems: 2, keepingBaselineItems: 0)
        #expect(!second.sources[0].isBaseline)
        #expect(second.sources[0].newCount == 3)
        #expect(second.sources[0].outcome.newItems.map(\.id) == ["f", "e"])
    }

    @Test func keepLimitsTheSnapshot() async throws {
        let state = try temporaryStateDirectory()
        let report = try await runner(in: state).run([
            source("s", keep: 2) { _ in FetchOutput(items: [item("c"), item("b"), item("a")]) },
        ])
        // The source holds three; the snapshot keeps two (and the seen set all three ids).
        #expect(report.sources[0].totalItems == 3)
        guard case .loaded(let snapshot) = state.snapshots.load(source: "s") else { Issue.record("no snapshot"); return }
        #expect(snapshot.items.map(\.id) == ["c", "b"])
    }

    /// `count` sources that each GET one feed of one fixture host, the nth answered after
    /// `latency(n)`, and end there: no parsing on the blocking pool, whose other users (a
    /// neighbour's 150 MB of pages) would make a fetch end long after its answer came.
    func feeds(_ count: Int, on server: FixtureServer, latency: (Int) -> Int) throws -> [SourceConfig] {
        (1...count).map { index in
            let url = server.url("/feed/\(index).xml?latency=\(latency(index))ms")
            return source("f\(index)", deadline: .seconds(30)) { context in
                _ = try await context.http.execute(HTTPRequest(url: url, deadline: context.deadline))
                return FetchOutput(items: [])
            }
        }
    }

    /// Runs `sources` with a client of `perHost` connections per host, then waits (up to 5 s)
    /// for the server to see the connections the client closed; the connections still open.
    func openConnectionsAfterRunning(_ sources: [SourceConfig], perHost: Int, on server: FixtureServer) async throws -> Int {
        var settings = CurlHTTPClient.Configuration()
        settings.maxConnectionsPerHost = perHost
        let http = CurlHTTPClient(configuration: settings)
        // A dry run: the fetches end without a commit, which waits for the store's one thread
        // that every test of the process shares.
        let runner = FetchRunner(pipeline: try await pipeline(dryRun: true, http: http))
        // The run's tasks on a thread of their own, as in fetchrun's own process: on the pool
        // the tests share, a neighbour's blocking work held the runner's loop past the next
        // answer, and no connection was closed as the fetches ended.
        let executor = QueueTaskExecutor(label: "runner under test")
        return await withRunning(http) {
            let report = await withTaskExecutorPreference(executor) { await runner.run(sources) }
            #expect(report.sources.allSatisfy { $0.outcome.failure == nil })
            let settled = ContinuousClock.now + .seconds(5)
            var open = server.connections.open, previous = -1
            while open != previous, .now < settled {
                previous = open
                // Real time: the server sees a close only when the kernel delivers it, and
                // nothing says when it has seen the last one but a count that stays put.
                try? await Task.sleep(for: .milliseconds(300))
                open = server.connections.open
            }
            return open
        }
    }

    @Test func theLastFetchesCloseTheConnectionsThatCameFree() async throws {
        let server = try FixtureServer()
        // All started at once, answered 600 ms apart: as each fetch ends, one connection fewer
        // is worth keeping, and the next answer closes the one idle longest — one left. curl's
        // own rule (four per transfer in flight) closes one of the eight, at the last answer.
        // A fetch that ends only after the next answer (a loaded machine) costs one close.
        let open = try await openConnectionsAfterRunning(try feeds(8, on: server) { $0 * 600 }, perHost: 8, on: server)
        #expect(open <= 4, "\(open) of \(server.connections.accepted) connections still open")
    }

    @Test func requestsWaitingForTheirHostStillReuseItsConnections() async throws {
        let server = try FixtureServer()
        // Twelve fetches through three connections: those that waited for a slot went out on a
        // connection already open, the limit never fell below what was still to be sent.
        _ = try await openConnectionsAfterRunning(try feeds(12, on: server) { _ in 30 }, perHost: 3, on: server)
        #expect(server.connections.accepted == 3, "accepted \(server.connections.accepted)")
        #expect(server.requests.count == 12)
    }
}

@Suite struct StateDirectoryTests {
    @Test func secondLockIsRefusedWhileTheFirstIsHeld() throws {
        let state = try temporaryStateDirectory()
        let first = try state.lock()
        #expect {
            _ = try state.lock()
        } throws: { error in
            guard case StateDirectoryError.locked(_, let holder) = error else { return false }
            return holder == getpid()
        }
        withExtendedLifetime(first) {}
    }

    @Test func lockIsFreeAgainOnceReleased() throws {
        let state = try temporaryStateDirectory()
        do { _ = try state.lock() }
        _ = try state.lock()
    }

    @Test func aFileInPlaceOfTheDirectoryIsUnusable() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-file-\(UUID().uuidString)").path
        try Data().write(to: URL(fileURLWithPath: path))
        #expect(throws: StateDirectoryError.self) { try StateDirectory(path: path).prepare() }
    }

    @Test func snapshotRoundTripsThroughTheStore() throws {
        let store = try temporaryStateDirectory().snapshots
        let snapshot = Snapshot(
            source: "s", type: "t", updatedAt: Date(timeIntervalSince1970: 1_700_000_000),
            items: [Item(id: "1", title: "T", link: "https://example.org/1", published: Date(timeIntervalSince1970: 1_600_000_000),
                         enclosures: [Enclosure(url: "https://example.org/a.mp3", type: "audio/mpeg", length: 12)], extra: ["k": "v"])],
            validators: HTTPValidators(etag: "\"abc\"", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT"),
            adapterState: .object(["cursor": .string("x")])
        )
        try store.save(snapshot)
        guard case .loaded(let loaded) = store.load(source: "s") else { Issue.record("not loaded"); return }
        #expect(loaded == snapshot)
        #expect(store.sourceNames() == ["s"])
        #expect(try store.remove(source: "s"))
        #expect(try store.remove(source: "s") == false)
    }
}

@Suite struct DeadlineTimerTests {
    @Test func aSleepReturnsNoSoonerThanItsDeadline() async throws {
        let timer = DeadlineTimer(name: "test deadlines")
        let deadline = ContinuousClock.now + .milliseconds(30)
        try await timer.sleep(until: deadline)
        #expect(ContinuousClock.now >= deadline)
    }

    @Test func aSoonerDeadlineWakesWhileALaterOneWaits() async throws {
        let timer = DeadlineTimer(name: "test deadlines")
        let late = Task { try await timer.sleep(until: .now + .seconds(3600)) }
        try await waitUntil("the hour's sleep on the timer") { timer.waiting > 0 }
        // Would wait the hour if the timer thread kept waiting for the first deadline.
        try await timer.sleep(until: .now + .milliseconds(20))
        late.cancel()
        await #expect(throws: CancellationError.self) { try await late.value }
    }

    @Test func cancelledSleepsEndAtOnceAndLeaveNothingBehind() async throws {
        let timer = DeadlineTimer(name: "test deadlines")
        let sleeps = (0..<1_000).map { _ in Task { try await timer.sleep(until: .now + .seconds(3600)) } }
        try await waitUntil("1,000 sleeps on the timer") { timer.waiting >= 1_000 }
        for sleep in sleeps { sleep.cancel() }
        for sleep in sleeps {
            await #expect(throws: CancellationError.self) { try await sleep.value }
        }
        #expect(timer.waiting == 0)
        // A sleep cancelled before it begins never waits.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await timer.sleep(until: .now + .seconds(3600))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
    }
}

/// The alarms behind ``withDeadline(_:operation:)``: called on the timer's thread at their
/// deadline, never once cancelled, and again when rescheduled.
@Suite struct DeadlineAlarmTests {
    @Test func anAlarmIsCalledNoSoonerThanItsDeadlineWithItsNumber() async throws {
        let timer = DeadlineTimer(name: "test alarms")
        let deadline = ContinuousClock.now + .milliseconds(30)
        let (calls, call) = AsyncStream<(Int, ContinuousClock.Instant)>.makeStream()
        let alarm = timer.schedule(at: deadline) { alarm in call.yield((alarm, .now)) }
        var heard = calls.makeAsyncIterator()
        let (number, at) = try #require(await heard.next())
        #expect(number == alarm)
        #expect(at >= deadline)
        timer.cancel(alarm)
        #expect(timer.waiting == 0)
    }

    @Test func aCancelledAlarmIsNeverCalledAndLeavesNothingBehind() async throws {
        let timer = DeadlineTimer(name: "test alarms")
        let called = Mutex(0)
        let alarms = (0..<1_000).map { _ in timer.schedule(at: .now + .milliseconds(50)) { _ in called.withLock { $0 += 1 } } }
        #expect(timer.waiting == 1_000)
        for alarm in alarms { timer.cancel(alarm) }
        #expect(timer.waiting == 0)
        // Well past the deadline, and past a sleep's that comes after it.
        try await timer.sleep(until: .now + .milliseconds(100))
        #expect(called.withLock { $0 } == 0)
        // Rescheduling a cancelled alarm does nothing.
        timer.reschedule(alarms[0], at: .now)
        try await timer.sleep(until: .now + .milliseconds(30))
        #expect(called.withLock { $0 } == 0)
    }

    @Test func anAlarmRescheduledBeforeItsTimeIsCalledOnceAtTheNewTime() async throws {
        let timer = DeadlineTimer(name: "test alarms")
        let calls = Mutex<[ContinuousClock.Instant]>([])
        let alarm = timer.schedule(at: .now + .milliseconds(20)) { _ in calls.withLock { $0.append(.now) } }
        let moved = ContinuousClock.now + .milliseconds(80)
        timer.reschedule(alarm, at: moved)
        try await timer.sleep(until: .now + .milliseconds(200))
        let heard = calls.withLock { $0 }
        #expect(heard.count == 1)
        #expect(heard.allSatisfy { $0 >= moved })
        timer.cancel(alarm)
    }

    @Test func anAlarmRescheduledWhenCalledIsCalledAgainUntilCancelled() async throws {
        let timer = DeadlineTimer(name: "test alarms")
        let (calls, call) = AsyncStream<Int>.makeStream()
        let count = Mutex(0)
        let alarm = timer.schedule(at: .now + .milliseconds(10)) { alarm in
            let calls = count.withLock { $0 += 1; return $0 }
            call.yield(calls)
            if calls < 3 { timer.reschedule(alarm, at: .now + .milliseconds(10)) }
        }
        var heard = calls.makeAsyncIterator()
        #expect(await heard.next() == 1)
        #expect(await heard.next() == 2)
        #expect(await heard.next() == 3)
        timer.cancel(alarm)
        #expect(timer.waiting == 0)
    }
}

/// A stop that comes as the operation returns: the operation's task is cancelled with the
/// caller's, and the cancellation must not stand in for what the operation returned.
@Suite struct WithDeadlineTests {
    /// Cancels the task that runs `body` from inside `body`, then takes a moment more before
    /// `body` returns, as a loaded machine may.
    private func stoppedAsItReturns(_ body: @escaping @Sendable (@escaping @Sendable () async -> Int) async throws -> Int) async throws -> Int {
        let running = Mutex<Task<Int, any Error>?>(nil)
        let (start, go) = AsyncStream<Void>.makeStream()
        let task = Task {
            for await _ in start { break }
            return try await body {
                running.withLock { $0?.cancel() }
                // Not cancellable: the timer, cancelled a moment ago, has ended by now.
                await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { resumed.resume() }
                }
                return 42
            }
        }
        running.withLock { $0 = task }
        go.yield()
        return try await task.value
    }

    @Test func aStopAsTheOperationReturnsKeepsWhatItReturned() async throws {
        #expect(try await stoppedAsItReturns { operation in try await withDeadline(.now + .seconds(60)) { await operation() } } == 42)
        #expect(try await stoppedAsItReturns { operation in try await withDeadline(FetchDeadline(.now + .seconds(60), clock: SystemClock())) { await operation() } } == 42)
    }

    @Test func aStopBeforeTheOperationEndsIsTheOperationsCancellation() async throws {
        let clock = TestClock()
        let task = Task {
            try await withDeadline(FetchDeadline(clock.now + .seconds(60), clock: clock)) { try await clock.sleep(for: .seconds(60)) }
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test func theDeadlineStillEndsAnOperationThatHangs() async throws {
        let clock = TestClock()
        let hanging = Task {
            try await withDeadline(FetchDeadline(clock.now + .milliseconds(50), clock: clock)) { try await clock.sleep(for: .seconds(3600)) }
        }
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(50))
        await #expect(throws: DeadlineExceeded.self) { try await hanging.value }
    }

    @Test func aDeadlineStandsStillWhileTheOperationWaitsForItsHost() async throws {
        // Paused past its end (the alarm goes off meanwhile and finds it paused), then
        // resumed: the end moved by the wait, so 30 ms more are well within it, and 3 s are not.
        func fetch(takingAfterTheWait rest: Duration) async throws -> Int {
            let clock = TestClock()
            let deadline = FetchDeadline(clock.now + .seconds(2), clock: clock)
            let fetching = Task {
                try await withDeadline(deadline) {
                    deadline.pause()
                    try await clock.sleep(for: .milliseconds(2_500))
                    deadline.resume(afterWaitingFor: "host")
                    try await clock.sleep(for: rest)
                    return 7
                }
            }
            try await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(2_500))
            try await clock.waitForSleepers(1)
            clock.advance(by: rest)
            return try await fetching.value
        }
        #expect(try await fetch(takingAfterTheWait: .milliseconds(30)) == 7)
        await #expect(throws: DeadlineExceeded.self) { try await fetch(takingAfterTheWait: .seconds(3)) }
    }

    @Test func aDeadlineSaysHowLongItWaitedAndForWhichHost() async throws {
        let clock = TestClock()
        let deadline = FetchDeadline(clock.now + .seconds(10), clock: clock)
        deadline.pause()
        clock.advance(by: .seconds(4))
        #expect(deadline.remaining == .seconds(10))
        deadline.resume(afterWaitingFor: "example.org:443")
        clock.advance(by: .seconds(3))
        #expect(deadline.remaining == .seconds(7))
        #expect(deadline.queued.wait == .seconds(4))
        #expect(deadline.queued.host == "example.org:443")
        clock.advance(by: .seconds(7))
        #expect(deadline.hasPassed)
    }

    @Test func anAdaptersTimeLeftFollowsItsDeadlineAsAWaitForItsHostMovesIt() {
        let clock = TestClock()
        let budget = FetchDeadline(clock.now + .seconds(10), clock: clock)
        var context = FetchContext(sourceName: "s", previous: nil, deadline: clock.now + .seconds(10), http: CurlHTTPClient(clock: clock), logger: Logger(label: "test"))
        context.budget = budget
        context.clock = clock
        clock.advance(by: .seconds(2))
        budget.pause()
        clock.advance(by: .seconds(5))
        budget.resume(afterWaitingFor: "example.org:443")
        #expect(context.remaining == .seconds(8))
        #expect(context.deadline(after: .seconds(60)) == clock.now + .seconds(8))
        #expect(context.deadline(after: .seconds(1)) == clock.now + .seconds(1))
    }
}

extension CurlHTTPClient {
    /// A client whose curl loop runs until the test process ends: for tests that make requests
    /// without a service group of their own.
    static func started(configuration: Configuration = Configuration()) -> CurlHTTPClient {
        let client = CurlHTTPClient(configuration: configuration)
        Task.detached { try? await client.run() }
        return client
    }
}

/// Off-pool work: blocked work never holds back other work, however many are blocked.
@Suite struct OffPoolWorkTests {
    final class Started: Sendable {
        let count = Atomic<Int>(0)
    }

    @Test func sixteenBlockedCallsAllRunAtOnce() async throws {
        let started = Started()
        let gate = DispatchSemaphore(value: 0)
        let calls = 16
        let results = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<calls {
                    group.addTask {
                        try await runOffPool { _ in
                            started.count.add(1, ordering: .relaxed)
                            gate.wait()
                            return index
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        // Every call starts while the others are still blocked, each on a thread of its own at
        // once: a pool of as many threads as cores would start two and wait for ever, and a
        // dispatch queue started the others about one a second (15 s for all sixteen).
        try await waitUntil("every call started", timeout: .seconds(5)) { started.count.load(ordering: .relaxed) >= calls }
        let running = started.count.load(ordering: .relaxed)
        for _ in 0..<calls { gate.signal() }
        #expect(running == calls)
        #expect(try await results.value == (0..<calls).reduce(0, +))
    }
}
