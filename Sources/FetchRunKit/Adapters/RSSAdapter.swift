import Foundation

/// `type: rss` — an RSS 0.9x / 2.0, RSS 1.0 (RDF) or Atom feed over HTTP(S), or a local file.
///
/// Conditional GET: the ETag and Last-Modified of the last good response are stored with the
/// snapshot and sent back as received; a 304 is no data, with nothing parsed.
public struct RSSAdapter: ConfigurableAdapter {
    public static let type = "rss"
    public static let summary = "an RSS, Atom or JSON Feed over http(s), or a local file (file:path, relative to the config)"
    public static let options = [
        AdapterOption("url", kind: "URL", default: nil, "http:// or https:// URL; or file:path (relative to the config file) or file:///absolute/path"),
        AdapterOption("max_bytes", kind: "whole number", default: "10485760", "largest body accepted, counted after decompression"),
    ] + HTTPSourceOptions.adapterOptions

    package var fetcher: FeedFetcher

    /// A feed built in code. `url` is `http(s)://…` or `file:///absolute/path`; the caller
    /// vouches for `headers` (names and values are sent as given).
    public init(url: String, headers: [(name: String, value: String)] = [], maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes, userAgent: String = HTTPRequest.defaultUserAgent) {
        fetcher = FeedFetcher(url: url, displayURL: HTTPText.removingCredentials(from: url), headers: headers, maxBodyBytes: maxBodyBytes, userAgent: userAgent)
    }

    public init(options: AdapterOptions) throws {
        let written = options.writtenText("url") ?? ""
        let url = options.string("url").flatMap { Self.resolve($0, configDirectory: options.configDirectory, options: options) }
        if !options.contains("url") { options.report("missing 'url' (the feed's http(s) URL, or file:path)") }
        let http = options.httpOptions()
        fetcher = FeedFetcher(
            url: url ?? "",
            displayURL: HTTPText.removingCredentials(from: EnvironmentExpansion.mentionsVariables(written) ? written : url ?? written),
            headers: http.headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) },
            maxBodyBytes: options.integer("max_bytes", in: 1024...(1 << 30)) ?? HTTPRequest.defaultMaxBodyBytes,
            userAgent: http.userAgent
        )
        fetcher.transport = http.transport
        fetcher.connectTimeout = http.connectTimeout
    }

    /// `http(s)://…` as is; `file:relative/path` against the config's folder; `file:///abs`.
    static func resolve(_ url: String, configDirectory: String, options: AdapterOptions) -> String? {
        let lowered = url.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") { return url }
        if lowered.hasPrefix("file:") {
            var path = String(url.dropFirst(5))
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            guard !path.isEmpty else {
                options.report("'url': file: needs a path", key: "url")
                return nil
            }
            let absolute = path.hasPrefix("/") ? path : (configDirectory as NSString).appendingPathComponent(path)
            return URL(fileURLWithPath: absolute).standardizedFileURL.absoluteString
        }
        options.report("'url': only http://, https:// and file: URLs can be fetched", key: "url")
        return nil
    }

    /// The validators and the last body's hash are all it needs of the past.
    public var readsPreviousSnapshot: Bool { false }

    public func fetch(_ context: FetchContext) async throws -> FetchOutput {
        let validators = context.validators
        switch try await fetcher.fetch(using: context.http, deadline: context.deadline, validators: validators, unlessBodyHash: context.lastBodyHash, logger: context.logger) {
        case .notModified(let response):
            context.logger.debug("304 Not Modified")
            return annotated(.unchanged(validators: validators, bodyHash: context.lastBodyHash), response: response)
        case .sameBody(let response):
            context.logger.debug("\(response.status) \(response.body.count) bytes, the same as last time")
            return annotated(.unchanged(validators: FeedFetcher.validators(from: response), bodyHash: context.lastBodyHash), response: response)
        case .feed(let feed, let response, let bodyHash):
            for warning in feed.warnings { context.logger.info("\(warning)") }
            context.logger.debug("\(response.status) \(response.body.count) bytes, \(feed.format.rawValue), \(feed.items.count) items")
            // Recovery and re-decoding are worth a line in the report; dropped fields are only logged.
            let notes = feed.warnings.filter { $0.hasPrefix("recovered") || $0.hasPrefix("read as") }
            return annotated(FetchOutput(items: feed.items, validators: FeedFetcher.validators(from: response), notes: notes, bodyHash: bodyHash, title: feed.title), response: response)
        }
    }

    /// What every answer tells beyond its items: how long it stays fresh (Cache-Control,
    /// Expires), whether validators may be kept (`no-store`), whether the URL moved for good,
    /// and a warning when the certificate was not checked.
    private func annotated(_ output: FetchOutput, response: HTTPResponse) -> FetchOutput {
        var output = output
        let cache = CacheControl(response)
        output.freshFor = cache.freshFor
        // Empty, not nil: nil would keep the validators stored before.
        if cache.noStore { output.validators = HTTPValidators() }
        if response.redirectsWerePermanent { output.movedTo = response.effectiveURL }
        if fetcher.transport.insecure, fetcher.url.lowercased().hasPrefix("https:") {
            output.notes.append("TLS certificate not checked (insecure: true)")
        }
        return output
    }
}
