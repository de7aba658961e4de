import Foundation
import Logging
import ServiceLifecycle
import Testing
@testable import FetchRunKit

/// A service whose work is done while the group is stopping another one: `ServiceGroup` calls
/// that a failure, and a command would print it after a clean end.
@Suite struct ServiceTurnTests {
    /// Ends on its own once told it may, and says when it has.
    struct EndsOnItsOwn: Service {
        let mayEnd: AsyncStream<Void>
        let ended: AsyncStream<Void>.Continuation

        func run() async {
            for await _ in mayEnd { break }
            ended.yield()
        }
    }

    /// Asked to stop, lets the other service end first, then takes a moment more.
    struct SlowToStop: Service {
        let mayEnd: AsyncStream<Void>.Continuation
        let ended: AsyncStream<Void>

        func run() async {
            try? await gracefulShutdown()
            mayEnd.yield()
            for await _ in ended { break }
            // The service under test: slow to stop, in real time, as a service group sees it.
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Two services in a group, the one that ends on its own first; the group is asked to
    /// stop at once, so it stops the second (the last) first and waits for it.
    func stop(wrappingTheFirst wrap: Bool) async throws {
        let (mayEnd, mayEndSink) = AsyncStream<Void>.makeStream()
        let (ended, endedSink) = AsyncStream<Void>.makeStream()
        let first: any Service = EndsOnItsOwn(mayEnd: mayEnd, ended: endedSink)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [
            .init(service: wrap ? EndingInItsTurn(first) : first, successTerminationBehavior: .ignore),
            .init(service: SlowToStop(mayEnd: mayEndSink, ended: ended), successTerminationBehavior: .ignore),
        ], logger: Logger(label: "test")))
        await group.triggerGracefulShutdown()
        try await group.run()
    }

    @Test func aServiceDoneWhileAnotherIsStoppingEndsCleanlyInItsTurn() async throws {
        // Unwrapped, the group reports the early end as a failure: what the wrapper is for.
        await #expect(throws: ServiceGroupError.self) { try await stop(wrappingTheFirst: false) }
        try await stop(wrappingTheFirst: true)
    }

    @Test func aWrappedServiceIsNamedInTheGroupsLogsByTheServiceItRuns() {
        struct Idle: Service { func run() async throws {} }
        // What the group logs the service as: its interpolation, without reflecting on it.
        #expect("\(EndingInItsTurn(Idle()))" == "Idle")
        #expect("\(EndingInItsTurn(CurlHTTPClient()))" == "CurlHTTPClient")
    }

    @Test func aWrappedServiceThatThrowsStillThrowsAtOnce() async throws {
        struct Broken: Error {}
        struct Throws: Service { func run() async throws { throw Broken() } }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: EndingInItsTurn(Throws()))], logger: Logger(label: "test")))
        await #expect(throws: Broken.self) { try await group.run() }
    }
}
