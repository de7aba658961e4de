import FetchRunKit
import Foundation
import Logging
import ServiceLifecycle

/// fetchrun's ``PageRenderer``: Chromium over the DevTools Protocol.
///
/// - The browser is started when the first page is due (or, with `browser: { url: }`, the
///   running one is connected to), kept for the run or the watch, and stopped — its whole
///   process group — by ``shutdown()``. Nothing happens in `init`.
/// - Each render gets a browser context of its own (nothing shared between sources) and one of
///   ``BrowserSettings/tabs`` slots; it gives both back however it ends.
/// - A browser that crashed, was killed or stopped answering is stopped and started again for
///   the next render; the renders it held fail saying so.
package actor ChromiumRenderer: PageRenderer, Service {
    private let settings: BrowserSettings
    private let clock: any FetchClock
    private let http: any HTTPExchange
    private let logger: Logger
    private let slots: TabSlots

    private var connection: CDPConnection?
    private var process: ChromiumProcess?
    private var starting: Task<Void, any Error>?
    /// Set when the browser did not answer in time: the next render starts a new one.
    private var stale = false
    /// The contexts kept for `keep_session: true`, by source, in the browser that runs now.
    private var sessions: [String: String] = [:]

    /// How long a browser may take to start, or to dispose of a page's context.
    static let launchLimit: Duration = .seconds(30)
    static let disposeLimit: Duration = .seconds(5)

    /// - Parameter http: what reads `/json/version` of a `browser: { url: http://… }`.
    package init(settings: BrowserSettings, clock: any FetchClock, http: any HTTPExchange, logger: Logger) {
        self.settings = settings
        self.clock = clock
        self.http = http
        self.logger = logger
        slots = TabSlots(count: settings.tabs)
    }

    package func render(_ request: RenderRequest) async throws -> RenderedPage {
        try await slots.acquire()
        let connection: CDPConnection
        do {
            connection = try await browser()
        } catch {
            slots.release()
            throw failure(error, request: request)
        }
        var contextID: String?
        let outcome: Result<RenderedPage, any Error>
        do {
            let id: String
            if let session = request.session, let kept = sessions[session] {
                id = kept
            } else {
                var params: [String: JSONValue] = ["disposeOnDetach": .bool(true)]
                if let proxy = request.proxy { params["proxyServer"] = .string(proxy) }
                id = try await connection.send("Target.createBrowserContext", params)["browserContextId"]?.stringValue ?? ""
                if let session = request.session, self.connection === connection { sessions[session] = id }
            }
            contextID = id
            outcome = .success(try await PageRender(connection: connection, request: request, clock: clock, contextID: id).run())
        } catch {
            outcome = .failure(error)
        }
        // The context goes whatever happened (its tab and popups with it) — a kept one keeps
        // its cookies and storage and loses its tabs — and the slot comes back once it has. A
        // browser that does not answer that — or, when no context was made, a plain question —
        // within ``disposeLimit`` has stopped answering: the next render starts a new one. A
        // cancelled render does not wait for this: its deadline has passed.
        let made = contextID, keeps = request.session != nil
        let cleanup = Task.detached { [clock, slots] in
            defer { slots.release() }
            return await Self.within(Self.disposeLimit, on: clock) {
                switch (made, keeps) {
                case (let made?, false):
                    try await connection.send("Target.disposeBrowserContext", ["browserContextId": .string(made)])
                case (let made?, true):
                    try await Self.closeTabs(of: made, on: connection)
                case (nil, _):
                    try await connection.send("Browser.getVersion")
                }
            }
        }
        if Task.isCancelled {
            Task { if await cleanup.value == false { self.markStale(connection) } }
        } else if await cleanup.value == false {
            markStale(connection)
        }
        switch outcome {
        case .success(let page): return page
        case .failure(let error): throw failure(error, request: request)
        }
    }

    /// As a service: waits for the group's shutdown, then stops the browser. Listed before the
    /// services and work that render, it stops after them.
    package func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    package func shutdown() async {
        if let starting { _ = await starting.result }
        starting = nil
        sessions = [:]
        await connection?.close()
        connection = nil
        await process?.stop()
        process = nil
    }

    /// The browser's connection: the one open, or a new browser's.
    private func browser() async throws -> CDPConnection {
        if let connection, !connection.isClosed, !stale { return connection }
        if starting == nil {
            let old = (connection, process)
            connection = nil
            process = nil
            stale = false
            // Kept contexts end with their browser.
            sessions = [:]
            let task = Task {
                await old.0?.close()
                await old.1?.stop()
                try await self.start()
            }
            starting = task
        }
        let task = starting!
        do {
            try await Self.value(of: task)
        } catch {
            // A failed start is tried again by the next render; a render that gave up waiting
            // leaves the start to the others.
            if !(error is CancellationError), starting == task { starting = nil }
            throw error
        }
        if starting == task { starting = nil }
        guard let connection else { throw CDPError.closed("the browser stopped as it started") }
        return connection
    }

    /// Starts or connects to the browser, within ``launchLimit``.
    private func start() async throws {
        let limit = clock.now + Self.launchLimit
        let settings = settings
        let (connection, process) = try await withDeadline(limit, on: clock) { [http, logger] () async throws -> (CDPConnection, ChromiumProcess?) in
            if let url = settings.url {
                let endpoint = try await Self.webSocketURL(of: url, http: http, deadline: limit)
                return (try await CDPConnection.open(url: endpoint, logger: logger), nil)
            }
            let process = try await ChromiumProcess.launch(command: settings.command)
            do {
                return (try await CDPConnection.open(url: process.webSocketURL, logger: logger), process)
            } catch {
                await process.stop()
                throw error
            }
        }
        self.connection = connection
        self.process = process
        logger.info("browser \(process.map { "started (pid \($0.pid))" } ?? "connected"): \(settings.url.map(HTTPText.removingCredentials) ?? "headless")")
    }

    /// Closes every tab of a kept context (the page's, and any popup it opened).
    static func closeTabs(of context: String, on connection: CDPConnection) async throws {
        guard case .array(let targets)? = try await connection.send("Target.getTargets")["targetInfos"] else { return }
        for target in targets where target["browserContextId"]?.stringValue == context {
            if let id = target["targetId"]?.stringValue {
                try await connection.send("Target.closeTarget", ["targetId": .string(id)])
            }
        }
    }

    private func markStale(_ stopped: CDPConnection) {
        if connection === stopped, !stopped.isClosed {
            logger.warning("the browser did not answer within \(DurationText.format(Self.disposeLimit)): it is started again for the next page")
            stale = true
        }
    }

    /// `url` itself when it is a WebSocket URL; else the `webSocketDebuggerUrl` its
    /// `/json/version` names (a browser started with `--remote-debugging-port`).
    static func webSocketURL(of url: String, http: any HTTPExchange, deadline: ContinuousClock.Instant) async throws -> String {
        let lowered = url.lowercased()
        if lowered.hasPrefix("ws://") || lowered.hasPrefix("wss://") { return url }
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        let response = try await http.execute(HTTPRequest(url: base + "/json/version", deadline: deadline, maxBodyBytes: 64 << 10))
        guard response.isSuccess, case .object(let version)? = try? JSONReader.value(of: response.body),
              let endpoint = version["webSocketDebuggerUrl"]?.stringValue, endpoint.lowercased().hasPrefix("ws") else {
            throw CDPError.closed("\(HTTPText.removingCredentials(from: url))/json/version named no DevTools WebSocket (HTTP \(response.status))")
        }
        return endpoint
    }

    /// The fetch's failure for what went wrong in the browser.
    private func failure(_ error: any Error, request: RenderRequest) -> any Error {
        switch error {
        case is CancellationError, is FetchFailure:
            return error
        case let error as CDPError:
            if case .closed(let reason) = error {
                return FetchFailure(.adapter, "\(request.displayURL): the browser stopped during the fetch (\(TerminalText.safe(reason, maximumLength: 200))); it is started again for the next fetch")
            }
            return FetchFailure(.adapter, "\(request.displayURL): the browser refused the page: \(error)")
        case PageRender.Failure.crashed:
            return FetchFailure(.adapter, "\(request.displayURL): the page's renderer crashed (out of memory, or killed)")
        case let error as ChromiumProcess.LaunchError:
            return FetchFailure(.adapter, "\(request.displayURL): \(error)")
        case is DeadlineExceeded:
            return FetchFailure(.adapter, "\(request.displayURL): the browser did not start within \(DurationText.format(Self.launchLimit))")
        default:
            return FetchFailure(.adapter, "\(request.displayURL): the browser failed: \(TerminalText.safe("\(error)", maximumLength: 300))")
        }
    }

    /// Whether `operation` ended without an error within `limit`.
    static func within(_ limit: Duration, on clock: any FetchClock, _ operation: @escaping @Sendable () async throws -> Void) async -> Bool {
        do {
            try await withDeadline(clock.now + limit, on: clock, operation: operation)
            return true
        } catch {
            return false
        }
    }

    /// `task`'s value, or `CancellationError` as soon as the calling task is cancelled (`task`
    /// itself runs on: other renders may be waiting for it).
    static func value(of task: Task<Void, any Error>) async throws {
        let waiter = Locked<CheckedContinuation<Void, any Error>?>(nil)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiter.withLock { $0 = continuation }
                Task {
                    let result = await task.result
                    waiter.withLock { $0.take() }?.resume(with: result)
                }
            }
        } onCancel: {
            waiter.withLock { $0.take() }?.resume(throwing: CancellationError())
        }
    }
}
