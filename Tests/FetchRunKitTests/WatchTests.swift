import Foundation
import ServiceLifecycleTestKit
import Testing
@testable import FetchRunKit
import TestSupport

@Suite struct FetchScheduleTests {
    let noData = SourceOutcome.noData
    let newData = SourceOutcome.newData([Item(id: "a", title: "A")])
    let failed = SourceOutcome.failed(FetchFailure(.network, "down"))

    @Test func noDataStretchesTheIntervalAndNewDataSnapsItBack() {
        var schedule = FetchSchedule(interval: .seconds(60))
        #expect(schedule.delay(after: newData, jitter: 0) == .seconds(60))
        #expect(schedule.delay(after: noData, jitter: 0) == .seconds(90))
        #expect(schedule.delay(after: noData, jitter: 0) == .seconds(135))
        #expect(schedule.delay(after: noData, jitter: 0) == .milliseconds(202_500))
        // Up to the default cap of 4× the interval, and no further.
        for _ in 0..<10 { _ = schedule.delay(after: noData, jitter: 0) }
        #expect(schedule.delay(after: noData, jitter: 0) == .seconds(240))
        #expect(schedule.delay(after: newData, jitter: 0) == .seconds(60))
        #expect(schedule.delay(after: noData, jitter: 0) == .seconds(90))
    }

    @Test func maxIntervalCapsTheStretch() {
        var schedule = FetchSchedule(interval: .seconds(10), maxInterval: .seconds(20))
        #expect((0..<5).map { _ in schedule.delay(after: noData, jitter: 0) } == [.seconds(15), .seconds(20), .seconds(20), .seconds(20), .seconds(20)])
    }

    @Test func failuresBackOffExponentiallyWithinTheJitterBounds() {
        for jitter in [-1.0, -0.5, 0, 0.5, 1] {
            var schedule = FetchSchedule(interval: .seconds(10), maxBackoff: .seconds(3600))
            for failures in 1...6 {
                let base = 10.0 * pow(2, Double(failures - 1))
                let delay = schedule.delay(after: failed, jitter: jitter).seconds
                #expect(delay >= base * 0.8 - 0.001 && delay <= base * 1.2 + 0.001, "failure \(failures), jitter \(jitter): \(delay)")
                #expect(abs(delay - base * (1 + 0.2 * jitter)) < 0.001)
            }
        }
    }

    @Test func backoffIsCappedAndNeverGivesUp() {
        var schedule = FetchSchedule(interval: .seconds(10), maxBackoff: .seconds(300))
        for _ in 0..<1000 { #expect(schedule.delay(after: failed, jitter: 1) <= .seconds(300)) }
        #expect(schedule.consecutiveFailures == 1000)
        #expect(schedule.delay(after: newData, jitter: 0) == .seconds(10))
        #expect(schedule.consecutiveFailures == 0)
    }

    @Test func retryAfterIsHonoured() {
        var schedule = FetchSchedule(interval: .seconds(10))
        let limited = SourceOutcome.failed(FetchFailure(.httpStatus, "429", status: 429, retryAfter: .seconds(120)))
        #expect(schedule.delay(after: limited, jitter: 0) == .seconds(120))
        // A Retry-After shorter than the backoff does not shorten it.
        let short = SourceOutcome.failed(FetchFailure(.httpStatus, "503", status: 503, retryAfter: .seconds(1)))
        #expect(schedule.delay(after: short, jitter: 0) == .seconds(20))
    }
}

/// Counts fetches in flight, overall and per source, and keeps the highest counts seen.
final class Concurrency: Sendable {
    private struct State {
        var current = 0, highest = 0
        var perSource: [String: Int] = [:], highestPerSource = 0
        var fetches = 0
    }
    private let state = Locked(State())

    func enter(_ source: String) {
        state.withLock {
            $0.current += 1
            $0.fetches += 1
            $0.highest = max($0.highest, $0.current)
            $0.perSource[source, default: 0] += 1
            $0.highestPerSource = max($0.highestPerSource, $0.perSource[source]!)
        }
    }

    func leave(_ source: String) {
        state.withLock {
            $0.current -= 1
            $0.perSource[source]! -= 1
        }
    }

    var highest: Int { state.withLock { $0.highest } }
    var highestPerSource: Int { state.withLock { $0.highestPerSource } }
    var fetches: Int { state.withLock { $0.fetches } }
}

@Suite struct WatcherTests {
    /// A source that does what `behaviour` says. Its deadline is a day: a fetch's deadline is on
    /// the watcher's clock, which these tests move on by minutes while a fetch runs.
    func scripted(_ name: String, every interval: Duration, _ behaviour: @escaping @Sendable (FetchContext) async throws -> FetchOutput) -> SourceConfig {
        SourceConfig(name: name, adapter: ScriptedAdapter(behaviour), settings: SourceSettings(deadline: .seconds(86_400), interval: .every(interval)), type: "scripted")
    }

