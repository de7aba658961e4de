import FetchRunKit
import Foundation

/// A small HTTP/1.1 server on 127.0.0.1 for tests and benchmarks: realistic feeds, and every
/// way a feed server can go wrong (see ``FixtureRoutes``).
///
/// One thread per connection with blocking sockets: simple, and enough for a thousand
/// concurrent clients on loopback. A thread whose connection closed waits for the next one
/// rather than exiting (see ``ConnectionHandoff``). It binds a free port, records every request
/// it receives, and ``stop()`` (or deinit) closes everything, hanging connections included.
public final class FixtureServer: Sendable {
    /// What the server received, for tests that check what the client sent.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: [String: String]
        /// Names lower-cased.
        public var headers: [String: String]
        /// The `scheme://host[:port]` of a request in proxy form (`GET http://host/path`):
        /// the client took this server for its proxy. `nil` for an ordinary request.
        public var proxiedTo: String?
        /// When the request's head had arrived.
        public var receivedAt = ContinuousClock.now
        /// The body, for requests that announce one with Content-Length (a webhook's POST).
        public var body: [UInt8] = []
    }

    enum Response {
        case full(status: Int, headers: [(String, String)], body: [UInt8])
        /// Headers, then the body a few bytes at a time.
        case drip(headers: [(String, String)], body: [UInt8], interval: Duration)
        /// A body of `chunks × chunk` bytes sent chunked, with no length announced.
        case stream(headers: [(String, String)], chunk: [UInt8], chunks: Int)
        /// `body[from...]` with a Content-Length, sent at `bytesPerSecond` (or at once), and
        /// stalling for good once `stallAt` bytes of the file have gone out.
        case paced(status: Int, headers: [(String, String)], body: [UInt8], from: Int, bytesPerSecond: Int?, stallAt: Int?)
        /// Read the request, then never answer.
        case hang
        /// Read the request, then reset the connection.
        case reset
    }

    public let port: UInt16
    private let listener: Int32
    private let state = Locked(State())
    private let handoff = ConnectionHandoff()
    let routes: FixtureRoutes

    // Descriptors are closed only under the lock that lists them, and the listener only by the
    // accept thread: a number closed elsewhere is soon another socket of the test process (the
    // next test's listener), and a late `shutdown` on it would end that server instead.
    struct State {
        var stopped = false
        /// The accept thread has closed the listener; its number may belong to anything now.
        var listenerClosed = false
        /// Accepted and still open: a connection's thread removes it and closes it in one step.
        var connections: Set<Int32> = []
        /// Connections accepted since the server started, closed ones too.
        var acceptedCount = 0
        var requests: [Request] = []
        var files: [String: (contentType: String, body: [UInt8])] = [:]
        var enclosures: [String: FixtureEnclosure] = [:]
        /// Generated bodies by path and shape, so that the server's own work stays out of benchmarks.
        var generated: [String: [UInt8]] = [:]
        /// Paths answered with a fixed status instead of their route (a webhook that is down).
        var statusOverrides: [String: (status: Int, headers: [(String, String)], body: [UInt8]?, delay: Double)] = [:]
    }

    /// Starts listening on 127.0.0.1 at a free port.
    public init(feedCount: Int = 1000) throws {
        (listener, port) = try Self.listen()
        routes = FixtureRoutes(feedCount: feedCount)
        // Deflating 64 MiB for /gzip-bomb takes a moment; do it now, not inside a client's deadline.
        _ = Compression.gzipBomb
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "fixture-accept"
        thread.start()
    }

    deinit {
        stop()
    }

    /// A listening socket on 127.0.0.1 at a free port, and the port.
    static func listen() throws -> (Int32, UInt16) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw FixtureServerError("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(listener, 4096) == 0 else {
            close(listener)
            throw FixtureServerError("bind/listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(listener, $0, &length) }
        }
        return (listener, UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// Serves `body` at `/files/<name>`.
    public func serve(_ name: String, body: [UInt8], contentType: String = "application/rss+xml") {
        state.withLock { $0.files[name] = (contentType, body) }
    }

    /// Serves (or, called again, changes) a file at `/enclosures/<name>`. A name never
    /// registered is served too, with `?size=` bytes (1 MiB by default), for benchmarks.
    public func serveEnclosure(_ name: String, _ enclosure: FixtureEnclosure) {
        state.withLock { $0.enclosures[name] = enclosure }
    }

    func enclosure(_ name: String) -> FixtureEnclosure? {
        state.withLock { $0.enclosures[name] }
    }

    /// Answers `path` with `status` (with `body`, else a short text, and `headers`, such as
    /// `Retry-After`), `delay` seconds after the request came, until changed; `nil` serves the
    /// route again. A `path` ending in `*` answers every path that starts with what comes
    /// before it.
    public func respond(to path: String, status: Int?, headers: [(String, String)] = [], body: [UInt8]? = nil, delay: Double = 0) {
        state.withLock { $0.statusOverrides[path] = status.map { ($0, headers, body, delay) } }
    }

    /// Connections accepted so far, and those of them still open: a client that closed one
    /// is seen once the server has read the end of its stream.
    public var connections: (accepted: Int, open: Int) {
        state.withLock { ($0.acceptedCount, $0.connections.count) }
    }

    /// Every request received so far, in order.
    public var requests: [Request] {
        state.withLock { $0.requests }
    }

    public func requests(to path: String) -> [Request] {
        requests.filter { $0.path == path }
    }

    /// Stops accepting and closes every connection, hanging ones included.
    public func stop() {
        // Accepted but never taken up by a thread: closed here, as no thread will.
        let untaken = handoff.stop()
        state.withLock { state in
            for connection in untaken where state.connections.remove(connection) != nil { close(connection) }
            guard !state.stopped else { return }
            state.stopped = true
            // Wakes the accept thread, which closes the listener itself.
            if !state.listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
            for connection in state.connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// A generated body, made once per key.
    func generated(_ key: String, make: () -> [UInt8]) -> [UInt8] {
        if let body = state.withLock({ $0.generated[key] }) { return body }
        let body = make()
        state.withLock { $0.generated[key] = body }
        return body
    }

    func file(_ name: String) -> (contentType: String, body: [UInt8])? {
        state.withLock { $0.files[name] }
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
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.connections.insert(connection)
                state.acceptedCount += 1
                return true
            }
            guard accepted else {
                close(connection)
                return
            }
            guard !handoff.handOff(connection) else { continue }
            let thread = Thread { [self] in
                var connection = connection
                while true {
                    serve(connection)
                    state.withLock { state in
                        if state.connections.remove(connection) != nil { close(connection) }
                    }
                    guard let next = handoff.next() else { return }
                    connection = next
                }
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        var buffer: [UInt8] = []
        while let request = readRequest(connection, buffer: &buffer) {
            state.withLock { $0.requests.append(request) }
            if let latency = request.query["latency"].flatMap(FixtureRoutes.duration) {
                Thread.sleep(forTimeInterval: latency)
            }
            let override = state.withLock { state in
                state.statusOverrides[request.path] ?? state.statusOverrides.first { $0.key.hasSuffix("*") && request.path.hasPrefix($0.key.dropLast()) }?.value
            }
            if let delay = override?.delay, delay > 0 { Thread.sleep(forTimeInterval: delay) }
            let response = override.map { FixtureServer.Response.full(status: $0.status, headers: [("Content-Type", $0.body == nil ? "text/plain" : "application/json")] + $0.headers, body: $0.body ?? Array("status \($0.status)\n".utf8)) }
                ?? routes.response(for: request, server: self)
            guard write(response, to: connection, keepAlive: request.headers["connection"]?.lowercased() != "close") else { return }
        }
    }

    /// Reads one request head; `nil` at end of stream or on a malformed request.
    private func readRequest(_ connection: Int32, buffer: inout [UInt8]) -> Request? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = buffer.firstRange(of: terminator) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                guard var request = Self.parse(head) else { return nil }
                // A body, when announced: read it whole (up to 16 MiB) before answering.
                if let length = request.headers["content-length"].flatMap(Int.init), length > 0, length <= 16 << 20 {
                    while buffer.count < length {
                        var chunk = [UInt8](repeating: 0, count: 65536)
                        let count = recv(connection, &chunk, chunk.count, 0)
                        guard count > 0 else { return nil }
                        buffer += chunk[..<count]
                    }
                    request.body = Array(buffer[..<length])
                    buffer.removeSubrange(..<length)
                }
                return request
            }
            var chunk = [UInt8](repeating: 0, count: 8192)
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0, buffer.count < 64 * 1024 else { return nil }
            buffer += chunk[..<count]
        }
    }

    static func parse(_ head: String) -> Request? {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count == 3 else { return nil }
        var target = String(parts[1])
        // Proxy form: serve the path as if this server were the origin, and remember the origin.
        var proxiedTo: String?
        if let schemeEnd = target.range(of: "://"), target.hasPrefix("http") {
            let pathStart = target[schemeEnd.upperBound...].firstIndex(of: "/") ?? target.endIndex
            proxiedTo = String(target[..<pathStart])
            target = pathStart < target.endIndex ? String(target[pathStart...]) : "/"
        }
        let pathEnd = target.firstIndex(of: "?") ?? target.endIndex
        var query: [String: String] = [:]
        if pathEnd < target.endIndex {
            for pair in target[target.index(after: pathEnd)...].split(separator: "&") {
                let keyValue = pair.split(separator: "=", maxSplits: 1)
                let value = keyValue.count > 1 ? String(keyValue[1]) : ""
                query[String(keyValue[0])] = value.contains("%") ? value.removingPercentEncoding : value
            }
        }
        // Trimmed by hand: Foundation's trimming bridged every header line to an NSString, a
        // quarter of the server's CPU in a benchmark run (on the cores fetchrun is measured on).
        func trimmed(_ text: Substring) -> String {
            let isSpace = { (character: Character) in character == " " || character == "\t" }
            guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }) else { return "" }
            return String(text[first...last])
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = trimmed(line[line.index(after: colon)...])
        }
        return Request(method: String(parts[0]), path: String(target[..<pathEnd]), query: query, headers: headers, proxiedTo: proxiedTo)
    }

    /// Writes a response; `false` when the connection must close afterwards.
    private func write(_ response: Response, to connection: Int32, keepAlive: Bool) -> Bool {
        switch response {
        case .full(let status, let headers, let body):
            var all = headers + [("Content-Length", String(body.count))]
            if !keepAlive { all.append(("Connection", "close")) }
            return send(connection, Self.head(status: status, headers: all) + body) && keepAlive
        case .drip(let headers, let body, let interval):
            guard send(connection, Self.head(status: 200, headers: headers + [("Content-Length", String(body.count)), ("Connection", "close")])) else { return false }
            for byte in body {
                if isStopped { return false }
                Thread.sleep(forTimeInterval: interval.seconds)
                guard send(connection, [byte]) else { return false }
            }
            return false
        case .stream(let headers, let chunk, let chunks):
            guard send(connection, Self.head(status: 200, headers: headers + [("Transfer-Encoding", "chunked"), ("Connection", "close")])) else { return false }
            let framed = Array(String(chunk.count, radix: 16).utf8) + [13, 10] + chunk + [13, 10]
            for _ in 0..<chunks {
                guard send(connection, framed) else { return false }
            }
            _ = send(connection, Array("0\r\n\r\n".utf8))
            return false
        case .paced(let status, let headers, let body, let start, let rate, let stallAt):
            var all = headers + [("Content-Length", String(body.count - start))]
            all.append(("Connection", "close"))
            guard send(connection, Self.head(status: status, headers: all)) else { return false }
            // A rate is kept by sending a twentieth of it every 50 ms.
            let chunk = rate.map { max(1, $0 / 20) } ?? 1 << 20
            var offset = start
            while offset < body.count {
                if isStopped { return false }
                if let stallAt, offset >= stallAt {
                    while !isStopped { Thread.sleep(forTimeInterval: 0.05) }
                    return false
                }
                var end = min(body.count, offset + chunk)
                if let stallAt, offset < stallAt { end = min(end, stallAt) }
                let sent = body.withUnsafeBytes { sendAll(connection, UnsafeRawBufferPointer(rebasing: $0[offset..<end])) }
                guard sent else { return false }
                offset = end
                if rate != nil { Thread.sleep(forTimeInterval: 0.05) }
            }
            return false
        case .hang:
            while !isStopped { Thread.sleep(forTimeInterval: 0.05) }
            return false
        case .reset:
            // A zero linger time turns close() into a TCP reset.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return false
        }
    }

    private static func head(status: Int, headers: [(String, String)]) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reason(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    private static func reason(_ status: Int) -> String {
        [200: "OK", 206: "Partial Content", 416: "Range Not Satisfiable", 301: "Moved Permanently", 302: "Found", 304: "Not Modified", 404: "Not Found",
         429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"][status] ?? "Status"
    }

    private func send(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { sendAll(connection, $0) }
    }

    private func sendAll(_ connection: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(connection, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }
}

public struct FixtureServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Hands accepted connections to threads that are waiting for one.
///
/// A benchmark's client opens hundreds of connections in a run; starting a thread for each cost
/// the server more CPU than answering them, on the same two cores as the client being
/// measured. Threads are started only when none is idle, so they number at most the
/// connections that were ever open at once; ``stop()`` lets them all end.
final class ConnectionHandoff: @unchecked Sendable {
    // Blocking threads handing over a descriptor: a condition is what they wait on.
    private let condition = NSCondition()
    private var waitingConnections: [Int32] = []
    private var idleThreads = 0
    private var stopped = false

    /// Gives `connection` to an idle thread. `false` when none is free: the caller starts one.
    func handOff(_ connection: Int32) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, idleThreads > waitingConnections.count else { return false }
        waitingConnections.append(connection)
        condition.signal()
        return true
    }

    /// Waits for the next connection; `nil` once stopped.
    func next() -> Int32? {
        condition.lock()
        defer { condition.unlock() }
        idleThreads += 1
        defer { idleThreads -= 1 }
        while waitingConnections.isEmpty, !stopped { condition.wait() }
        guard !stopped else { return nil }
        return waitingConnections.removeFirst()
    }

    /// Ends every waiting thread; returns the connections handed off but not yet taken.
    func stop() -> Set<Int32> {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        let untaken = Set(waitingConnections)
        waitingConnections.removeAll()
        condition.broadcast()
        return untaken
    }
}
