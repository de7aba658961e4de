import Foundation
import Testing
import TestSupport
import FixtureServer
@testable import FetchRunKit

/// The fixture servers are shared by every test in one process: stopping one must never touch
/// a socket that another test opened meanwhile.
@Suite struct FixtureServerTests {
    /// A server's connections close (their clients leave) while it stops, and other sockets are
    /// opened at the same moment. Descriptor numbers freed by the closing connections are reused
    /// at once; a stop that shut down the numbers it had listed would end those sockets — in the
    /// suite, another test's server, whose every request was then refused.
    @Test func stoppingAServerLeavesSocketsOpenedMeanwhileAlone() async throws {
        for _ in 0..<20 {
            let server = try FixtureServer()
            let clients = try (0..<64).map { _ in try Self.connectAndAsk(port: server.port) }
            try await waitUntil("every client's request", timeout: .seconds(10)) { server.requests.count >= clients.count }
            try #require(server.requests.count == clients.count)

            let others = Locked<[Int32]>([])
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            func concurrently(_ work: @escaping @Sendable () -> Void) {
                done.enter()
                Thread {
                    start.wait()
                    work()
                    done.leave()
                }.start()
            }
            concurrently { for client in clients { close(client) } }
            concurrently { server.stop() }
            concurrently {
                for _ in 0..<64 {
                    let socket = Self.listeningSocket()
                    others.withLock { $0.append(socket) }
                }
            }
            for _ in 0..<3 { start.signal() }
            done.wait()

            for socket in others.withLock({ $0 }) {
                #expect(Self.isListening(socket), "socket \(socket) was shut down by another server's stop")
                close(socket)
            }
        }
    }

    struct ConnectError: Error { var code: Int32 }

    /// A connected socket that has sent one keep-alive request.
    static func connectAndAsk(port: UInt16) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(socket)
            throw ConnectError(code: errno)
        }
        let request = Array("GET /status/204 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return socket
    }

    static func listeningSocket() -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        listen(socket, 16)
        return socket
    }

    static func isListening(_ socket: Int32) -> Bool {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(socket, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) == 0 && value == 1
    }
}
