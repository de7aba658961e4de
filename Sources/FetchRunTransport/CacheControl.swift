import FetchRunCore
import Foundation

/// What a response says about caching it, as far as a feed reader cares: how long it stays
/// fresh, and whether it may be kept at all.
///
/// Freshness is `max-age` (less the response's `Age`), else `Expires` against the response's
/// `Date` (or now, without one). `no-cache` and `must-revalidate` say nothing against polling
/// again, so they do not shorten anything; `no-store` forbids keeping the validators. Every
/// number from the server is clamped to a week, so no value can overflow the scheduling
/// arithmetic, and a malformed directive is ignored.
package struct CacheControl: Equatable {
    package var freshFor: Duration?
    package var noStore = false

    /// A week: a feed that says it stays fresh longer is more likely wrong than right.
    static let longestFreshness: Duration = .seconds(7 * 86_400)

    /// Measured from when the response came (``HTTPResponse/receivedAt``).
    package init(_ response: HTTPResponse) {
        self.init(headers: response.headers, now: response.receivedAt)
    }

    /// `now`: when the response came, for an `Expires` without a `Date`.
    package init(headers: [String: String], now: Date?) {
        let longest = Self.longestFreshness.components.seconds
        var maxAge: Int64?
        for directive in (headers["cache-control"] ?? "").split(separator: ",") {
            // Empty pieces kept, so a bare "=" from the server still has a name (an empty one).
            let parts = directive.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            switch parts[0].lowercased() {
            case "no-store":
                noStore = true
            case "max-age" where parts.count == 2:
                let digits = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                if !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                    maxAge = min(Int64(digits) ?? longest, longest)
                }
            default:
                break
            }
        }
        if let maxAge {
            let age = headers["age"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }.map { min(max(0, $0), longest) } ?? 0
            freshFor = .seconds(max(0, maxAge - age))
        } else if let expiresText = headers["expires"] {
            // An invalid Expires (often "0" or "-1") means already expired: nothing to wait for.
            if let expires = DateParser.rfc822(expiresText) {
                // Measured from the server's own Date, else from when the answer came.
                if let reference = headers["date"].flatMap(DateParser.rfc822) ?? now {
                    let seconds = expires.timeIntervalSince(reference)
                    if seconds.isFinite { freshFor = .seconds(Int64(min(max(0, seconds), Double(longest)))) }
                }
            }
        }
        if freshFor == .zero { freshFor = nil }
    }
}
