import FixtureServer
import Foundation
import Testing
import TestSupport

/// PostgreSQL state that cannot be used fails within the connect timeout, in one line that
/// says why as PostgreSQL said it, never with the URL's password, and exits 73.
@Suite(.serialized) struct PostgresErrorTests {
    /// A server of its own that asks for a password over TCP and offers no TLS; stopped when
    /// the test process exits.
    static let server: Result<PostgresServer, any Error> = {
        let started = Result { try PostgresServer(password: "right-password") }
        if case .success = started { atexit { try? PostgresErrorTests.server.get().stop() } }
        return started
    }()

    func status(_ url: String) async throws -> FetchRunBinary.Result {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("sources:\n  - { name: t, type: traffic }\n", to: "sources.yaml")
        return try await fetchrun.run(["status", "--state", url], timeout: .seconds(60))
    }

    func expectFailure(_ url: String, says reason: String, within limit: Duration = .seconds(8), sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await status(url)
        #expect(result.status == 73, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(reason), "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("wrong-password") && !result.stderr.contains("right-password"), sourceLocation: sourceLocation)
        #expect(result.duration < limit, "took \(result.duration)", sourceLocation: sourceLocation)
    }

    @Test func aWrongPasswordSaysAuthenticationFailed() async throws {
        let port = try #require(try Self.server.get().tcpPort)
        try await expectFailure("postgres://fetchrun:wrong-password@127.0.0.1:\(port)/postgres?sslmode=disable", says: "password authentication failed for user \"fetchrun\"")
        // The right one works, so the failure above was the password's.
        let ok = try await status("postgres://fetchrun:right-password@127.0.0.1:\(port)/postgres?sslmode=disable")
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    @Test func aDatabaseThatDoesNotExistSaysSo() async throws {
        let port = try #require(try Self.server.get().tcpPort)
        try await expectFailure("postgres://fetchrun:right-password@127.0.0.1:\(port)/no_such_db?sslmode=disable", says: "database \"no_such_db\" does not exist")
    }

    @Test func aServerWithoutTLSWhenTheURLRequiresItSaysSo() async throws {
        let port = try #require(try Self.server.get().tcpPort)
        try await expectFailure("postgres://fetchrun:right-password@127.0.0.1:\(port)/postgres?sslmode=require", says: "the server does not offer TLS, and sslmode=require asks for it")
    }

    @Test func aPortWhereNothingListensFailsAtOnce() async throws {
        let port = try PostgresServer.freePort()
        try await expectFailure("postgres://fetchrun:wrong-password@127.0.0.1:\(port)/postgres", says: "cannot connect", within: .seconds(5))
    }

    @Test func aHostThatDoesNotAnswerFailsAtTheConnectTimeout() async throws {
        // Accepts the connection and never answers (it waits for an HTTP request's end).
        let silent = try FixtureServer()
        try await expectFailure("postgres://fetchrun:wrong-password@127.0.0.1:\(silent.port)/postgres?connect_timeout=1", says: "no answer within the connect timeout (1 s", within: .seconds(6))
        try await expectFailure("postgres://fetchrun@127.0.0.1:\(silent.port)/postgres?connect_timeout=0", says: "connect_timeout=0 is not a number of seconds from 1 to 3600")
    }
}
