import Foundation

/// Fetches one feed over HTTP (or from a local file) and parses it: what the `rss` adapter and
/// `fetchrun probe` share.
package struct FeedFetcher: Sendable {
    /// What one fetch got.
    package enum Result: Sendable {
        /// The server answered 304 to the validators sent: nothing was parsed.
        case notModified(HTTPResponse)
        case feed(Feed, HTTPResponse)
    }

    package var url: String
    /// The URL as the user wrote it, for messages: `${VAR}` expansions may be secrets.
    package var displayURL: String
    package var headers: [(name: String, value: String)]
    package var maxBodyBytes: Int
    package var userAgent: String

    static let accept = "application/rss+xml, application/atom+xml, application/rdf+xml;q=0.9, application/xml;q=0.8, text/xml;q=0.8, */*;q=0.5"

    package init(url: String, displayURL: String? = nil, headers: [(name: String, value: String)] = [], maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes, userAgent: String = HTTPRequest.defaultUserAgent) {
        self.url = url
        self.displayURL = displayURL ?? url
        self.headers = headers
        self.maxBodyBytes = maxBodyBytes
        self.userAgent = userAgent
    }

    package var isFileURL: Bool { url.lowercased().hasPrefix("file:") }

    /// Fetches and parses the feed; sends `validators` back for a conditional GET.
    /// - Throws: ``FetchFailure``: `.network`, `.httpStatus` (with `Retry-After` on 429/503),
    ///   `.parse`; `CancellationError` when the task is cancelled (at the deadline).
    package func fetch(using client: HTTPClient, deadline: ContinuousClock.Instant, validators: HTTPValidators? = nil) async throws -> Result {
        var headers = [(name: "Accept", value: Self.accept)] + self.headers
        if let etag = validators?.etag { headers.append(("If-None-Match", etag)) }
        if let lastModified = validators?.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        let request = HTTPRequest(url: url, headers: headers, deadline: deadline, maxBodyBytes: maxBodyBytes, userAgent: userAgent, allowsFileURL: isFileURL)

        let response: HTTPResponse
        do {
            response = try await client.execute(request)
        } catch let error as HTTPError {
            throw FetchFailure(.network, "\(displayURL): \(error.message)")
        }
        if response.status == 304 { return .notModified(response) }
        guard response.isSuccess else {
            let retryAfter = [429, 503].contains(response.status) ? response.retryAfter() : nil
            var message = "HTTP \(response.status) from \(displayURL)"
            if let retryAfter { message += " (retry after \(DurationText.format(retryAfter)))" }
            throw FetchFailure(.httpStatus, message, status: response.status, retryAfter: retryAfter)
        }
        do {
            let base = isFileURL ? nil : response.effectiveURL
            return .feed(try await FeedParser(baseURL: base).parseOffPool(response.body, charset: response.charset), response)
        } catch let error as FeedParseError {
            throw FetchFailure(.parse, "\(displayURL): \(error)")
        }
    }

    /// The validators to store from a good response; empty when it sent none, so that stale
    /// ones are not sent again.
    package static func validators(from response: HTTPResponse) -> HTTPValidators {
        HTTPValidators(etag: response.headers["etag"], lastModified: response.headers["last-modified"])
    }
}
