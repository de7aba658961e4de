import Foundation

/// The top-level `browser:` block: the Chromium that `render: browser` pages are fetched
/// through — started by fetchrun (`command:`, by default `chromium` found on `PATH`) or one
/// that already runs elsewhere (`url:`) — and how many pages it renders at once (`tabs:`).
package struct BrowserSettings: Sendable, Equatable {
    /// The program and its first arguments; fetchrun adds the ones it needs (headless, a
    /// profile of its own, the DevTools port). `nil`: the first of ``defaultCommands`` on `PATH`.
    package var command: [String]?
    /// A running browser's DevTools endpoint: `ws://…/devtools/browser/…`, or `http://host:port`
    /// whose `/json/version` names it. Set, fetchrun starts no browser.
    package var url: String?
    /// The most pages rendered at once; the others wait for a tab within their deadline.
    package var tabs = 4

    package static let defaultCommands = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]

    package init(command: [String]? = nil, url: String? = nil, tabs: Int = 4) {
        self.command = command
        self.url = url
        self.tabs = tabs
    }
}

extension FetchConfig {
    /// Whether any source is fetched with `render: browser`: no browser is started otherwise.
    package var needsBrowser: Bool {
        sources.contains { $0.rendersInBrowser }
    }
}

extension SourceConfig {
    /// Whether the source is a page fetched with `render: browser`.
    package var rendersInBrowser: Bool {
        (adapter as? PageAdapter)?.render != nil
    }
}
