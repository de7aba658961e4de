import Crypto
import FetchRunKit
import Foundation
import Hummingbird
import HTTPTypes
import NIOCore

/// Signing in to the dashboard of an endpoint with `token:`. A browser cannot send
/// `Authorization: Bearer …` with a page request, so `/login` takes the token once, in a form,
/// and answers with a cookie (`HttpOnly`, `SameSite=Strict`) that ``AccessCheck`` admits for the
/// dashboard's pages and actions — not for `/metrics` or `/status`, which keep to the header.
///
/// The cookie holds an HMAC of the token, not the token: it reveals nothing of it, stays valid
/// across restarts and ends when the token changes. Without `token:` there is nothing to sign
/// in to, and `/login` sends the browser to `/`.
struct DashboardLogin: Sendable {
    static let cookieName = "fetchrun_dashboard"

    let settings: ListenSettings
    let pages: DashboardPages
    let clock: any FetchClock

    /// The cookie's value for `token`.
    static func session(_ token: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data("fetchrun dashboard session".utf8), using: SymmetricKey(data: Data(token.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// Paths any allowed peer may ask for: the login form and the pages' assets.
    static func isOpen(_ path: String) -> Bool {
        path == "/login" || path.hasPrefix("/assets/")
    }

    /// Paths the session cookie opens: the dashboard's pages and actions.
    static func isPage(_ path: String) -> Bool {
        path == "/" || path == "/outputs" || path.hasPrefix("/outputs/") || path.hasPrefix("/sources/")
    }

    /// The session cookie's value among a `Cookie` header's pairs.
    static func cookie(in header: String?) -> String? {
        guard let header else { return nil }
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == cookieName { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    func add(to router: Router<MonitorRequestContext>) {
        router.get("/login") { _, _ in
            guard settings.token != nil else { return DashboardRoutes.seeOther("/") }
            return DashboardRoutes.page(pages.login(failed: false, frame: frame))
        }
        router.post("/login") { request, _ in
            guard let token = settings.token else { return DashboardRoutes.seeOther("/") }
            guard DashboardRoutes.isSameOrigin(request.head) else {
                return DashboardRoutes.text("refused: the request does not come from this dashboard's own pages\n", status: .forbidden)
            }
            var request = request
            guard let body = try? await request.collectBody(upTo: 4_096) else { return DashboardRoutes.text("the form is too large\n", status: .contentTooLarge) }
            let given = DashboardText.formFields(String(buffer: body))["token"] ?? ""
            guard ListenSettings.same(token, given) else {
                return DashboardRoutes.page(pages.login(failed: true, frame: frame), status: .unauthorized)
            }
            var response = DashboardRoutes.seeOther("/")
            response.headers[.setCookie] = "\(Self.cookieName)=\(Self.session(token)); Path=/; HttpOnly; SameSite=Strict"
            return response
        }
    }

    private var frame: DashboardPages.Frame {
        DashboardPages.Frame(title: "Sign in", now: clock.date, notice: nil, csrf: "")
    }
}