    /// A source whose fetch takes `busy` on the watcher's clock and yields a new item each time.
    func slowSource(_ name: String, interval: Duration, busy: Duration, concurrency: Concurrency) -> SourceConfig {
        let counter = Locked(0)
        return scripted(name, every: interval) { context in
            concurrency.enter(name)
            defer { concurrency.leave(name) }
            try await context.sleep(for: busy)
            let number = counter.withLock { value -> Int in
                value += 1
                return value
            }
            return FetchOutput(items: [Item(id: "\(name)-\(number)", title: "\(number)")])
        }
    }

    /// A source whose fetch never ends by itself, and a stream that yields when it has begun.
    func stuckSource() -> (SourceConfig, AsyncStream<Void>) {
        let (fetching, fetchStarted) = AsyncStream<Void>.makeStream()
        let stuck = scripted("stuck", every: .seconds(1)) { context in
            fetchStarted.yield()
            try await context.sleep(for: .seconds(3600))
            return FetchOutput(items: [])
        }
        return (stuck, fetching)
    }

    func watcher(_ sources: [SourceConfig], clock: TestClock, maxInFlight: Int = 64, maxFetches: Int? = nil, grace: Duration = .seconds(5)) async throws -> Watcher {
        var options = Watcher.Options()
        options.maxInFlight = maxInFlight
        options.maxFetches = maxFetches
        options.startSpread = .zero
        options.grace = grace
        return Watcher(sources: sources, pipeline: try await pipeline(http: CurlHTTPClient(clock: clock)), options: options)
    }

    @Test func fetchesOfOneSourceNeverOverlap() async throws {
        let clock = TestClock()
        let concurrency = Concurrency()
        let watcher = try await watcher([slowSource("s", interval: .seconds(1), busy: .milliseconds(30), concurrency: concurrency)], clock: clock)
        let running = Task { await watcher.run() }
        // Time runs far ahead of the fetch: ten intervals pass while one fetch is still busy.
        // At least 40 such steps, and on until a second fetch has come: on a loaded machine
        // (the thread sanitizer, 90 tests beside it) one fetch can outlast all 40.
        for _ in 0..<40 {
            // A fetch busy on the clock, or the timer waiting for the next one.
            try await clock.waitForSleepers(1)
            clock.advance(by: .seconds(10))
        }
        await watcher.stop()
        await running.value
        #expect(concurrency.fetches >= 2)
        #expect(concurrency.highestPerSource == 1)
    }

    @Test func maxInFlightCapsFetchesAcrossSources() async throws {
        let clock = TestClock()
        let concurrency = Concurrency()
        let sources = (0..<6).map { slowSource("s\($0)", interval: .seconds(1), busy: .milliseconds(20), concurrency: concurrency) }
        let watcher = try await watcher(sources, clock: clock, maxInFlight: 2, maxFetches: 12)
        let running = Task { await watcher.run() }
        let ticker = Task {
            // Time moves once both places are busy on the clock (every source is due at every
            // tick): moved sooner, a fetch could end before the other had begun.
            while !Task.isCancelled {
                try? await clock.waitForSleepers(2)
                clock.advance(by: .seconds(1))
            }
        }
        var fetched = 0
        var limitReached = false
        // The watcher stops by itself at the limit, and its events end with it.
        for await event in watcher.events {
            if case .fetched = event { fetched += 1 }
            if case .fetchLimitReached = event { limitReached = true }
        }
        await running.value
        ticker.cancel()
        #expect(limitReached)
        #expect(fetched == 12)
        #expect(concurrency.highest == 2)
        #expect(await watcher.tallies.values.reduce(0) { $0 + $1.fetches } == 12)
    }

