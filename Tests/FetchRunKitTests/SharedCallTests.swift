import Synchronization
import Testing
import TestSupport
@testable import FetchRunMonitor

/// The endpoint's store calls (``SharedCall``): one in flight, each caller's wait bounded, a
/// call that never answers left to itself.
@Suite struct SharedCallTests {
    /// A store call that waits until the test lets it answer, counting how often it is made.
    final class Gate: Sendable {
        let opens: AsyncStream<Int>
        private let opener: AsyncStream<Int>.Continuation
        private let calls = Atomic(0)

        init() {
            (opens, opener) = AsyncStream.makeStream(of: Int.self)
        }

        var made: Int { calls.load(ordering: .relaxed) }

        /// Lets one waiting call answer `value`.
        func open(_ value: Int) {
            opener.yield(value)
        }

        func call() async throws -> Int {
            calls.add(1, ordering: .relaxed)
            // Cancellation cannot end it, as a query already sent to a frozen server cannot be.
            for await value in opens { return value }
            throw CancellationError()
        }
    }

    @Test func aCallThatDoesNotAnswerCostsEachCallerTheLimitAtMostAndIsNotMadeAgain() async throws {
        let gate = Gate(), clock = TestClock()
        let shared = SharedCall(limit: .milliseconds(300), askAnewAfter: .seconds(60), clock: clock) { try await gate.call() }
        let first = Task { try await shared.value() }
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(299))
        #expect(await shared.waiting == 1)
        clock.advance(by: .milliseconds(1))
        await #expect(throws: NoAnswer.self) { try await first.value }
        // The call is still waiting: the next caller is told at once, and no second call is made.
        do {
            _ = try await shared.value()
            Issue.record("a call that has not answered answered")
        } catch let error as NoAnswer {
            #expect(error.waited == .milliseconds(300))
        }
        #expect(gate.made == 1)
        // Once it answers, the next caller starts a new call and gets its answer.
        gate.open(1)
        try await waitUntil("the first call's end") { await !shared.isCalling }
        gate.open(2)
        #expect(try await shared.value() == 2)
        #expect(gate.made == 2)
    }

    @Test func aCallThatNeverEndsIsGivenUpForANewOneOnceItIsOldEnough() async throws {
        let stuck = Gate(), clock = TestClock()
        let made = Atomic(0)
        let shared = SharedCall(limit: .milliseconds(100), askAnewAfter: .milliseconds(300), clock: clock) {
            // The first call is lost (a connection the store never answers on); later ones answer.
            if made.add(1, ordering: .relaxed).oldValue == 0 { return try await stuck.call() }
            return 5
        }
        let first = Task { try await shared.value() }
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(100))
        await #expect(throws: NoAnswer.self) { try await first.value }
        // Not yet old enough to be given up: still no answer, and no second call.
        clock.advance(by: .milliseconds(199))
        await #expect(throws: NoAnswer.self) { try await shared.value() }
        clock.advance(by: .milliseconds(1))
        #expect(try await shared.value() == 5)
        #expect(made.load(ordering: .relaxed) == 2)
        // The lost call's late end changes nothing for the one after it.
        stuck.open(1)
        try await waitUntil("the lost call's end") { await !shared.isCalling }
        #expect(try await shared.value() == 5)
    }

    @Test func callersAtOnceShareOneCallAndItsAnswer() async throws {
        let gate = Gate()
        let shared = SharedCall(limit: .seconds(60), askAnewAfter: .seconds(60), clock: TestClock()) { try await gate.call() }
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 { group.addTask { try await shared.value() } }
            // Every caller waiting on the one call before it answers.
            try await waitUntil("five callers waiting") { await shared.waiting == 5 }
            gate.open(7)
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == [7, 7, 7, 7, 7])
        #expect(gate.made == 1)
    }

    @Test func aCancelledCallerStopsWaitingAndTheOthersStillGetTheAnswer() async throws {
        let gate = Gate()
        let shared = SharedCall(limit: .seconds(60), askAnewAfter: .seconds(60), clock: TestClock()) { try await gate.call() }
        let cancelled = Task { try await shared.value() }
        let patient = Task { try await shared.value() }
        try await waitUntil("two callers waiting") { await shared.waiting == 2 }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        gate.open(3)
        #expect(try await patient.value == 3)
        #expect(gate.made == 1)
    }

    @Test func aCallThatThrowsGivesItsErrorToItsCallers() async throws {
        struct Refused: Error {}
        let shared = SharedCall<Int>(limit: .seconds(60), askAnewAfter: .seconds(60)) { throw Refused() }
        await #expect(throws: Refused.self) { try await shared.value() }
        await #expect(throws: Refused.self) { try await shared.value() }
    }
}
