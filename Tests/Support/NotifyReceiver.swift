import Foundation

/// A socket where systemd would listen for `sd_notify` datagrams: a test names its `path` in
/// `NOTIFY_SOCKET` and reads back what a service sent, in order.
///
/// The kernel queues only `net.unix.max_dgram_qlen` datagrams unread (10 by default), and a
/// non-blocking sender's further ones are dropped: a test reads before more than that are sent.
public final class NotifyReceiver: Sendable {
    public let path: String
    private let descriptor: Int32

    public struct SocketError: Error, CustomStringConvertible {
        public var description: String
    }

    /// A datagram socket bound to a fresh path in the temporary folder.
    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8))").path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(descriptor)
            throw SocketError(description: "\(path): too long for a socket's path")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw SocketError(description: "bind \(path): \(reason)")
        }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Every datagram that has come, oldest first: reads until none comes within `quiet`.
    public func messages(quiet: Duration = .milliseconds(200)) -> [String] {
        let microseconds = quiet.components.seconds * 1_000_000 + quiet.components.attoseconds / 1_000_000_000_000
        var timeout = timeval(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            messages.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
        return messages
    }

    /// The first line of each message: `READY=1`, `WATCHDOG=1`, `STOPPING=1`…
    public static func kinds(_ messages: [String]) -> [String] {
        messages.map { $0.split(separator: "\n").first.map(String.init) ?? "" }
    }
}
