import Foundation

/// The final response of a transfer, after any redirects.
public struct HTTPResponse: Sendable {
    /// The HTTP status; 0 for a `file:` URL, which has none.
    public var status: Int
    /// The final response's headers; names lower-cased, repeated headers joined with ", ".
    public var headers: [String: String]
    /// The body, decompressed.
    public var body: Data
    /// The URL after redirects.
    public var effectiveURL: String
    public var redirectCount: Int
    /// From the moment the transfer was handed to curl until it completed.
    public var duration: Duration

    public init(status: Int, headers: [String: String], body: Data, effectiveURL: String, redirectCount: Int = 0, duration: Duration = .zero) {
        self.status = status
        self.headers = headers
        self.body = body
        self.effectiveURL = effectiveURL
        self.redirectCount = redirectCount
        self.duration = duration
    }

    public var isSuccess: Bool { status == 0 || (200..<300).contains(status) }

    /// The `charset` parameter of `Content-Type`, if any.
    public var charset: String? {
        guard let contentType = headers["content-type"] else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "charset" {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
            }
        }
        return nil
    }

    /// The longest `Retry-After` honoured: a day. A longer one is more likely a mistake (or
    /// hostile) than a plan, and every number from a server is clamped before it becomes a
    /// `Duration`, so that no value can overflow the arithmetic that schedules the next fetch.
    public static let longestRetryAfter: Duration = .seconds(86_400)

    /// `Retry-After` as a duration: delay-seconds or an HTTP date, relative to `now`, clamped
    /// to `0...longestRetryAfter`. `nil` when the header is missing or is neither form (a
    /// negative number is neither).
    public func retryAfter(now: Date = Date()) -> Duration? {
        guard let value = headers["retry-after"]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        let longest = Self.longestRetryAfter.components.seconds
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // More digits than an Int holds is simply "very long".
            return .seconds(min(Int64(value) ?? longest, longest))
        }
        guard let date = DateParser.rfc822(value) else { return nil }
        let seconds = date.timeIntervalSince(now)
        guard seconds.isFinite else { return nil }
        return .seconds(Int64(min(max(0, seconds), Double(longest)).rounded(.up)))
    }
}

/// Why a transfer failed, in words a report can show.
public struct HTTPError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// DNS, connect, TLS, reset, a time-out inside curl.
        case network
        /// The body passed the size cap.
        case bodyTooLarge
        /// Too many redirects, a redirect loop, or a redirect to a scheme other than http/https.
        case redirect
        /// The URL itself cannot be fetched (bad syntax, a scheme fetchrun does not allow).
        case invalidURL
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