    @Test func aReconfiguredLimitOfFetchesInFlightAppliesToTheFetchesThatFollow() async throws {
        let clock = TestClock()
        let concurrency = Concurrency()
        let sources = (0..<6).map { slowSource("s\($0)", interval: .seconds(1), busy: .milliseconds(20), concurrency: concurrency) }
        let watcher = try await watcher(sources, clock: clock, maxInFlight: 1)
        let running = Task { await watcher.run() }
        // Time moves once every place is busy on the clock (every source is due at every tick):
        // moved sooner, a fetch could end before the next had begun.
        let places = Locked(1)
        let ticker = Task {
            while !Task.isCancelled {
                _ = try? await waitUntil("fetches busy on the clock") { clock.sleeperCount >= places.withLock { $0 } }
                clock.advance(by: .seconds(1))
            }
        }
        try await waitUntil("12 fetches") { concurrency.fetches >= 12 }
        #expect(concurrency.highest == 1)
        places.withLock { $0 = 3 }
        _ = try await watcher.reload(sources, outputs: [], maxInFlight: 3)
        // Every source is due at every tick, so the new limit fills at once.
        try await waitUntil("three fetches at once") { concurrency.highest == 3 }
        let fetchesAtThree = concurrency.fetches
        try await waitUntil("12 more fetches") { concurrency.fetches >= fetchesAtThree + 12 }
        await watcher.stop()
        await running.value
        ticker.cancel()
        #expect(concurrency.highest == 3)
    }

    @Test func schedulesStretchWhenNothingIsNewAndSleepBetweenFetches() async throws {
        let clock = TestClock()
        let quiet = scripted("quiet", every: .seconds(10)) { _ in
            FetchOutput(items: [Item(id: "same", title: "Same")])
        }
        let watcher = try await watcher([quiet], clock: clock, maxFetches: 4)
        let running = Task { await watcher.run() }
        var delays: [Duration?] = []
        var iterator = watcher.events.makeAsyncIterator()
        for fetch in 0..<4 {
            if fetch > 0 {
                // Between fetches the watcher's timer is asleep on the clock, not polling.
                try await clock.waitForSleepers(1)
                clock.advance(by: .seconds(100))
            }
            guard case .fetched(_, let next)? = await iterator.next() else { Issue.record("no event"); return }
            delays.append(next)
        }
        await running.value
        // First fetch: new data (the baseline); then nothing new, so the wait grows ×1.5.
        #expect(delays == [.seconds(10), .seconds(15), .milliseconds(22_500), .milliseconds(33_750)])
    }

    @Test func gracefulShutdownWaitsForFetchesInFlightThenCancelsAfterTheGrace() async throws {
        let clock = TestClock()
        let (stuck, fetching) = stuckSource()
        let watcher = try await watcher([stuck], clock: clock, grace: .seconds(5))
        await testGracefulShutdown { shutdown in
            let running = Task { await watcher.run() }
            for await _ in fetching { break }
            shutdown.triggerGracefulShutdown()
            // The grace runs on the watcher's clock: its sleep is the one to wait for, beside
            // the stuck fetch's own.
            try? await clock.waitForSleepers(2)
            clock.advance(by: .seconds(5))
            await running.value
        }
        var iterator = watcher.events.makeAsyncIterator()
        guard case .fetched(let report, let next)? = await iterator.next() else { Issue.record("no event"); return }
        #expect(report.outcome.failure?.kind == .cancelled)
        #expect(next == nil)
        #expect(await iterator.next() == nil)
    }

    @Test func cancellationCancelsFetchesInFlightAtOnce() async throws {
        let clock = TestClock()
        let (stuck, fetching) = stuckSource()
        let watcher = try await watcher([stuck], clock: clock, grace: .seconds(3600))
        let running = Task { await watcher.run() }
        for await _ in fetching { break }
        running.cancel()
        await running.value
        var iterator = watcher.events.makeAsyncIterator()
        guard case .fetched(let report, _)? = await iterator.next() else { Issue.record("no event"); return }
        #expect(report.outcome.failure?.kind == .cancelled)
    }

    @Test func aRestartedWatchFetchesEachSourceWhenTheStateSaysItIsDue() async throws {
        let clock = TestClock()
        let fresh = scripted("fresh", every: .seconds(600)) { _ in FetchOutput(items: [Item(id: "f", title: "F")]) }
        let recent = scripted("recent", every: .seconds(600)) { _ in FetchOutput(items: [Item(id: "r", title: "R")]) }
        var recorded = SourceState(name: "recent")
        recorded.lastFetch = clock.date
        recorded.nextDue = clock.date.addingTimeInterval(3600)
        recorded.currentInterval = .seconds(900)
        var options = Watcher.Options()
        options.startSpread = .zero
        let watcher = Watcher(sources: [fresh, recent], pipeline: try await pipeline(http: CurlHTTPClient(clock: clock)), options: options, resuming: ["recent": recorded])
        let running = Task { await watcher.run() }
        var iterator = watcher.events.makeAsyncIterator()
        guard case .fetched(let first, _)? = await iterator.next() else { Issue.record("no event"); return }
        #expect(first.name == "fresh")
        // Both wait — "fresh" for its interval, "recent" until its recorded due time — on the
        // watcher's one timer, which sleeps until the sooner of the two.
        try await clock.waitForSleepers(1)
        #expect(await watcher.tallies["recent"] == nil)
        clock.advance(by: .seconds(3601))
        var next = await iterator.next()
        while case .fetched(let report, _)? = next, report.name != "recent" { next = await iterator.next() }
        guard case .fetched(let second, let delay)? = next else { Issue.record("no event"); return }
        #expect(second.name == "recent")
        // Its first fetch is a baseline (new data): back to the interval, whatever was recorded.
        #expect(delay == .seconds(600))
        await watcher.stop()
        await running.value
    }

