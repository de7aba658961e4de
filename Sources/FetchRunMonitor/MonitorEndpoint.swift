import FetchRunKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// `--listen`: the HTTP endpoint of a `watch` or `worker`, a `Service` in its group.
///
/// - `GET /metrics`: Prometheus's text exposition format (0.0.4).
/// - `GET /healthz`: 200 while the schedule loop turns, else 503 and why.
/// - `GET /readyz`: 200 once the config is loaded and the state store answers, else 503 and why.
/// - `GET /status`: what `fetchrun status --format json` prints.
///
/// Every request must pass ``ListenSettings/admits(peer:authorization:)`` first (401 without it).
/// Whoever can reach the port can still open connections before that, so what they can hold
/// is bounded: ``connectionLimit`` connections at once, each closed when idle for
/// ``idleLimit`` (a request's head not finished counts as idle) or when its client has not
/// taken a response ``stallLimit`` after it began. Fetching never shares these limits.
public struct MonitorEndpoint: Service {
    /// Connections served at once; more wait in the kernel's listen queue, holding none of the
    /// process's descriptors, which its fetches need.
    public static let connectionLimit = 32
    /// How long a connection may stay with no request, or with a request's head unfinished.
    public static let idleLimit: TimeAmount = .seconds(10)
    /// How long a client may take to read what it was sent (per write; a scrape at 10,000
    /// sources is a few writes of 1–2 MB).
    public static let stallLimit: TimeAmount = .seconds(30)

    /// What the endpoint asks of the command that runs it.
    public struct Probes: Sendable {
        /// Asks the state store something small: `nil` when it answered, else why not. Also
        /// where the outbox gauges are brought up to date.
        public var storeAnswers: @Sendable () async -> String?
        /// What `fetchrun status --format json` prints.
        public var status: @Sendable () async throws -> StatusDocument

        public init(storeAnswers: @escaping @Sendable () async -> String?, status: @escaping @Sendable () async throws -> StatusDocument) {
            self.storeAnswers = storeAnswers
            self.status = status
        }
    }

    let settings: ListenSettings
    let metrics: MonitorMetrics
    let health: Health
    let probes: Probes
    let logger: Logger
    let onListening: @Sendable () -> Void

    public init(settings: ListenSettings, metrics: MonitorMetrics, health: Health, probes: Probes, logger: Logger, onListening: @escaping @Sendable () -> Void = {}) {
        self.settings = settings
        self.metrics = metrics
        self.health = health
        self.probes = probes
        self.logger = logger
        self.onListening = onListening
    }

    /// Serves until a graceful shutdown.
    /// - Throws: when the address cannot be bound (in use, not this machine's).
    public func run() async throws {
        let router = Router(context: MonitorRequestContext.self)
        router.add(middleware: AccessCheck(settings: settings))
        let metrics = self.metrics, health = self.health, probes = self.probes
        router.get("/metrics") { _, _ -> Response in
            // The outbox gauges are read from the store as the scrape asks.
            _ = await probes.storeAnswers()
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: ResponseBody(contentsOf: metrics.expositionBuffers()))
        }
        router.get("/healthz") { _, _ -> Response in
            if let reason = health.stalled { return Self.text(reason + "\n", status: .serviceUnavailable) }
            return Self.text("ok\n")
        }
        router.get("/readyz") { _, _ -> Response in
            if let reason = health.notReady { return Self.text(reason + "\n", status: .serviceUnavailable) }
            if let reason = await probes.storeAnswers() { return Self.text("the state store does not answer: \(reason)\n", status: .serviceUnavailable) }
            return Self.text("ok\n")
        }
        router.get("/status") { _, _ -> Response in
            do {
                let document = try await probes.status()
                var headers = HTTPFields()
                headers[.contentType] = "application/x-ndjson"
                return Response(status: .ok, headers: headers, body: ResponseBody(contentsOf: Self.buffers(of: document)))
            } catch {
                return Self.text("status could not be read: \(error)\n", status: .serviceUnavailable)
            }
        }
        let onListening = self.onListening
        let app = Application(
            router: router,
            server: .http1(configuration: HTTP1Channel.Configuration(
                additionalChannelHandlers: [StalledWriteGuard(limit: Self.stallLimit)],
                idleTimeout: Self.idleLimit
            )),
            configuration: ApplicationConfiguration(
                address: .hostname(settings.host, port: settings.port),
                serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(Self.connectionLimit, logger: logger)
            ),
            onServerRunning: { _ in onListening() },
            logger: logger
        )
        try await app.run()
    }

    /// How many sources' lines of `/status` go into one buffer (about 260 KB).
    static let statusLinesPerBuffer = 1_000

    /// `/status`'s body, rendered a thousand sources at a time: each part is copied once, into
    /// its buffer, and the whole is never a string.
    static func buffers(of document: StatusDocument) -> [ByteBuffer] {
        stride(from: 0, to: document.sources.count, by: statusLinesPerBuffer).map { start in
            ByteBuffer(bytes: document.jsonLines(start..<min(start + statusLinesPerBuffer, document.sources.count)))
        }
    }

    static func text(_ body: String, status: HTTPResponse.Status = .ok, contentType: String = "text/plain; charset=utf-8") -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}

/// A request's context, with the peer's address for ``AccessCheck``.
struct MonitorRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The token and the allowed networks, before any route.
struct AccessCheck: RouterMiddleware {
    let settings: ListenSettings

    func handle(_ request: Request, context: MonitorRequestContext, next: (Request, MonitorRequestContext) async throws -> Response) async throws -> Response {
        guard settings.admits(peer: context.remoteAddress?.ipAddress, authorization: request.headers[.authorization]) else {
            var headers = HTTPFields()
            if settings.token != nil { headers[.wwwAuthenticate] = "Bearer" }
            return Response(status: .unauthorized, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: "not allowed\n")))
        }
        return try await next(request, context)
    }
}
