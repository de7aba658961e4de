import Foundation

/// systemd's notify protocol: a few `KEY=value` lines in one datagram to the socket named by
/// `NOTIFY_SOCKET` (`READY=1`, `STATUS=…`, `RELOADING=1`, `STOPPING=1`, `WATCHDOG=1`).
///
/// Sending never blocks or fails the caller: systemd not listening is not fetchrun's problem,
/// and a full socket buffer drops one status line, which the next one replaces.
package struct SystemdNotifier: Sendable {
    private let path: String
    /// Half of `WATCHDOG_USEC`, when systemd's watchdog watches this process: how often
    /// `WATCHDOG=1` must come.
    package let watchdogInterval: Duration?

    /// From the environment; `nil` when `NOTIFY_SOCKET` is not set (or not a path this can use).
    package init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@"), path.utf8.count < 108 else { return nil }
        self.path = path
        // The watchdog is this process's only when WATCHDOG_PID, if set, names it.
        let forThisProcess = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
        if forThisProcess, let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 {
            watchdogInterval = .microseconds(microseconds / 2)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `state` (lines of `KEY=value`) in one datagram.
    package func send(_ state: String) {
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(path.utf8)
        // An abstract socket (`@name`) starts with a NUL byte instead of the `@`.
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in pathBytes.enumerated() where index < buffer.count { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        let bytes = Array(state.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
    }
}