    /// "Check now": a source an hour from its next fetch is fetched at once, without the clock
    /// moving, and then an interval later as usual — its old due time forgotten.
    @Test func checkNowFetchesASourceAtOnceAndItsScheduleCarriesOn() async throws {
        let clock = TestClock()
        let start = clock.now
        let fetchedAt = Locked<[Duration]>([])
        let hourly = scripted("hourly", every: .seconds(3_600)) { _ in
            fetchedAt.withLock { $0.append(clock.now - start) }
            return FetchOutput(items: [])
        }
        let watcher = try await watcher([hourly], clock: clock)
        let running = Task { await watcher.run() }
        var iterator = watcher.events.makeAsyncIterator()
        guard case .fetched(let first, _)? = await iterator.next() else { Issue.record("no event"); return }
        #expect(first.name == "hourly")
        #expect(try await watcher.checkNow("nope") == .notWatched)
        #expect(try await watcher.checkNow("hourly") == .due)
        guard case .fetched(let second, let next)? = await iterator.next() else { Issue.record("no event"); return }
        #expect(second.name == "hourly")
        // Nothing new: the interval stretched, counted from now.
        let interval = try #require(next)
        #expect(interval > .seconds(3_600))
        // Its entry at the old due time went stale: an hour on, nothing; at the new one, the fetch.
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(3_601))
        try await clock.waitForSleepers(1)
        clock.advance(by: interval - .seconds(3_600))
        guard case .fetched(let third, _)? = await iterator.next() else { Issue.record("no event"); return }
        #expect(third.name == "hourly")
        #expect(fetchedAt.withLock { $0 } == [.zero, .zero, interval + .seconds(1)])
        await watcher.stop()
        await running.value
        #expect(try await watcher.checkNow("hourly") == .stopping)
    }

    @Test func checkNowLeavesAFetchInFlightAlone() async throws {
        let clock = TestClock()
        let (stuck, fetching) = stuckSource()
        let watcher = try await watcher([stuck], clock: clock, grace: .zero)
        let running = Task { await watcher.run() }
        var started = fetching.makeAsyncIterator()
        await started.next()
        #expect(try await watcher.checkNow("stuck") == .inFlight)
        running.cancel()
        await running.value
    }

    @Test func theTimerDoesNotSpinWhenTheFetchLimitIsReachedWithSourcesDue() async throws {
        let clock = TestClock()
        let (stuck, fetching) = stuckSource()
        let other = scripted("other", every: .seconds(1)) { _ in FetchOutput(items: []) }
        let watcher = try await watcher([stuck, other], clock: clock, maxInFlight: 2, maxFetches: 1)
        let running = Task { await watcher.run() }
        for await _ in fetching { break }
        // "other" is due, but no fetch may start: the timer has nothing to wait for.
        clock.advance(by: .seconds(5))
        let before = clock.sleepCalls
        // A spinning timer shows as sleeps piling up while the test gives way, turn after turn;
        // a timer that waits sleeps once and is not woken by time that does not move.
        for _ in 0..<1_000 { await Task.yield() }
        #expect(clock.sleepCalls - before < 10, "the timer woke \(clock.sleepCalls - before) times")
        running.cancel()
        await running.value
    }

    @Test func waitingSourcesShareOneTimerInsteadOfATaskEach() async throws {
        let clock = TestClock()
        let concurrency = Concurrency()
        let sources = (0..<300).map { slowSource("s\($0)", interval: .seconds(60 + $0), busy: .zero, concurrency: concurrency) }
        let watcher = try await watcher(sources, clock: clock, maxInFlight: 16)
        let running = Task { await watcher.run() }
        var iterator = watcher.events.makeAsyncIterator()
        for _ in 0..<300 { _ = await iterator.next() }
        // Every source has been fetched once and waits for its next fetch: one sleeper in all.
        try await clock.waitForSleepers(1)
        #expect(clock.sleeperCount == 1)
        #expect(concurrency.highest <= 16)
        // The soonest source (60 s) is fetched when its time comes, and only it.
        clock.advance(by: .seconds(60))
        guard case .fetched(let report, let next)? = await iterator.next() else { Issue.record("no event"); return }
        #expect(report.name == "s0")
        #expect(next == .seconds(60))
        try await clock.waitForSleepers(1)
        #expect(concurrency.fetches == 301)
        await watcher.stop()
        await running.value
    }

