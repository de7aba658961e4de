import Synchronization
import Testing
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
        let gate = Gate()
        let shared = SharedCall(limit: .milliseconds(300), askAnewAfter: .seconds(60)) { try await gate.call() }
        let start = ContinuousClock.now
        await #expect(throws: NoAnswer.self) { try await shared.value() }
        let firstWait = ContinuousClock.now - start
        #expect(firstWait >= .milliseconds(300))
        // Bounded, not timed: only a wait for the call itself would take this long.
        #expect(firstWait < .seconds(20))
        // The call is still waiting: the next caller is told at once, and no second call is made.
        let again = ContinuousClock.now
        do {
            _ = try await shared.value()
            Issue.record("a call that has not answered answered")
        } catch let error as NoAnswer {
            #expect(error.waited >= .milliseconds(300))
            #expect(ContinuousClock.now - again < .seconds(20))
        }
        #expect(gate.made == 1)
        // Once it answers, the next caller starts a new call and gets its answer.
        gate.open(1)
        while await shared.isCalling { try await Task.sleep(for: .milliseconds(10)) }
        gate.open(2)
        #expect(try await shared.value() == 2)
        #expect(gate.made == 2)
    }

    @Test func aCallThatNeverEndsIsGivenUpForANewOneOnceItIsOldEnough() async throws {
        let stuck = Gate()
        let made = Atomic(0)
        let shared = SharedCall(limit: .milliseconds(100), askAnewAfter: .milliseconds(300)) {
            // The first call is lost (a connection the store never answers on); later ones answer.
            if made.add(1, ordering: .relaxed).oldValue == 0 { return try await stuck.call() }
            return 5
        }
        await #expect(throws: NoAnswer.self) { try await shared.value() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await shared.value() == 5)
        #expect(made.load(ordering: .relaxed) == 2)
        // The lost call's late end changes nothing for the one after it.
        stuck.open(1)
        try await Task.sleep(for: .milliseconds(50))
        #expect(try await shared.value() == 5)
    }

    @Test func callersAtOnceShareOneCallAndItsAnswer() async throws {
        let gate = Gate()
        let shared = SharedCall(limit: .seconds(60), askAnewAfter: .seconds(60)) { try await gate.call() }
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 { group.addTask { try await shared.value() } }
            // Every caller waiting on the one call before it answers.
            while await shared.waiting < 5 { try await Task.sleep(for: .milliseconds(10)) }
            gate.open(7)
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == [7, 7, 7, 7, 7])
        #expect(gate.made == 1)
    }

    @Test func aCancelledCallerStopsWaitingAndTheOthersStillGetTheAnswer() async throws {
        let gate = Gate()
        let shared = SharedCall(limit: .seconds(60), askAnewAfter: .seconds(60)) { try await gate.call() }
        let cancelled = Task { try await shared.value() }
        let patient = Task { try await shared.value() }
        while await shared.waiting < 2 { try await Task.sleep(for: .milliseconds(10)) }
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
