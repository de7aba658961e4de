import FetchRunKit
import Foundation
import Logging
import WSClient

/// One WebSocket to a browser's DevTools endpoint, speaking the Chrome DevTools Protocol:
/// commands are JSON objects with an `id` answered by a message with the same `id`; events
/// have a `method` and no `id`. A command for a page carries the `sessionId` of the page's
/// attachment, and so do its events.
///
/// Framing is swift-websocket's. When the socket closes — the browser crashed, was killed, or
/// closed it — every command waiting fails with ``CDPError/closed(_:)`` and every event stream
/// ends; the connection is not reopened (the renderer makes a new one).
final class CDPConnection: Sendable {
    /// An event: `method`, `params`, and the session it belongs to (`nil`: the browser's).
    struct Event: Sendable {
        var method: String
        var params: JSONValue
        var sessionID: String?
    }

    private struct State {
        var writer: WebSocketOutboundWriter?
        var nextID = 0
        var pending: [Int: CheckedContinuation<JSONValue, any Error>] = [:]
        var subscribers: [String: AsyncStream<Event>.Continuation] = [:]
        /// Why the connection ended, once it has.
        var closed: CDPError?
    }

    /// The largest message taken from the browser: a page's HTML within `max_bytes` and a
    /// screenshot within its bound, as JSON. A larger one closes the connection.
    static let maximumMessageBytes = 96 << 20

    private let state = Locked(State())
    private let browserSubscriber = "browser"
    let url: String

    private init(url: String) {
        self.url = url
    }

    /// Connects to `url` (`ws://…/devtools/browser/…`); returns once the socket is open.
    /// - Throws: ``CDPError/closed(_:)`` when it cannot connect; `CancellationError`.
    static func open(url: String, logger: Logger) async throws -> CDPConnection {
        let connection = CDPConnection(url: url)
        let opened = Locked<CheckedContinuation<Void, any Error>?>(nil)
        let configuration = WebSocketClientConfiguration(maxFrameSize: maximumMessageBytes, validateUTF8: true)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                opened.withLock { $0 = continuation }
                // Detached: the socket belongs to the renderer, not to the fetch that opened it.
                // A task would inherit that fetch's task-locals, its graceful shutdown among
                // them, on which swift-websocket closes the socket: a watch told to stop would
                // lose the browser under the fetches it lets finish.
                Task.detached {
                    var reason = "the browser closed the DevTools connection"
                    do {
                        let client = WebSocketClient(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
                            connection.state.withLock { $0.writer = outbound }
                            opened.withLock { $0.take() }?.resume()
                            for try await message in inbound.messages(maxSize: maximumMessageBytes) {
                                guard case .text(let text) = message else { continue }
                                connection.dispatch(text)
                            }
                        }
                        try await client.run()
                    } catch {
                        reason = "the DevTools connection to \(url) failed: \(error)"
                    }
                    opened.withLock { $0.take() }?.resume(throwing: CDPError.closed(reason))
                    connection.end(CDPError.closed(reason))
                }
            }
        } onCancel: {
            opened.withLock { $0.take() }?.resume(throwing: CancellationError())
        }
        return connection
    }

    /// Whether the socket has closed.
    var isClosed: Bool { state.withLock { $0.closed != nil } }

    /// Sends a command and returns its `result`.
    /// - Throws: ``CDPError/command(_:_:)`` with the browser's message; ``CDPError/closed(_:)``
    ///   when the connection ends first; `CancellationError` as soon as the task is cancelled
    ///   (the answer, when it comes, is dropped).
    @discardableResult
    func send(_ method: String, _ params: [String: JSONValue] = [:], session: String? = nil) async throws -> JSONValue {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.key("id")
        writer.value(id)
        writer.key("method")
        writer.value(method)
        if let session { writer.field("sessionId", session) }
        writer.key("params")
        writer.value(JSONValue.object(params))
        writer.endObject()
        let text = writer.string
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONValue, any Error>) in
                let outbound: WebSocketOutboundWriter? = state.withLock { state in
                    if let closed = state.closed {
                        continuation.resume(throwing: closed)
                        return nil
                    }
                    state.pending[id] = continuation
                    return state.writer
                }
                guard let outbound else { return }
                Task {
                    do {
                        try await outbound.write(.text(text))
                    } catch {
                        self.fail(id, with: CDPError.closed("the DevTools connection could not be written: \(error)"))
                    }
                }
            }
        } onCancel: {
            fail(id, with: CancellationError())
        }
    }

    /// The events of `session` (`nil`: the browser's own), from now until ``unsubscribe(_:)``
    /// or the connection's end. One stream per session.
    func events(of session: String?) -> AsyncStream<Event> {
        let key = session ?? browserSubscriber
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        let ended = state.withLock { state -> Bool in
            if state.closed != nil { return true }
            state.subscribers[key] = continuation
            return false
        }
        if ended { continuation.finish() }
        return stream
    }

    func unsubscribe(_ session: String?) {
        state.withLock { $0.subscribers.removeValue(forKey: session ?? browserSubscriber) }?.finish()
    }

    /// Closes the socket; what waits fails with ``CDPError/closed(_:)``.
    func close() async {
        let writer = state.withLock { $0.writer }
        try? await writer?.close(.normalClosure, reason: nil)
        end(CDPError.closed("the DevTools connection was closed"))
    }

    private func fail(_ id: Int, with error: any Error) {
        state.withLock { $0.pending.removeValue(forKey: id) }?.resume(throwing: error)
    }

    private func end(_ error: CDPError) {
        let (pending, subscribers) = state.withLock { state in
            if state.closed == nil { state.closed = error }
            defer {
                state.pending = [:]
                state.subscribers = [:]
                state.writer = nil
            }
            return (state.pending, state.subscribers)
        }
        for continuation in pending.values { continuation.resume(throwing: error) }
        for continuation in subscribers.values { continuation.finish() }
    }

    /// One message from the browser: an answer to its command, or an event to its session's stream.
    private func dispatch(_ text: String) {
        guard case .object(let message)? = try? JSONReader.value(of: Data(text.utf8)) else { return }
        if let id = message["id"]?.intValue {
            guard let continuation = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
            if case .object(let error)? = message["error"] {
                continuation.resume(throwing: CDPError.command(error["message"]?.stringValue ?? "unknown error", code: error["code"]?.intValue))
            } else {
                continuation.resume(returning: message["result"] ?? .object([:]))
            }
            return
        }
        guard let method = message["method"]?.stringValue else { return }
        let session = message["sessionId"]?.stringValue
        let subscriber = state.withLock { $0.subscribers[session ?? browserSubscriber] }
        subscriber?.yield(Event(method: method, params: message["params"] ?? .object([:]), sessionID: session))
    }
}

/// What went wrong talking to the browser.
enum CDPError: Error, Sendable, CustomStringConvertible {
    /// The connection ended: the browser crashed, was killed, or closed it.
    case closed(String)
    /// The browser answered a command with an error.
    case command(String, code: Int?)

    var description: String {
        switch self {
        case .closed(let reason): reason
        case .command(let message, _): TerminalText.safe(message, maximumLength: 300)
        }
    }
}
