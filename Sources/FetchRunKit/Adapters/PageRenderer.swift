import Foundation

/// What fetches a page through a real browser for `render: browser`: loads it, runs its
/// scripts, waits as the source says, and hands back the document as the browser built it.
///
/// fetchrun's own is Chromium over the DevTools Protocol (the `FetchRunBrowser` target, which
/// the command line hands to the engine through ``FetchEngine/Settings``); the kit itself
/// starts no browser and builds no WebSocket client.
///
/// The contract:
/// - ``render(_:)`` never shares cookies, storage or cache between two calls — unless both
///   carry the same ``RenderRequest/session`` — and leaves nothing of the page open when it
///   returns or throws (tabs, popups, dialogs).
/// - Cancellation is the deadline: when the fetch's task is cancelled, the render stops at
///   once — wherever it is (starting the browser, waiting for a tab, navigating, waiting,
///   reading) — closes what it opened, and throws `CancellationError`.
/// - Errors are ``FetchFailure``s: `.network` when the page could not be loaded, `.httpStatus`
///   for a document answered with an error status, `.adapter` when the browser failed (it did
///   not start, crashed, or stopped answering — then it is started again for the next render).
/// - ``shutdown()`` stops what the renderer started (a browser and every process of it) and
///   waits until it is gone. A render after it starts anew.
package protocol PageRenderer: Sendable {
    func render(_ request: RenderRequest) async throws -> RenderedPage
    func shutdown() async
}

/// One page to render, with the source's HTTP options and what to wait for.
package struct RenderRequest: Sendable {
    /// An `http` or `https` URL.
    package var url: String
    /// The URL as the config writes it (credentials and `${VAR}` values left out), for messages.
    package var displayURL: String
    /// Extra request headers: sent with the requests to the page's own origin only.
    package var headers: [(name: String, value: String)] = []
    /// Cookies set for the page's URL before it loads.
    package var cookies: [String: String] = [:]
    /// The `User-Agent` to send instead of the browser's; `nil` keeps the browser's.
    package var userAgent: String?
    /// `scheme://host:port` of a proxy for this page alone; `nil`: the browser's own.
    package var proxy: String?
    /// What the page must show before it is read.
    package var wait = RenderWait()
    /// Kinds of requests the page's loading may not make: images, fonts, media by default.
    package var block: Set<BlockedResource> = BlockedResource.standard
    /// Whether to photograph the page, and which part: ``RenderedPage/screenshot``.
    package var screenshot: ScreenshotArea?
    /// The most bytes of HTML taken; a larger document fails the fetch.
    package var maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes
    /// `keep_session: true`: the source's name, whose browser context — cookies, storage,
    /// cache — is kept from one render to its next while the browser runs. `nil`: a fresh
    /// context for each render.
    package var session: String?

    package init(url: String, displayURL: String? = nil) {
        self.url = url
        self.displayURL = displayURL ?? url
    }
}

/// When a rendered page is read: once `selector` matches (when given) — else once it has
/// loaded and the network has been idle for half a second — and then after `settle` more.
package struct RenderWait: Sendable, Equatable {
    /// `wait_for:`, a CSS selector (checked when the config loads).
    package var selector: String?
    /// `wait:`, a fixed time after the page is ready, for what a timer adds.
    package var settle: Duration?

    package init(selector: String? = nil, settle: Duration? = nil) {
        self.selector = selector
        self.settle = settle
    }

    /// What the render waits for, for a message: "'#list li' to match", "the network to go idle".
    package var description: String {
        let ready = selector.map { "'\($0)' to match" } ?? "the page to load and the network to go idle"
        return settle.map { "\(ready), then \(DurationText.format($0))" } ?? ready
    }
}

/// A kind of request a rendered page may be kept from making (`block:`).
package enum BlockedResource: String, Sendable, CaseIterable, Hashable {
    case images, fonts, media, stylesheets, scripts

    /// What `block:` is when the source does not say: what a page's text never needs.
    package static let standard: Set<BlockedResource> = [.images, .fonts, .media]
}

/// What a screenshot shows.
package enum ScreenshotArea: Sendable, Equatable {
    /// The first element the CSS selector matches (the source's `css:`), else the viewport.
    case element(String)
    case viewport
}

/// The page as the browser left it.
package struct RenderedPage: Sendable {
    /// `document.documentElement.outerHTML`, read through the protocol (a page's script
    /// cannot change what this reads).
    package var html: String
    /// Where the page ended up, after redirects and scripts that navigated.
    package var finalURL: String
    /// The main document's HTTP status, when the browser reports one.
    package var status: Int?
    /// A PNG of ``RenderRequest/screenshot``'s area, when asked and within its bounds.
    package var screenshot: Data?
    /// What happened on the way worth a line in the report: dialogs dismissed, popups
    /// closed, requests blocked, a screenshot left out.
    package var notes: [String] = []

    package init(html: String, finalURL: String, status: Int? = nil, screenshot: Data? = nil, notes: [String] = []) {
        self.html = html
        self.finalURL = finalURL
        self.status = status
        self.screenshot = screenshot
        self.notes = notes
    }
}
