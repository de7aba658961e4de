import Foundation
import Synchronization
import Testing
@testable import FetchRunKit

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
    private let state = Mutex(State())

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
    func scripted(_ name: String, every interval: Duration, _ behaviour: @escaping @Sendable (FetchContext) async throws -> FetchOutput) -> SourceConfig {
        SourceConfig(name: name, adapter: ScriptedAdapter(behaviour), settings: SourceSettings(interval: .every(interval)), type: "scripted")
    }

    /// A source whose fetch takes `busy` of real time and yields a new item each time.
    func slowSource(_ name: String, interval: Duration, busy: Duration, concurrency: Concurrency) -> SourceConfig {
        let counter = Mutex(0)
        return scripted(name, every: interval) { _ in
            concurrency.enter(name)
            defer { concurrency.leave(name) }
            try await Task.sleep(for: busy)
            let number = counter.withLock { value -> Int in
                value += 1
                return value
            }
            return FetchOutput(items: [Item(id: "\(name)-\(number)", title: "\(number)")])
        }
    }

    func watcher(clock: ManualClock, maxInFlight: Int = 64, maxFetches: Int? = nil) throws -> (Watcher<ManualClock>, AsyncStream<WatchEvent>) {
        let (events, sink) = AsyncStream<WatchEvent>.makeStream()
        var options = Watcher<ManualClock>.Options()
        options.maxInFlight = maxInFlight
        options.maxFetches = maxFetches
        options.startSpread = .zero
        let runner = FetchRunner(store: try temporaryStateDirectory().snapshots)
        return (Watcher(runner: runner, clock: clock, options: options, events: sink, jitter: { 0 }), events)
    }

    @Test func fetchesOfOneSourceNeverOverlap() async throws {
        let clock = ManualClock()
        let concurrency = Concurrency()
        let (watcher, _) = try watcher(clock: clock)
        await watcher.start([slowSource("s", interval: .seconds(1), busy: .milliseconds(30), concurrency: concurrency)])
        // Time runs far ahead of the fetch: ten intervals pass while one fetch is still busy.
        for _ in 0..<40 {
            clock.advance(by: .seconds(10))
            try await Task.sleep(for: .milliseconds(5))
        }
        await watcher.stop(grace: .seconds(5))
        #expect(concurrency.fetches >= 2)
        #expect(concurrency.highestPerSource == 1)
    }

    @Test func maxInFlightCapsFetchesAcrossSources() async throws {
        let clock = ManualClock()
        let concurrency = Concurrency()
        let (watcher, events) = try watcher(clock: clock, maxInFlight: 2, maxFetches: 12)
        let sources = (0..<6).map { slowSource("s\($0)", interval: .seconds(1), busy: .milliseconds(20), concurrency: concurrency) }
        await watcher.start(sources)
        let ticker = Task {
            while !Task.isCancelled {
                clock.advance(by: .seconds(1))
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        var fetched = 0
        for await event in events {
            if case .fetched = event { fetched += 1 }
            if case .fetchLimitReached = event { break }
        }
        ticker.cancel()
        await watcher.stop(grace: .seconds(5))
        #expect(fetched == 12)
        #expect(concurrency.highest == 2)
        #expect(await watcher.tallies.values.reduce(0) { $0 + $1.fetches } == 12)
    }

    @Test func schedulesStretchWhenNothingIsNewAndSleepBetweenFetches() async throws {
        let clock = ManualClock()
        let (watcher, events) = try watcher(clock: clock, maxFetches: 4)
        let quiet = scripted("quiet", every: .seconds(10)) { _ in
            FetchOutput(items: [Item(id: "same", title: "Same")])
        }
        await watcher.start([quiet])
        var delays: [Duration?] = []
        var iterator = events.makeAsyncIterator()
        for fetch in 0..<4 {
            if fetch > 0 {
                // Between fetches the source's task is asleep on the clock, not polling.
                try await clock.waitForSleepers(1)
                clock.advance(by: .seconds(100))
            }
            guard case .fetched(_, let next)? = await iterator.next() else { Issue.record("no event"); return }
            delays.append(next)
        }
        await watcher.stop(grace: .seconds(1))
        // First fetch: new data (the baseline); then nothing new, so the wait grows ×1.5.
        #expect(delays == [.seconds(10), .seconds(15), .milliseconds(22_500), .milliseconds(33_750)])
    }

    @Test func stopWaitsForFetchesInFlightThenCancelsAfterTheGrace() async throws {
        let clock = ManualClock()
        let (watcher, events) = try watcher(clock: clock)
        let stuck = scripted("stuck", every: .seconds(1)) { _ in
            try await Task.sleep(for: .seconds(3600))
            return FetchOutput(items: [])
        }
        await watcher.start([stuck])
        try await Task.sleep(for: .milliseconds(50))
        let stopping = Task { await watcher.stop(grace: .seconds(5)) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        await stopping.value
        var iterator = events.makeAsyncIterator()
        guard case .fetched(let report, let next)? = await iterator.next() else { Issue.record("no event"); return }
        #expect(report.outcome.failure?.kind == .cancelled)
        #expect(next == nil)
    }

    @Test func reloadStartsAddedStopsRemovedAndRestartsChangedSources() async throws {
        let clock = ManualClock()
        let (watcher, _) = try watcher(clock: clock)
        func load(_ yaml: String) throws -> [SourceConfig] {
            try ConfigLoader(environment: [:]).load(text: yaml, file: "s.yaml", directory: "/").sources
        }
        let first = try load("sources:\n  - name: a\n    type: traffic\n    interval: 1h\n  - name: b\n    type: traffic\n    interval: 1h\n  - name: c\n    type: traffic\n    interval: 1h\n")
        await watcher.start(first)
        // Unchanged text, moved lines: the same source.
        let second = try load("sources:\n\n  - name: a\n    type: traffic\n    interval: 1h\n  - name: b\n    type: traffic\n    interval: 2h\n  - name: d\n    type: random-news\n    interval: 1h\n")
        let change = await watcher.reload(second)
        #expect(change.added == ["d"])
        #expect(change.removed == ["c"])
        #expect(change.changed == ["b"])
        #expect(await watcher.reload(second).added.isEmpty)
        await watcher.stop(grace: .seconds(1))
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
