import Synchronization
import Testing
@testable import FetchRunKit

/// How ``GroupCommit`` cuts writes into batches: small after a pause, doubling while writes
/// keep coming, never past its largest; every write answered with its own outcome.
@Suite struct GroupCommitTests {
    /// A batch writer that records each batch's writes and holds the batches at `held` (by
    /// index) until ``open()`` is called once for each, so that the writes asked for meanwhile
    /// queue up behind them.
    final class GatedWriter: Sendable {
        private let held: [Int]
        private let state = Mutex<(batches: [[Int]], gate: CheckedContinuation<Void, Never>?, opened: Int)>(([], nil, 0))

        init(holding held: [Int]) {
            self.held = held.sorted()
        }

        var batches: [[Int]] { state.withLock { $0.batches } }

        func write(_ batch: [Int]) async -> [Int] {
            let index = state.withLock { state in
                state.batches.append(batch)
                return state.batches.count - 1
            }
            if let order = held.firstIndex(of: index) {
                await withCheckedContinuation { continuation in
                    let openAlready = state.withLock { state -> Bool in
                        if state.opened > order { return true }
                        state.gate = continuation
                        return false
                    }
                    if openAlready { continuation.resume() }
                }
            }
            return batch.map { $0 * 10 }
        }

        func open() {
            let gate = state.withLock { state in
                state.opened += 1
                defer { state.gate = nil }
                return state.gate
            }
            gate?.resume()
        }

        /// Waits until `count` batches have started.
        func started(_ count: Int) async {
            while state.withLock({ $0.batches.count < count }) { await Task.yield() }
        }
    }

    /// Writes `first`, and once its batch (number `batch`, counting from 0) is being written,
    /// `values` at once, each from its own task; returns every write's outcome.
    func burst(_ commit: GroupCommit<Int, Int>, writer: GatedWriter, first: Int, inBatch batch: Int, then values: Range<Int>) async throws -> [Int: Int] {
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            group.addTask { (first, try await commit.write(first) { await writer.write($0) }) }
            await writer.started(batch + 1)
            for value in values { group.addTask { (value, try await commit.write(value) { await writer.write($0) }) } }
            // Every write of the burst is queued before the held batch ends.
            while await commit.queuedCount < values.count { await Task.yield() }
            writer.open()
            var outcomes: [Int: Int] = [:]
            for try await (value, outcome) in group { outcomes[value] = outcome }
            return outcomes
        }
    }

    @Test func batchesStartSmallAndDoubleUpToTheLargest() async throws {
        let writer = GatedWriter(holding: [0])
        let commit = GroupCommit<Int, Int>(firstBatch: 4, maxBatch: 16)
        let outcomes = try await burst(commit, writer: writer, first: 0, inBatch: 0, then: 1..<41)
        // The first batch held the one write waiting; the next ones may hold 8, then 16, then 16.
        #expect(writer.batches.map(\.count) == [1, 8, 16, 16])
        // Each write once (the tasks that asked reach the queue in no set order).
        #expect(writer.batches.flatMap { $0 }.sorted() == Array(0..<41))
        #expect(outcomes == Dictionary(uniqueKeysWithValues: (0..<41).map { ($0, $0 * 10) }))
    }

    @Test func aBurstAfterThePauseStartsSmallAgain() async throws {
        let writer = GatedWriter(holding: [0, 4])
        let commit = GroupCommit<Int, Int>(firstBatch: 4, maxBatch: 16)
        _ = try await burst(commit, writer: writer, first: 0, inBatch: 0, then: 1..<41)
        // The queue was empty in between: the same burst again is cut the same way, not in
        // batches of 16 from the start.
        let outcomes = try await burst(commit, writer: writer, first: 100, inBatch: 4, then: 101..<141)
        #expect(writer.batches.map(\.count) == [1, 8, 16, 16, 1, 8, 16, 16])
        #expect(outcomes == Dictionary(uniqueKeysWithValues: (100..<141).map { ($0, $0 * 10) }))
    }

    @Test func aFirstBatchLargerThanTheLargestIsTheLargest() async throws {
        let writer = GatedWriter(holding: [0])
        let commit = GroupCommit<Int, Int>(firstBatch: 64, maxBatch: 8)
        _ = try await burst(commit, writer: writer, first: 0, inBatch: 0, then: 1..<20)
        #expect(writer.batches.map(\.count) == [1, 8, 8, 3])
    }
}
