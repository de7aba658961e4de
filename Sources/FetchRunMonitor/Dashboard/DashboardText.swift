import FetchRunKit
import Foundation

/// What the dashboard's pages say of values from outside, before the templates escape them:
/// which links may be links, how times read, how a query string is written.
enum DashboardText {
    /// `text` as a link target when it is an absolute `http:` or `https:` URL without spaces or
    /// control characters; `nil` for anything else (`javascript:`, `data:`, relative paths, …),
    /// which the pages show as text instead.
    static func link(_ text: String?) -> String? {
        MarkupText.webLink(text)
    }

    /// A time as the templates show it: `iso` for `<time datetime>`, `text` in UTC, and
    /// `relative` to `now` ("5 min ago", "in 2 h").
    static func time(_ date: Date?, now: Date) -> [String: Any]? {
        guard let date else { return nil }
        return ["iso": CalendarText.rfc3339String(from: date), "text": absolute(date), "relative": relative(date, now: now)]
    }

    /// A duration as a config writes it; whole days as days (`90d`, not `2160h`).
    static func duration(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        if seconds >= 86_400, seconds % 86_400 == 0, duration.components.attoseconds == 0 { return "\(seconds / 86_400)d" }
        return DurationText.format(duration)
    }

    static func absolute(_ date: Date) -> String {
        let iso = CalendarText.rfc3339String(from: date)
        // 2026-11-29T12:00:00Z → 2026-11-29 12:00:00 UTC
        return iso.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
    }

    static func relative(_ date: Date, now: Date) -> String {
        let seconds = date.timeIntervalSince(now)
        let magnitude = abs(seconds)
        let amount: String
        switch magnitude {
        case ..<5: return "now"
        case ..<90: amount = "\(Int(magnitude.rounded())) s"
        case ..<5_400: amount = "\(Int((magnitude / 60).rounded())) min"
        case ..<172_800: amount = "\(Int((magnitude / 3_600).rounded())) h"
        default: amount = "\(Int((magnitude / 86_400).rounded())) d"
        }
        return seconds < 0 ? "\(amount) ago" : "in \(amount)"
    }

    /// `path` with `parameters` as its query, each percent-encoded.
    static func href(_ path: String, _ parameters: [(String, String)]) -> String {
        guard !parameters.isEmpty else { return path }
        return path + "?" + parameters.map { "\(component($0.0))=\(component($0.1))" }.joined(separator: "&")
    }

    /// One path segment or query value, percent-encoded: only unreserved characters stay.
    static func component(_ text: String) -> String {
        HTTPText.percentEncodedComponent(text)
    }

    /// A source's page.
    static func sourcePath(_ name: String) -> String {
        "/sources/" + component(name)
    }

    /// A form's `application/x-www-form-urlencoded` body as fields (the last of a name wins).
    static func formFields(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}
