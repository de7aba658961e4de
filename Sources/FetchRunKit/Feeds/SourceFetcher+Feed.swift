import Logging

extension SourceFetcher {
    /// What one fetch of a feed got.
    package enum FeedResult: Sendable {
        /// The server answered 304 to the validators sent: nothing was parsed.
        case notModified(HTTPResponse)
        /// The body is the one fetched last time (its hash is `unlessBodyHash`): nothing was parsed.
        case sameBody(HTTPResponse)
        /// The parsed feed, and the hash of the body it was parsed from.
        case feed(Feed, HTTPResponse, bodyHash: String)
    }

    /// Fetches the body (``fetchBody(using:deadline:validators:unlessBodyHash:logger:)``) and
    /// parses it as a feed, off the cooperative pool.
    /// - Throws: what `fetchBody` throws, and ``FetchFailure`` `.parse` for a body that is not a feed.
    package func fetch(using client: any HTTPExchange, deadline: ContinuousClock.Instant, budget: FetchDeadline? = nil, validators: HTTPValidators? = nil, unlessBodyHash: String? = nil, logger: Logger? = nil) async throws -> FeedResult {
        switch try await fetchBody(using: client, deadline: deadline, budget: budget, validators: validators, unlessBodyHash: unlessBodyHash, logger: logger) {
        case .notModified(let response): return .notModified(response)
        case .sameBody(let response): return .sameBody(response)
        case .new(let response, let bodyHash):
            do {
                let base = isFileURL ? nil : response.effectiveURL
                return .feed(try await FeedParser(baseURL: base).parseOffPool(response.body, charset: response.charset), response, bodyHash: bodyHash)
            } catch let error as FeedParseError {
                throw FetchFailure(.parse, "\(displayURL): \(error)")
            }
        }
    }
}
