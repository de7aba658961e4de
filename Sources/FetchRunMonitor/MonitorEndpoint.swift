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
/// - `GET /feeds/…`: the history of changes as Atom and JSON Feed (``FeedRoutes``).
/// - `GET /`, `/sources/NAME`, `/outputs` and two actions: the dashboard (``DashboardRoutes``),
///   unless `dashboard: off`.
///
/// Every request must pass ``AccessCheck`` first (401 without it): the token and the allowed
/// networks, the feed token on `/feeds/*`, the dashboard's sign-in cookie on its pages.
/// Whoever can reach the port can still open connections before that, so what they can hold
/// is bounded: ``connectionLimit`` connections at once, each closed when idle for
/// ``idleLimit`` (a request's head not finished counts as idle) or when its client has not
/// taken a response ``stallLimit`` after it began. Fetching never shares these limits.
package struct MonitorEndpoint: Service {
    /// Connections served at once; more wait in the kernel's listen queue, holding none of the
    /// process's descriptors, which its fetches need.
    package static let connectionLimit = 32
    /// How long a connection may stay with no request, or with a request's head unfinished.
    package static let idleLimit: TimeAmount = .seconds(10)
    /// How long a client may take to read what it was sent (per write; a scrape at 10,000
    /// sources is a few writes of 1–2 MB).
    package static let stallLimit: TimeAmount = .seconds(30)

    /// What the endpoint asks of the command that runs it.
    package struct Probes: Sendable {
        /// Asks the state store something small: `nil` when it answered, else why not. Also
        /// where the outbox gauges are brought up to date.
        package var storeAnswers: @Sendable () async -> String?
        /// What `fetchrun status --format json` prints.
        package var status: @Sendable () async throws -> StatusDocument
        /// The history's records a feed asks for.
        package var history: @Sendable (HistoryQuery) async throws -> [ChangeRecord]
        /// The sources and outputs shown, as of the config last loaded (`${VAR}` unexpanded).
        package var config: ServedConfig
        /// The outbox for the dashboard's outputs page.
        package var outbox: @Sendable () async throws -> DashboardOutbox
        /// "Check now": makes a source due at once; `nil` where nothing watches (no action shown).
        package var checkNow: (@Sendable (String) async throws -> Watcher.CheckNow)?
        /// "Retry": makes an output's given-up deliveries due again and says how many; `nil`:
        /// no action shown.
        package var retry: (@Sendable (String) async throws -> Int)?
        /// The engine's clock: what the pages call now, and the store's time limit.
        package var clock: any FetchClock
        /// A change's screenshot by its name in the state folder (``ScreenshotFolder``);
        /// `nil` when there is none.
        package var screenshot: @Sendable (String) async -> Data?

        package init(
            storeAnswers: @escaping @Sendable () async -> String?, status: @escaping @Sendable () async throws -> StatusDocument,
            history: @escaping @Sendable (HistoryQuery) async throws -> [ChangeRecord] = { _ in [] }, config: ServedConfig = ServedConfig(),
            outbox: @escaping @Sendable () async throws -> DashboardOutbox = { DashboardOutbox(outputs: [], pending: [], delivered: [:], holds: [:]) },
            checkNow: (@Sendable (String) async throws -> Watcher.CheckNow)? = nil, retry: (@Sendable (String) async throws -> Int)? = nil,
            clock: any FetchClock = SystemClock(), screenshot: @escaping @Sendable (String) async -> Data? = { _ in nil }
        ) {
            self.storeAnswers = storeAnswers
            self.status = status
            self.history = history
            self.config = config
            self.outbox = outbox
            self.checkNow = checkNow
            self.retry = retry
            self.clock = clock
            self.screenshot = screenshot
        }
    }

    let settings: ListenSettings
    let metrics: MonitorMetrics
    let health: Health
    let probes: Probes
    let logger: Logger
    let onListening: @Sendable () -> Void

    package init(settings: ListenSettings, metrics: MonitorMetrics, health: Health, probes: Probes, logger: Logger, onListening: @escaping @Sendable () -> Void = {}) {
        self.settings = settings
        self.metrics = metrics
        self.health = health
        self.probes = probes
        self.logger = logger
        self.onListening = onListening
    }

    /// Why the endpoint's address cannot be listened on: one line, naming the address.
    package struct ListenFailure: Error, Sendable, CustomStringConvertible {
        package var address: String
        package var reason: String
        package var description: String { "cannot listen on \(address): \(reason)" }
    }

    /// Binds the address once, as the server will (`SO_REUSEADDR`), and lets it go: a command
    /// that serves the endpoint checks this before it starts its work and tells systemd it is
    /// ready, so that a port in use ends it with a clear line and a failing exit status instead
    /// of a watch that runs blind, reported as a success.
    /// - Throws: ``ListenFailure`` with the system's reason (`Address already in use`, `Cannot
    ///   assign requested address`, a name that does not resolve).
    package static func checkAddress(_ settings: ListenSettings) throws(ListenFailure) {
        let (host, port, shown) = (settings.host, settings.port, settings.written)
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw ListenFailure(address: shown, reason: String(cString: gai_strerror(resolved)))
        }
        defer { freeaddrinfo(first) }
        var reason = "no address to bind"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard descriptor >= 0 else {
                reason = String(cString: strerror(errno))
                continue
            }
            defer { close(descriptor) }
            var on: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            if bind(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return }
            reason = String(cString: strerror(errno))
        }
        throw ListenFailure(address: shown, reason: reason)
    }

    /// Serves until a graceful shutdown.
    /// - Throws: ``ListenFailure`` when the address cannot be bound (in use, not this
    ///   machine's); what the server throws after it was listening.
    package func run() async throws {
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
        FeedRoutes(history: probes.history, config: probes.config, clock: probes.clock).add(to: router)
        if settings.dashboard != .off {
            let dashboard = try DashboardRoutes(probes: probes, mode: settings.dashboard)
            dashboard.add(to: router)
            DashboardLogin(settings: settings, pages: dashboard.pages, clock: probes.clock).add(to: router)
        }
        let onListening = self.onListening
        let listening = Locked(false)
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
            onServerRunning: { _ in
                listening.withLock { $0 = true }
                onListening()
            },
            logger: logger
        )
        do {
            try await app.run()
        } catch where !listening.withLock({ $0 }) {
            // The port was taken between the command's check and now.
            throw ListenFailure(address: settings.written, reason: "\(error)")
        }
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

