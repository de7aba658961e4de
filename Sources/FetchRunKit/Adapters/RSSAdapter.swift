import Foundation

/// `type: rss` — an RSS 0.9x / 2.0, RSS 1.0 (RDF) or Atom feed over HTTP(S), or a local file.
///
/// Conditional GET: the ETag and Last-Modified of the last good response are stored with the
/// snapshot and sent back as received; a 304 is no data, with nothing parsed.
public struct RSSAdapter: ConfigurableAdapter {
    public static let type = "rss"
    public static let summary = "an RSS, Atom or JSON Feed over http(s), or a local file (file:path, relative to the config)"
    public static let options = SourceFetcher.adapterOptions(url: "http:// or https:// URL; or file:path (relative to the config file) or file:///absolute/path")

    package var fetcher: SourceFetcher

    /// A feed built in code. `url` is `http(s)://…` or `file:///absolute/path`; the caller
    /// vouches for `headers` (names and values are sent as given).
    public init(url: String, headers: [(name: String, value: String)] = [], maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes, userAgent: String = HTTPRequest.defaultUserAgent) {
        fetcher = SourceFetcher(url: url, displayURL: HTTPText.removingCredentials(from: url), headers: headers, maxBodyBytes: maxBodyBytes, userAgent: userAgent)
    }

    public init(options: AdapterOptions) throws {
        fetcher = SourceFetcher(options: options, what: "the feed's", accept: SourceFetcher.feedAccept)
    }

    /// The validators and the last body's hash are all it needs of the past.
    public var readsPreviousSnapshot: Bool { false }

    public func fetch(_ context: FetchContext) async throws -> FetchOutput {
        output(for: try await fetcher.fetch(using: context.http, deadline: context.deadline, budget: context.budget, validators: context.validators, unlessBodyHash: context.lastBodyHash, logger: context.logger), context: context)
    }

    /// Out of the async frame, which lives as long as the request does.
    @inline(never)
    private func output(for result: SourceFetcher.FeedResult, context: FetchContext) -> FetchOutput {
        let validators = context.validators
        switch result {
        case .notModified(let response):
            context.logger.debug("304 Not Modified")
            return fetcher.annotated(.unchanged(validators: validators, bodyHash: context.lastBodyHash), response: response)
        case .sameBody(let response):
            context.logger.debug("\(response.status) \(response.body.count) bytes, the same as last time")
            return fetcher.annotated(.unchanged(validators: SourceFetcher.validators(from: response), bodyHash: context.lastBodyHash), response: response)
        case .feed(let feed, let response, let bodyHash):
            for warning in feed.warnings { context.logger.info("\(warning)") }
            context.logger.debug("\(response.status) \(response.body.count) bytes, \(feed.format.rawValue), \(feed.items.count) items")
            // Recovery and re-decoding are worth a line in the report; dropped fields are only logged.
            let notes = feed.warnings.filter { $0.hasPrefix("recovered") || $0.hasPrefix("read as") }
            return fetcher.annotated(FetchOutput(items: feed.items, validators: SourceFetcher.validators(from: response), notes: notes, bodyHash: bodyHash, title: feed.title), response: response)
        }
    }
}
