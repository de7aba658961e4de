import FetchRunKit
import Foundation

/// A small SMTP server on 127.0.0.1 for tests, without TLS: it takes every mail and keeps it.
///
/// Enough of RFC 5321 for libcurl: EHLO/HELO, AUTH PLAIN (any credentials, recorded), MAIL,
/// RCPT, DATA (dot-unstuffed), RSET, NOOP, QUIT. STARTTLS is not offered, or — as a stripping
/// attacker in the middle would — offered and refused with 454. One thread per connection;
/// ``stop()`` or deinit closes everything.
public final class SMTPFixture: Sendable {
    public enum StartTLS: Sendable {
        /// Not in the EHLO answer: a plain relay.
        case notOffered
        /// Offered, and refused with `454 TLS not available`.
        case refused
    }

    public struct Message: Sendable {
        public var from: String
        public var recipients: [String]
        /// Headers and body as received, CRLF line ends, dots unstuffed.
        public var data: String
        /// `user` and `password` of AUTH PLAIN, when the client logged in.
        public var login: (user: String, password: String)?

        public init(from: String, recipients: [String], data: String, login: (user: String, password: String)? = nil) {
            self.from = from
            self.recipients = recipients
            self.data = data
            self.login = login
        }

        /// A header's value (the first of that name), unfolded.
        public func header(_ name: String) -> String? {
            let head = data.components(separatedBy: "\r\n\r\n").first ?? ""
            var value: String?
            for line in head.components(separatedBy: "\r\n") {
                if value != nil, line.hasPrefix(" ") || line.hasPrefix("\t") {
                    value! += line.trimmingCharacters(in: .whitespaces)
                    continue
                }
                if value != nil { break }
                if line.lowercased().hasPrefix(name.lowercased() + ":") {
                    value = String(line.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces)
                }
            }
            return value
        }

        public var body: String {
            data.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        }
    }

    public let port: UInt16
    public let startTLS: StartTLS
    private let listener: Int32
    private let state = Locked(State())

    // As in FixtureServer: descriptors are closed only under the lock that lists them, the
    // listener only by the accept thread, so no late `shutdown` lands on a reused number.
    struct State {
        var stopped = false
        var listenerClosed = false
        var connections: Set<Int32> = []
        var messages: [Message] = []
    }

    /// Where the server stops answering, keeping the connection open: a server that hangs.
    public enum Silence: Sendable {
        case never
        /// The message is read and kept, and never acknowledged.
        case afterData
        /// The message is acknowledged; QUIT never is.
        case atQuit
    }

    public let silence: Silence

    public init(startTLS: StartTLS = .notOffered, silence: Silence = .never) throws {
        self.startTLS = startTLS
        self.silence = silence
        (listener, port) = try FixtureServer.listen()
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "smtp-fixture-accept"
        thread.start()
    }

    deinit {
        stop()
    }

    /// `smtp://127.0.0.1:<port>`.
    public var url: String { "smtp://127.0.0.1:\(port)" }

    public var messages: [Message] { state.withLock { $0.messages } }

    public func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            if !state.listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
            for connection in state.connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        defer {
            state.withLock { state in
                state.listenerClosed = true
                close(listener)
            }
        }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            guard state.withLock({ state -> Bool in
                guard !state.stopped else { return false }
                state.connections.insert(connection)
                return true
            }) else {
                close(connection)
                return
            }
            let thread = Thread { [self] in
                converse(connection)
                state.withLock { state in
                    if state.connections.remove(connection) != nil { close(connection) }
                }
            }
            thread.start()
        }
    }

    private func converse(_ connection: Int32) {
        var buffer: [UInt8] = []
        func reply(_ text: String) -> Bool {
            let bytes = Array((text + "\r\n").utf8)
            return bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }
        func line() -> String? {
            while true {
                if let end = buffer.firstRange(of: [13, 10]) {
                    let text = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                    buffer.removeSubrange(..<end.upperBound)
                    return text
                }
                var chunk = [UInt8](repeating: 0, count: 8192)
                let count = recv(connection, &chunk, chunk.count, 0)
                guard count > 0, buffer.count < 1 << 20 else { return nil }
                buffer += chunk[..<count]
            }
        }
        guard reply("220 fixture ESMTP") else { return }
        var message = Message(from: "", recipients: [], data: "")
        while let command = line() {
            let upper = command.uppercased()
            if upper.hasPrefix("EHLO") {
                guard reply("250-fixture"), startTLS == .notOffered || reply("250-STARTTLS"), reply("250-AUTH PLAIN"), reply("250 8BITMIME") else { return }
            } else if upper == "STARTTLS" {
                guard reply("454 TLS not available") else { return }
            } else if upper.hasPrefix("HELO") || upper.hasPrefix("NOOP") {
                guard reply("250 ok") else { return }
            } else if upper.hasPrefix("AUTH PLAIN") {
                var encoded = String(command.dropFirst(10)).trimmingCharacters(in: .whitespaces)
                if encoded.isEmpty {
                    guard reply("334 "), let next = line() else { return }
                    encoded = next
                }
                let parts = (Data(base64Encoded: encoded).map { String(decoding: $0, as: UTF8.self) } ?? "").split(separator: "\0", omittingEmptySubsequences: false)
                message.login = parts.count == 3 ? (String(parts[1]), String(parts[2])) : nil
                guard reply("235 authenticated") else { return }
            } else if upper.hasPrefix("MAIL FROM:") {
                message.from = Self.address(command.dropFirst(10))
                message.recipients = []
                guard reply("250 ok") else { return }
            } else if upper.hasPrefix("RCPT TO:") {
                message.recipients.append(Self.address(command.dropFirst(8)))
                guard reply("250 ok") else { return }
            } else if upper == "DATA" {
                guard reply("354 go on") else { return }
                var lines: [String] = []
                while let next = line() {
                    if next == "." { break }
                    lines.append(next.hasPrefix("..") ? String(next.dropFirst()) : next)
                }
                message.data = lines.joined(separator: "\r\n")
                let kept = message
                state.withLock { $0.messages.append(kept) }
                message = Message(from: "", recipients: [], data: "", login: message.login)
                if silence == .afterData {
                    while line() != nil {}
                    return
                }
                guard reply("250 queued") else { return }
            } else if upper == "RSET" {
                message = Message(from: "", recipients: [], data: "", login: message.login)
                guard reply("250 ok") else { return }
            } else if upper == "QUIT" {
                if silence == .atQuit {
                    while line() != nil {}
                    return
                }
                _ = reply("221 bye")
                return
            } else {
                guard reply("502 not implemented") else { return }
            }
        }
    }

    /// `<a@b> SIZE=…` → `a@b`.
    private static func address(_ text: Substring) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let open = trimmed.firstIndex(of: "<"), let close = trimmed.firstIndex(of: ">"), open < close else {
            return String(trimmed.split(separator: " ").first ?? "")
        }
        return String(trimmed[trimmed.index(after: open)..<close])
    }
}