    @Test func reloadStartsAddedStopsRemovedAndRestartsChangedSources() async throws {
        let clock = TestClock()
        func load(_ yaml: String) throws -> [SourceConfig] {
            try ConfigLoader(environment: [:]).load(text: yaml, file: "s.yaml", directory: "/").sources
        }
        let first = try load("sources:\n  - name: a\n    type: traffic\n    interval: 1h\n  - name: b\n    type: traffic\n    interval: 1h\n  - name: c\n    type: traffic\n    interval: 1h\n")
        let watcher = try await watcher(first, clock: clock)
        let running = Task { await watcher.run() }
        // Unchanged text, moved lines: the same source.
        let second = try load("sources:\n\n  - name: a\n    type: traffic\n    interval: 1h\n  - name: b\n    type: traffic\n    interval: 2h\n  - name: d\n    type: random-news\n    interval: 1h\n")
        let change = try await watcher.reload(second)
        #expect(change.added == ["d"])
        #expect(change.removed == ["c"])
        #expect(change.changed == ["b"])
        #expect(try await watcher.reload(second).added.isEmpty)
        // The added source and the restarted one fetch at once.
        var fetched: Set<String> = []
        for await event in watcher.events {
            guard case .fetched(let report, _) = event else { continue }
            fetched.insert(report.name)
            if fetched.isSuperset(of: ["a", "b", "d"]) { break }
        }
        await watcher.stop()
        await running.value
    }
}

@Suite struct WatchConfigTests {
    @Test func maxIntervalShorterThanIntervalIsAnError() {
        do {
            _ = try ConfigLoader(environment: [:]).load(text: "sources:\n  - name: a\n    type: traffic\n    interval: 10m\n    max_interval: 5m\n", file: "s.yaml", directory: "/")
            Issue.record("loaded")
        } catch {
            #expect(error.diagnostics.map(\.description) == ["s.yaml:5:19: source 'a': 'max_interval' (5m) is shorter than 'interval' (10m)"])
        }
    }

    @Test func watchSettingsLoad() throws {
        let config = try ConfigLoader(environment: [:]).load(text: "max_in_flight: 8\ndefaults:\n  max_backoff: 10m\nsources:\n  - name: a\n    type: traffic\n    interval: 1m\n    max_interval: 3m\n", file: "s.yaml", directory: "/")
        #expect(config.maxInFlight == 8)
        #expect(config.sources[0].settings.maxInterval == .seconds(180))
        #expect(config.sources[0].settings.maxBackoff == .seconds(600))
    }
}

@Suite struct DueQueueTests {
    @Test func entriesComeOutByDueTimeAndInOrderOfArrivalWhenDueTogether() {
        var queue = DueQueue<Int, String>()
        let entries = [(5, "e"), (1, "a"), (3, "c1"), (3, "c2"), (9, "z"), (3, "c3"), (0, "first")]
        for (due, name) in entries { queue.insert(name, due: due) }
        var order: [String] = []
        while let entry = queue.removeFirst() { order.append(entry.element) }
        #expect(order == ["first", "a", "c1", "c2", "c3", "e", "z"])
    }

    @Test func staleEntriesAreDroppedFromTheFront() {
        var queue = DueQueue<Int, String>()
        queue.insert("old", due: 1)
        queue.insert("kept", due: 2)
        queue.removeFirst(while: { $0.element == "old" })
        #expect(queue.first?.element == "kept")
        #expect(queue.count == 1)
    }

    @Test func manyRandomEntriesComeOutSorted() {
        var queue = DueQueue<Int, String>()
        var generator = SystemRandomNumberGenerator()
        let dues = (0..<2_000).map { _ in Int.random(in: 0..<500, using: &generator) }
        for (index, due) in dues.enumerated() { queue.insert("\(index)", due: due) }
        var previous: (due: Int, index: Int)?
        while let entry = queue.removeFirst() {
            let index = Int(entry.element)!
            if let previous { #expect(previous.due < entry.due || (previous.due == entry.due && previous.index < index)) }
            previous = (entry.due, index)
        }
    }
}
