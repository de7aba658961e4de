import Crypto
import FetchRunKit
import Foundation
import Hummingbird
import HTTPTypes
import NIOCore

/// The dashboard on the `--listen` endpoint (`listen: { dashboard: on | read_only | off }`):
///
/// - `GET /`: every source — health, last checked, last change, next check, failures in a row,
///   last error — sorted, filtered and paged by its query (``SourceTable/Query``), with totals.
/// - `GET /sources/NAME`: one source's settings, last fetches, recent items and history, its
///   diffs inline or side by side (`?diff=split`).
/// - `GET /outputs`: every output's deliveries: made, pending, failing, given up.
/// - `GET /screenshots/SOURCE/FILE`: a change's screenshot, as its history record names it.
/// - `POST /sources/NAME/check` ("check now") and `POST /outputs/NAME/retry` (its given-up
///   deliveries): only when the dashboard is `on`, only from a page of the same origin, and
///   only with the form token the pages carry — which this process made at its start, so a page
///   of another site can neither read nor guess it.
///
/// Every response says `Content-Security-Policy: default-src 'self'` (and frames, forms and
/// `<base>` kept to the same origin): the pages load their stylesheet and script from
/// `/assets/` and nothing else. The store's answers are awaited ``storeLimit`` at most.
struct DashboardRoutes: Sendable {
    static let storeLimit: Duration = .seconds(10)
    static let contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    /// What the dashboard asks of the command that serves it.
    let probes: MonitorEndpoint.Probes
    let pages: DashboardPages
    /// The form token: 32 random bytes, hex.
    let formToken: String

    /// - Throws: when a template does not compile (a programming error, caught by the tests).
    init(probes: MonitorEndpoint.Probes, mode: ListenSettings.DashboardMode) throws {
        self.probes = probes
        pages = try DashboardPages(readOnly: mode == .readOnly || probes.checkNow == nil)
        formToken = SymmetricKey(size: .bits256).withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
    }

    func add(to router: Router<MonitorRequestContext>) {
        router.get("/") { request, _ in await sourcesPage(request) }
        router.get("/sources/{name}") { request, context in await sourcePage(request, name: Self.decoded(context.parameters.get("name"))) }
        router.get("/outputs") { request, _ in await outputsPage(request) }
        router.get("/screenshots/{source}/{file}") { _, context in
            await screenshot(source: Self.decoded(context.parameters.get("source")), file: Self.decoded(context.parameters.get("file")))
        }
        router.get("/assets/dashboard.css") { _, _ in Self.asset(DashboardAssets.css, type: "text/css; charset=utf-8") }
        router.get("/assets/dashboard.js") { _, _ in Self.asset(DashboardAssets.javascript, type: "text/javascript; charset=utf-8") }
        router.get("/assets/icon.svg") { _, _ in Self.asset(DashboardAssets.icon, type: "image/svg+xml") }
        router.post("/sources/{name}/check") { request, context in
            await checkNow(request, name: Self.decoded(context.parameters.get("name")))
        }
        router.post("/outputs/{name}/retry") { request, context in
            await retry(request, output: Self.decoded(context.parameters.get("name")))
        }
    }

    // MARK: Pages

