import FetchRunCore
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
    /// Which HTTP the final response came over.
    public var httpVersion: HTTPVersion
    /// Every redirect on the way was permanent (301 or 308): the URL has moved for good.
    public var redirectsWerePermanent: Bool
    /// How long the request waited for its host's slot before it was sent (fetchrun's
    /// per-host limits); not part of ``duration``.
    public var queueWait: Duration = .zero
    /// When the response came, on the client's clock: what a `Retry-After` or `Expires` date
    /// is measured from. `nil` for a response made by hand.
    public var receivedAt: Date?
    /// Where a redirect that was not followed leads (absolute), when the request did not let
    /// curl follow it.
    package var redirectURL: String?
    /// What was not sent after a redirect to another origin (or from https to http): header
    /// names, `cookies`, `username and password`. Empty when nothing was held back.
    package var withheldAfterRedirect: [String] = []

    public enum HTTPVersion: Sendable, Hashable {
        /// No HTTP at all: a `file:` URL.
        case none
        case http1
        case http2
    }

    public init(status: Int, headers: [String: String], body: Data, effectiveURL: String, redirectCount: Int = 0, duration: Duration = .zero, httpVersion: HTTPVersion = .http1, redirectsWerePermanent: Bool = false) {
        self.httpVersion = httpVersion
        self.redirectsWerePermanent = redirectsWerePermanent
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

    /// `Retry-After` as a duration: delay-seconds or an HTTP date, relative to `now` (by
    /// default ``receivedAt``), clamped to `0...longestRetryAfter`. `nil` when the header is
    /// missing or is neither form (a negative number is neither), and for a date when no time
    /// is known to measure it from.
    public func retryAfter(now: Date? = nil) -> Duration? {
        guard let value = headers["retry-after"]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        let longest = Self.longestRetryAfter.components.seconds
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // More digits than an Int holds is simply "very long".
            return .seconds(min(Int64(value) ?? longest, longest))
        }
        guard let date = DateParser.rfc822(value), let now = now ?? receivedAt else { return nil }
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
        /// The TLS handshake failed or the server's certificate is not trusted.
        case tls
        /// The request waited `http.queue_timeout` for its host's slot and was not sent.
        case queueTimeout
        /// The host asked to be left alone (429/503 with `Retry-After` to another request) for
        /// longer than the queue waits; see ``HTTPError/retryAfter``.
        case hostBackingOff(status: Int)
        /// The host's breaker is open: requests in a row got nothing from it, and this one was
        /// not sent (see ``CurlHTTPClient/execute(_:)``).
        case hostUnreachable
    }

    public var kind: Kind
    public var message: String
    /// For ``Kind/hostBackingOff(status:)``: how long until the host may be asked again.
    public var retryAfter: Duration?
    /// The host gave nothing: the connection was refused or timed out, or not one byte of an
    /// answer came before the deadline. What the per-host breaker counts.
    package var hostWasSilent = false

    public init(_ kind: Kind, _ message: String, retryAfter: Duration? = nil) {
        self.kind = kind
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { message }
}
