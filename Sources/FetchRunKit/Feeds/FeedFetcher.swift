import Foundation
import Logging

/// Fetches one feed over HTTP (or from a local file) and parses it: what the `rss` adapter and
/// `fetchrun probe` share.
package struct FeedFetcher: Sendable {
    /// What one fetch got.
    package enum Result: Sendable {
        /// The server answered 304 to the validators sent: nothing was parsed.
        case notModified(HTTPResponse)
        /// The body is the one fetched last time (its hash is `unlessBodyHash`): nothing was parsed.
        case sameBody(HTTPResponse)
        /// The parsed feed, and the hash of the body it was parsed from.
        case feed(Feed, HTTPResponse, bodyHash: String)
    }

    package var url: String
    /// The URL as the user wrote it, for messages: `${VAR}` expansions may be secrets.
    package var displayURL: String
    package var headers: [(name: String, value: String)]
    package var maxBodyBytes: Int
    package var userAgent: String
    package var transport = HTTPTransport()
    package var connectTimeout: Duration = .seconds(10)

    package static let accept = "application/rss+xml, application/atom+xml, application/feed+json, application/rdf+xml;q=0.9, application/xml;q=0.8, text/xml;q=0.8, application/json;q=0.8, */*;q=0.5"

    package init(url: String, displayURL: String? = nil, headers: [(name: String, value: String)] = [], maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes, userAgent: String = HTTPRequest.defaultUserAgent) {
        self.url = url
        self.displayURL = displayURL ?? url
        self.headers = headers
        self.maxBodyBytes = maxBodyBytes
        self.userAgent = userAgent
    }

    package var isFileURL: Bool { url.lowercased().hasPrefix("file:") }

    /// Fetches and parses the feed; sends `validators` back for a conditional GET, and parses
    /// nothing when the body's hash is `unlessBodyHash` (a server without validators that sends
    /// the same feed again).
    /// - Throws: ``FetchFailure``: `.network`, `.httpStatus` (with `Retry-After` on 429/503),
    ///   `.parse`; `CancellationError` when the task is cancelled (at the deadline).
    /// - Parameter logger: at `info` (`-v`), one line per request: method, URL (as written,
    ///   credentials removed), status, bytes, time; at `debug` (`-vv`) the request's and the
    ///   response's headers too, with secrets masked (``HTTPText/maskedHeaderValue(name:value:)``).
    package func fetch(using client: CurlHTTPClient, deadline: ContinuousClock.Instant, validators: HTTPValidators? = nil, unlessBodyHash: String? = nil, logger: Logger? = nil) async throws -> Result {
        var headers = [(name: "Accept", value: Self.accept)] + self.headers
        if let etag = validators?.etag { headers.append(("If-None-Match", etag)) }
        if let lastModified = validators?.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        let request = HTTPRequest(url: url, headers: headers, deadline: deadline, maxBodyBytes: maxBodyBytes, connectTimeout: connectTimeout, userAgent: userAgent, allowsFileURL: isFileURL, transport: transport)
        if let logger, logger.logLevel <= .debug {
            for header in [(name: "User-Agent", value: userAgent)] + headers {
                logger.debug("> \(header.name): \(HTTPText.maskedHeaderValue(name: header.name, value: header.value))")
            }
        }

        let response: HTTPResponse
        let started = ContinuousClock.now
        do {
            response = try await client.execute(request)
        } catch let error as HTTPError {
            logger?.info("GET \(displayURL) failed after \(DurationText.format(ContinuousClock.now - started)): \(error.message)")
            if case .hostBackingOff(let status) = error.kind {
                // Another feed's 429/503 holds the whole host back: scheduled like its own would be.
                throw FetchFailure(.httpStatus, "\(displayURL): \(error.message)", status: status, retryAfter: error.retryAfter)
            }
            if case .hostUnreachable = error.kind {
                throw FetchFailure(.unreachable, "\(displayURL): \(error.message)")
            }
            throw FetchFailure(.network, "\(displayURL): \(error.message)")
        }
        if let logger {
            let status = response.status == 0 ? "file" : "\(response.status)"
            let redirects = response.redirectCount > 0 ? ", \(response.redirectCount) redirect\(response.redirectCount == 1 ? "" : "s") to \(response.effectiveURL)" : ""
            let version = response.httpVersion == .http2 ? " over HTTP/2" : ""
            let waited = response.queueWait > .zero ? ", after waiting \(DurationText.format(response.queueWait)) for its host" : ""
            logger.info("GET \(displayURL) → \(status), \(response.body.count) bytes in \(DurationText.format(response.duration))\(version)\(redirects)\(waited)")
            if !response.withheldAfterRedirect.isEmpty {
                logger.info("redirected to another origin (\(HTTPText.origin(of: response.effectiveURL) ?? response.effectiveURL)): not sent there: \(response.withheldAfterRedirect.map { TerminalText.safe($0) }.joined(separator: ", "))")
            }
            if logger.logLevel <= .debug {
                for name in response.headers.keys.sorted() {
                    logger.debug("< \(name): \(HTTPText.maskedHeaderValue(name: name, value: response.headers[name]!))")
                }
            }
        }
        if response.status == 304 { return .notModified(response) }
        guard response.isSuccess else {
            let retryAfter = [429, 503].contains(response.status) ? response.retryAfter() : nil
            var message = "HTTP \(response.status) from \(displayURL)"
            if let retryAfter { message += " (retry after \(DurationText.format(retryAfter)))" }
            throw FetchFailure(.httpStatus, message, status: response.status, retryAfter: retryAfter)
        }
        let bodyHash = Self.hash(response.body)
        if bodyHash == unlessBodyHash { return .sameBody(response) }
        do {
            let base = isFileURL ? nil : response.effectiveURL
            return .feed(try await FeedParser(baseURL: base).parseOffPool(response.body, charset: response.charset), response, bodyHash: bodyHash)
        } catch let error as FeedParseError {
            throw FetchFailure(.parse, "\(displayURL): \(error)")
        }
    }

    /// A 64-bit fingerprint of a body, as 16 hex digits: eight bytes a step, each mixed in by
    /// multiplication, the length folded in, and MurmurHash3's finaliser. Stable across runs
    /// and machines (unlike `Hasher`), and fast enough to run on every body (a 40 KB feed in
    /// microseconds). It only tells "the same feed again" apart; nothing relies on it
    /// against an adversary, who could as well send different bytes with the same items.
    package static func hash(_ body: Data) -> String {
        var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(body.count)
        body.withUnsafeBytes { bytes in
            var offset = 0
            while offset + 8 <= bytes.count {
                let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                hash = (hash ^ word) &* 0xFF51_AFD7_ED55_8CCD
                hash ^= hash >> 32
                offset += 8
            }
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail = tail << 8 | UInt64(bytes[index]) }
            hash = (hash ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        }
        hash ^= hash >> 33
        hash &*= 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        hash &*= 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The validators to store from a good response; empty when it sent none, so that stale
    /// ones are not sent again.
    package static func validators(from response: HTTPResponse) -> HTTPValidators {
        HTTPValidators(etag: response.headers["etag"], lastModified: response.headers["last-modified"])
    }
}
