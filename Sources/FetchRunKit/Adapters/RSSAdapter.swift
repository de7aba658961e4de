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
        AdapterOption("headers", kind: "map", default: "none", "extra request headers, e.g. Authorization: \"Bearer ${TOKEN}\""),
        AdapterOption("max_bytes", kind: "whole number", default: "10485760", "largest body accepted, counted after decompression"),
        AdapterOption("user_agent", kind: "string", default: HTTPRequest.defaultUserAgent, "the User-Agent header"),
    ]

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
        let headers = (options.stringMap("headers") ?? [:]).sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        for header in headers {
            if !HTTPText.isHeaderName(header.name) {
                options.report("header '\(TerminalText.safe(header.name))': a header name is letters, digits and !#$%&'*+-.^_`|~ only (no ':', spaces or control characters)", key: "headers")
            } else if let problem = HTTPText.controlCharacterProblem(header.value) {
                // The value may be a secret: the message names the header, never its value.
                options.report("header '\(header.name)': its value \(problem)", key: "headers")
            }
        }
        if let userAgent = options.string("user_agent"), let problem = HTTPText.controlCharacterProblem(userAgent) {
            options.report("'user_agent' \(problem)", key: "user_agent")
        }
        fetcher = FeedFetcher(
            url: url ?? "",
            displayURL: HTTPText.removingCredentials(from: EnvironmentExpansion.mentionsVariables(written) ? written : url ?? written),
            headers: headers,
            maxBodyBytes: options.integer("max_bytes", in: 1024...(1 << 30)) ?? HTTPRequest.defaultMaxBodyBytes,
            userAgent: options.string("user_agent") ?? HTTPRequest.defaultUserAgent
        )
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
        case .notModified:
            context.logger.debug("304 Not Modified")
            return .unchanged(validators: validators, bodyHash: context.lastBodyHash)
        case .sameBody(let response):
            context.logger.debug("\(response.status) \(response.body.count) bytes, the same as last time")
            return .unchanged(validators: FeedFetcher.validators(from: response), bodyHash: context.lastBodyHash)
        case .feed(let feed, let response, let bodyHash):
            for warning in feed.warnings { context.logger.info("\(warning)") }
            context.logger.debug("\(response.status) \(response.body.count) bytes, \(feed.format.rawValue), \(feed.items.count) items")
            // Recovery and re-decoding are worth a line in the report; dropped fields are only logged.
            let notes = feed.warnings.filter { $0.hasPrefix("recovered") || $0.hasPrefix("read as") }
            return FetchOutput(items: feed.items, validators: FeedFetcher.validators(from: response), notes: notes, bodyHash: bodyHash, title: feed.title)
        }
    }
}