/// The token and the allowed networks, before any route; for `/feeds/*`, the feed token as
/// `?token=` too (``ListenSettings/admitsFeed(peer:authorization:feedToken:)``); for the
/// dashboard's pages, the session cookie its login sets (``DashboardLogin``). The login page and
/// the pages' stylesheet, script and icon need no token: they hold nothing of the watch's.
struct AccessCheck: RouterMiddleware {
    let settings: ListenSettings
    /// The cookie's value a logged-in browser sends; `nil` without `token:` or a dashboard.
    let session: String?

    init(settings: ListenSettings) {
        self.settings = settings
        session = settings.dashboard == .off ? nil : settings.token.map(DashboardLogin.session)
    }

    func handle(_ request: Request, context: MonitorRequestContext, next: (Request, MonitorRequestContext) async throws -> Response) async throws -> Response {
        let peer = context.remoteAddress?.ipAddress, authorization = request.headers[.authorization], path = request.uri.path
        // Signed in to the dashboard: its pages, and the feeds they link to.
        let signedIn = { (session: String) in DashboardLogin.cookie(in: request.headers[.cookie]).map { ListenSettings.same(session, $0) } == true }
        let admitted: Bool
        if settings.dashboard != .off, DashboardLogin.isOpen(path) {
            admitted = settings.admitsPeer(peer)
        } else if path.hasPrefix("/feeds/"), settings.admitsFeed(peer: peer, authorization: authorization, feedToken: request.uri.queryParameters["token"].map(String.init)) {
            admitted = true
        } else if !path.hasPrefix("/feeds/"), settings.admits(peer: peer, authorization: authorization) {
            admitted = true
        } else if let session, DashboardLogin.isPage(path) || path.hasPrefix("/feeds/"), signedIn(session) {
            admitted = settings.admitsPeer(peer)
        } else {
            admitted = false
        }
        guard admitted else {
            // A browser asking for a page is sent to the login form instead.
            if session != nil, request.method == .get, DashboardLogin.isPage(path), settings.admitsPeer(peer),
               request.headers[.accept]?.contains("text/html") == true {
                return DashboardRoutes.seeOther("/login")
            }
            var headers = HTTPFields()
            if settings.token != nil { headers[.wwwAuthenticate] = "Bearer" }
            return Response(status: .unauthorized, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: "not allowed\n")))
        }
        return try await next(request, context)
    }
}