    /// The store's answer, or the error that it took longer than ``storeLimit``.
    private func fromStore<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withDeadline(probes.clock.now + Self.storeLimit, on: probes.clock, operation: operation)
    }

    private func frame(_ title: String, notice: String? = nil) -> DashboardPages.Frame {
        DashboardPages.Frame(title: title, now: probes.clock.date, notice: notice, csrf: formToken)
    }

    private func sourcesPage(_ request: Request) async -> Response {
        let parameters = DashboardText.formFields(request.uri.query ?? "")
        let document: StatusDocument
        do {
            let status = probes.status
            document = try await fromStore { try await status() }
        } catch {
            return Self.unavailable(error)
        }
        return Self.page(pages.sources(document, query: SourceTable.Query(parameters: parameters), frame: frame("Sources", notice: Self.notice(parameters))))
    }

    private func sourcePage(_ request: Request, name: String?) async -> Response {
        let parameters = DashboardText.formFields(request.uri.query ?? "")
        guard let name, let source = probes.config.snapshot.sources.first(where: { $0.name == name }) else {
            return Self.page(pages.notFound("No source has that name.", frame: frame("Not found")), status: .notFound)
        }
        let (state, records): (SourceState, [ChangeRecord])
        do {
            let status = probes.status, history = probes.history
            (state, records) = try await fromStore {
                async let document = status()
                async let records = history(HistoryQuery(sources: [name], limit: DashboardPages.records))
                return (try await document.state(of: source), try await records)
            }
        } catch {
            return Self.unavailable(error)
        }
        let html = pages.source(source, state: state, records: records, sideBySide: parameters["diff"] == "split", frame: frame(name, notice: Self.notice(parameters)))
        return Self.page(html)
    }

    /// A change's screenshot (`screenshot: true`): a configured source's only, by a name of the
    /// form the state folder writes.
    private func screenshot(source: String?, file: String?) async -> Response {
        guard let source, let file, probes.config.snapshot.sources.contains(where: { $0.name == source }),
              let png = await probes.screenshot(source + "/" + file) else {
            return Self.page(pages.notFound("No such screenshot.", frame: frame("Not found")), status: .notFound)
        }
        var headers = Self.headers(type: "image/png")
        headers[.cacheControl] = "private, max-age=86400"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: png)))
    }

    private func outputsPage(_ request: Request) async -> Response {
        let parameters = DashboardText.formFields(request.uri.query ?? "")
        let outbox: DashboardOutbox
        do {
            let read = probes.outbox
            outbox = try await fromStore { try await read() }
        } catch {
            return Self.unavailable(error)
        }
        return Self.page(pages.outputs(outbox, frame: frame("Outputs", notice: Self.notice(parameters))))
    }

    /// The line a page shows after an action sent the browser back to it (`?done=…`): from
    /// this fixed list only, so that a link cannot make the page say something else.
    static func notice(_ parameters: [String: String]) -> String? {
        switch parameters["done"] {
        case "due": return "Checking now: the source is due and is fetched as soon as a place is free."
        case "in-flight": return "The source is being fetched already."
        case "not-watched": return "That source is not watched (interval: never, or no longer in the config)."
        case "stopping": return "fetchrun is stopping; nothing new starts."
        case "retried":
            let count = parameters["count"].flatMap(Int.init) ?? 0
            return "\(count) given-up deliver\(count == 1 ? "y is" : "ies are") due again."
        default: return nil
        }
    }

    // MARK: Actions

    private func checkNow(_ request: Request, name: String?) async -> Response {
        if let refusal = await refusal(request) { return refusal }
        guard let checkNow = probes.checkNow, let name, probes.config.snapshot.sources.contains(where: { $0.name == name }) else {
            return Self.text("no such source\n", status: .notFound)
        }
        let done: String
        do {
            switch try await fromStore({ try await checkNow(name) }) {
            case .due: done = "due"
            case .inFlight: done = "in-flight"
            case .notWatched: done = "not-watched"
            case .stopping: done = "stopping"
            }
        } catch {
            return Self.unavailable(error)
        }
        return Self.seeOther(DashboardText.href(DashboardText.sourcePath(name), [("done", done)]))
    }

    private func retry(_ request: Request, output: String?) async -> Response {
        if let refusal = await refusal(request) { return refusal }
        guard let retry = probes.retry, let output, probes.config.snapshot.outputs.contains(where: { $0.name == output }) else {
            return Self.text("no such output\n", status: .notFound)
        }
        let count: Int
        do {
            count = try await fromStore { try await retry(output) }
        } catch {
            return Self.unavailable(error)
        }
        return Self.seeOther(DashboardText.href("/outputs", [("done", "retried"), ("count", String(count))]))
    }

    /// Why an action is refused, or `nil`: the dashboard is read-only, the request comes from
    /// another origin, or its form token is missing or wrong.
    private func refusal(_ request: Request) async -> Response? {
        guard !pages.readOnly else { return Self.text("the dashboard is read-only\n", status: .forbidden) }
        guard Self.isSameOrigin(request.head) else { return Self.text("refused: the request does not come from this dashboard's own pages\n", status: .forbidden) }
        var request = request
        guard let body = try? await request.collectBody(upTo: 4_096) else { return Self.text("the form is too large\n", status: .contentTooLarge) }
        let fields = DashboardText.formFields(String(buffer: body))
        guard ListenSettings.same(formToken, fields["csrf"] ?? "") else { return Self.text("refused: the form token is missing or out of date; reload the page\n", status: .forbidden) }
        return nil
    }

    /// Whether the browser says the request comes from a page of this host: `Sec-Fetch-Site`
    /// when sent, and `Origin` (or, without it, `Referer`) naming this host. A request that
    /// says neither is refused: every browser that runs the pages sends one.
    static func isSameOrigin(_ head: HTTPRequest) -> Bool {
        guard let host = head.authority, !host.isEmpty else { return false }
        if let site = head.headerFields[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin" { return false }
        let own = ["http://\(host)", "https://\(host)"]
        if let origin = head.headerFields[.origin] { return own.contains(origin) }
        if let referer = head.headerFields[.referer] { return own.contains { referer.hasPrefix($0 + "/") } }
        return false
    }

    // MARK: Responses

    static func decoded(_ segment: String?) -> String? {
        segment.flatMap { $0.removingPercentEncoding }
    }

    static func headers(type: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        // Nothing of the dashboard's addresses reaches another site; its own pages see them, and
        // a browser under `no-referrer` would send a form's `Origin` as `null`.
        headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        return headers
    }

    static func page(_ html: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = headers(type: "text/html; charset=utf-8")
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    static func asset(_ text: String, type: String) -> Response {
        var headers = headers(type: type)
        headers[.cacheControl] = "max-age=300"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func text(_ body: String, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: headers(type: "text/plain; charset=utf-8"), body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    static func seeOther(_ location: String) -> Response {
        var headers = headers(type: "text/plain; charset=utf-8")
        headers[.location] = location
        return Response(status: .seeOther, headers: headers)
    }

    static func unavailable(_ error: any Error) -> Response {
        text("the state store did not answer: \(TerminalText.safe("\(error)"))\n", status: .serviceUnavailable)
    }
}
