import FetchRunBrowser
import FetchRunKit
import Logging

extension FetchConfig {
    /// The browser `render: browser` pages go through, as `browser:` says. Nothing starts until
    /// a page asks for it, so a config without such pages never starts one.
    func renderer(http: CurlHTTPClient, logger: Logger = Logger(label: "fetchrun")) -> ChromiumRenderer {
        ChromiumRenderer(settings: browser, clock: http.clock, http: http, logger: logger)
    }
}
