import Foundation

/// `render: browser` on a `page` source: the page is loaded by a browser (the run's
/// ``PageRenderer``), its scripts run and what the source waits for is there, and the document
/// the browser built goes through the same selection as a fetched page.
package struct RenderSettings: Sendable {
    package var wait = RenderWait()
    package var block = BlockedResource.standard
    /// `screenshot: true`: the viewport, or the `css:` selection's element (set by the adapter).
    package var screenshot: ScreenshotArea?
    /// `keep_session: true`: cookies and storage kept from one fetch to the next (a sign-in).
    package var keepsSession = false

    static let options = [
        AdapterOption("render", kind: "plain or browser", default: "plain", "browser: load the page in Chromium, run its scripts, then read it (top-level browser: says which Chromium)"),
        AdapterOption("wait_for", kind: "CSS selector", default: "none", "with render: browser, read the page once this matches (else once the network is idle)"),
        AdapterOption("wait", kind: "duration", default: "none", "with render: browser, wait this much longer before reading, e.g. 2s"),
        AdapterOption("block", kind: "list", default: "[images, fonts, media]", "with render: browser, kinds of requests not made: images, fonts, media, stylesheets, scripts; [] for none"),
        AdapterOption("screenshot", kind: "true or false", default: "false", "with render: browser, keep a PNG of the css: element (or the viewport) with each change"),
        AdapterOption("keep_session", kind: "true or false", default: "false", "with render: browser, keep the page's cookies and storage from one fetch to the next while the browser runs"),
    ]

    private static let browserOnly = ["wait_for", "wait", "block", "screenshot", "keep_session"]

    /// The settings when the source says `render: browser`, else `nil`; mistakes are reported
    /// through `options` with their line:column.
    init?(options: AdapterOptions, fetcher: SourceFetcher) {
        let mode = options.string("render")
        if let mode, !["plain", "browser"].contains(mode) {
            options.report("'render' must be plain or browser, not '\(TerminalText.safe(mode, maximumLength: 40))'", key: "render")
        }
        guard mode == "browser" else {
            for key in Self.browserOnly where options.contains(key) {
                options.report("'\(key)' applies to pages fetched with render: browser", key: key)
            }
            return nil
        }
        if fetcher.isFileURL { options.report("render: browser loads http:// and https:// pages, not files", key: "url") }
        if let proxy = fetcher.transport.proxy, proxy.contains("@") {
            options.report("'proxy': render: browser cannot send a proxy's user name and password; use a proxy without them", key: "proxy")
        }
        if let text = options.string("wait_for") {
            do {
                wait.selector = try CSSSelector(text).description
            } catch {
                options.report("'wait_for': not a CSS selector: \(error)", key: "wait_for")
            }
        }
        wait.settle = options.duration("wait")
        if let kinds = options.stringList("block") {
            var blocked: Set<BlockedResource> = []
            for kind in kinds {
                if let resource = BlockedResource(rawValue: kind) {
                    blocked.insert(resource)
                } else {
                    let known = BlockedResource.allCases.map(\.rawValue).joined(separator: ", ")
                    options.report("'block': '\(TerminalText.safe(kind, maximumLength: 40))' is not one of \(known)", key: "block")
                }
            }
            block = blocked
        }
        if options.boolean("screenshot") == true { screenshot = .viewport }
        keepsSession = options.boolean("keep_session") ?? false
    }

    /// The request for `fetcher`'s page: its URL, headers, cookies, user agent and proxy.
    func request(for fetcher: SourceFetcher, source: String) -> RenderRequest {
        var request = RenderRequest(url: fetcher.url, displayURL: fetcher.displayURL)
        request.headers = fetcher.headers
        request.cookies = fetcher.transport.cookies
        // The browser's own unless the source set one: a page serves a browser as a browser.
        request.userAgent = fetcher.userAgent == HTTPRequest.defaultUserAgent ? nil : fetcher.userAgent
        request.proxy = fetcher.transport.proxy
        request.wait = wait
        request.block = block
        request.screenshot = screenshot
        request.maxBodyBytes = fetcher.maxBodyBytes
        request.session = keepsSession ? source : nil
        return request
    }

    /// Renders the page and reads it with `parse`, as ``SourceFetcher/fetch(_:parse:)`` reads
    /// a fetched one: the same document as last time is ``FetchOutput/unchanged``.
    func fetch(_ context: FetchContext, fetcher: SourceFetcher, parse: @escaping @Sendable (HTTPResponse, CancellationFlag) throws -> SourceFetcher.Parsed) async throws -> FetchOutput {
        guard let renderer = context.renderer else {
            throw FetchFailure(.adapter, "\(fetcher.displayURL): render: browser, but this command has no browser to render with")
        }
        let page = try await renderer.render(request(for: fetcher, source: context.sourceName))
        let body = Data(page.html.utf8)
        let bodyHash = SourceFetcher.hash(body)
        if bodyHash == context.lastBodyHash {
            var output = FetchOutput(items: [], notes: page.notes, unchanged: true, bodyHash: bodyHash)
            output.rendered = (page.finalURL, body.count)
            return output
        }
        let response = HTTPResponse(status: page.status ?? 200, headers: ["content-type": "text/html; charset=utf-8"], body: body, effectiveURL: page.finalURL)
        let parsed = try await runOffPool(name: "fetchrun-parse") { cancellation in try parse(response, cancellation) }
        var output = FetchOutput(items: parsed.items, adapterState: parsed.adapterState, notes: page.notes + parsed.notes, bodyHash: bodyHash)
        output.screenshot = page.screenshot
        output.rendered = (page.finalURL, body.count)
        return output
    }
}
