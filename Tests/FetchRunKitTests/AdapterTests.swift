import Foundation
import Testing
@testable import FetchRunKit

let sharedHTTPClient = CurlHTTPClient.started()

func loadAdapter(_ yaml: String) throws -> any SourceAdapter {
    try ConfigLoader(environment: [:]).load(text: "sources:\n  - name: s\n" + yaml, file: "t.yaml", directory: "/").sources[0].adapter
}

func context(previous: Snapshot?) -> FetchContext {
    FetchContext(sourceName: "s", previous: previous, deadline: .now + .seconds(5), http: sharedHTTPClient, logger: .init(label: "test"))
}

/// Fetches `count` times, carrying the snapshot forward as the runner would.
func fetchRepeatedly(_ adapter: any SourceAdapter, count: Int, type: String) async throws -> [FetchOutput] {
    var previous: Snapshot?
    var outputs: [FetchOutput] = []
    for _ in 0..<count {
        let output = try await adapter.fetch(context(previous: previous))
        let merge = SnapshotMerge(previous: previous?.items ?? [], seen: previous?.seen, fetched: output.items, keep: 1000, at: Date())
        previous = Snapshot(source: "s", type: type, updatedAt: Date(), items: merge.items, adapterState: output.adapterState)
        previous?.seen = merge.seen
        outputs.append(output)
    }
    return outputs
}

@Suite struct TrafficAdapterTests {
    @Test func createsBetweenMinAndMaxUpdatesWithUniqueIDs() async throws {
        let adapter = try loadAdapter("    type: traffic\n    min: 1\n    max: 3\n")
        let outputs = try await fetchRepeatedly(adapter, count: 50, type: "traffic")
        #expect(outputs.allSatisfy { (1...3).contains($0.items.count) })
        let ids = outputs.flatMap(\.items).map(\.id)
        #expect(Set(ids).count == ids.count)
        // Over 50 fetches every count in the range turns up.
        #expect(Set(outputs.map(\.items.count)) == [1, 2, 3])
    }

    @Test func defaultRangeIsTheDemosZeroToTwo() throws {
        let adapter = try #require(try loadAdapter("    type: traffic\n") as? TrafficAdapter)
        #expect(adapter.updatesPerFetch == 0...2)
    }

    @Test func updatesDescribeARoadStatus() async throws {
        let adapter = try loadAdapter("    type: traffic\n    min: 5\n    max: 5\n")
        let items = try await adapter.fetch(context(previous: nil)).items
        for update in items {
            #expect(TrafficStatus.Condition(rawValue: update.extra["status"] ?? "") != nil)
            #expect(update.extra["road"] != nil && update.extra["direction"] != nil && update.extra["severity"] != nil)
            #expect(update.title.hasPrefix(update.extra["road"]!))
            #expect(update.published != nil)
        }
    }

    @Test func seedGivesAReproducibleSequenceAcrossRuns() async throws {
        let yaml = "    type: traffic\n    min: 0\n    max: 4\n    seed: 42\n"
        let first = try await fetchRepeatedly(try loadAdapter(yaml), count: 10, type: "traffic")
        let second = try await fetchRepeatedly(try loadAdapter(yaml), count: 10, type: "traffic")
        #expect(first.map { $0.items.map(\.title) } == second.map { $0.items.map(\.title) })
        let other = try await fetchRepeatedly(try loadAdapter(yaml.replacingOccurrences(of: "42", with: "43")), count: 10, type: "traffic")
        #expect(first.map { $0.items.map(\.title) } != other.map { $0.items.map(\.title) })
    }

    @Test func latencyIsCancelledAtTheDeadline() async throws {
        let adapter = try loadAdapter("    type: traffic\n    latency: 120s\n")
        let start = ContinuousClock.now
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.now + .milliseconds(100)) { try await adapter.fetch(context(previous: nil)) }
        }
        // Far from the latency it would otherwise wait out; loose, for a machine under the
        // load of the whole suite (every test starts at once).
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    /// An operation's own error after the deadline (curl's time-out beating the timer on a busy
    /// machine) is the deadline, whichever child of withDeadline finishes first.
    @Test func anErrorAfterTheDeadlineIsTheDeadline() async throws {
        struct OwnTimeout: Error {}
        for _ in 0..<50 {
            await #expect(throws: DeadlineExceeded.self) {
                try await withDeadline(.now - .milliseconds(1)) { throw OwnTimeout() }
            }
        }
        struct Early: Error {}
        await #expect(throws: Early.self) {
            try await withDeadline(.now + .seconds(10)) { throw Early() }
        }
    }
}

@Suite struct RandomNewsAdapterTests {
    @Test func firstFetchYieldsNewsTextOne() async throws {
        let adapter = try loadAdapter("    type: random-news\n    probability: 0\n")
        let output = try await adapter.fetch(context(previous: nil))
        #expect(output.items.map(\.title) == ["News text 1"])
    }

    @Test func headsAddsTheNextNumberTailsAddsNothing() async throws {
        let always = try await fetchRepeatedly(try loadAdapter("    type: random-news\n    probability: 1\n"), count: 4, type: "random-news")
        #expect(always.map { $0.items.map(\.title) } == [["News text 1"], ["News text 2"], ["News text 3"], ["News text 4"]])
        let never = try await fetchRepeatedly(try loadAdapter("    type: random-news\n    probability: 0\n"), count: 4, type: "random-news")
        #expect(never.map(\.items.count) == [1, 0, 0, 0])
    }

    @Test func numberingContinuesFromASnapshotWithoutState() async throws {
        let adapter = try loadAdapter("    type: random-news\n    probability: 1\n")
        let previous = Snapshot(source: "s", type: "random-news", updatedAt: Date(), items: [RandomNewsAdapter.story(number: 7, at: Date())])
        #expect(try await adapter.fetch(context(previous: previous)).items.map(\.title) == ["News text 8"])
    }

    @Test func coinFollowsTheProbability() async throws {
        let outputs = try await fetchRepeatedly(try loadAdapter("    type: random-news\n    seed: 7\n"), count: 401, type: "random-news")
        let heads = outputs.dropFirst().filter { !$0.items.isEmpty }.count
        #expect((120...280).contains(heads), "heads \(heads) of 400")
    }
}

@Suite struct SimulatedLatencyTests {
    @Test func parsesFixedAndRange() throws {
        #expect(try SimulatedLatency(parsing: "2s").range == .seconds(2) ... .seconds(2))
        #expect(try SimulatedLatency(parsing: "50ms..2s").range == .milliseconds(50) ... .seconds(2))
        #expect(throws: (any Error).self) { try SimulatedLatency(parsing: "2s..1s") }
        #expect(throws: (any Error).self) { try SimulatedLatency(parsing: "1s..2s..3s") }
    }

    @Test func drawsWithinTheRange() throws {
        let latency = try SimulatedLatency(parsing: "50ms..2s")
        var random = SplitMix64(state: 1)
        for _ in 0..<100 {
            #expect(latency.range.contains(latency.draw(using: &random)))
        }
    }
}
