import Foundation
import Logging

/// Fetches one HTTP source (or a local file) with its options, validators and deadline: what
/// the `rss` and `json` adapters and `fetchrun probe` share. What the body means is theirs
/// (``fetch(using:deadline:validators:unlessBodyHash:logger:)`` parses it as a feed).
package struct SourceFetcher: Sendable {
    /// What one request got, before anything was parsed.
    package enum Body: Sendable {
        /// The server answered 304 to the validators sent.
        case notModified(HTTPResponse)
        /// The body is the one fetched last time (its hash is `unlessBodyHash`).
        case sameBody(HTTPResponse)
        /// A new body (`response.body`), and its hash.
        case new(HTTPResponse, bodyHash: String)
    }

    package var url: String
    /// The URL as the user wrote it, for messages: `${VAR}` expansions may be secrets.
    package var displayURL: String
    package var headers: [(name: String, value: String)]
    package var maxBodyBytes: Int
    package var userAgent: String
    package var transport = HTTPTransport()
    package var connectTimeout: Duration = .seconds(10)

    /// The `Accept` header sent: a feed's by default.
    package var accept = Self.feedAccept

    package static let feedAccept = "application/rss+xml, application/atom+xml, application/feed+json, application/rdf+xml;q=0.9, application/xml;q=0.8, text/xml;q=0.8, application/json;q=0.8, */*;q=0.5"

    package init(url: String, displayURL: String? = nil, headers: [(name: String, value: String)] = [], maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes, userAgent: String = HTTPRequest.defaultUserAgent) {
        self.url = url
        self.displayURL = displayURL ?? url
        self.headers = headers
        self.maxBodyBytes = maxBodyBytes
        self.userAgent = userAgent
    }

    package var isFileURL: Bool { url.lowercased().hasPrefix("file:") }

    /// The options every adapter that fetches one URL declares: `url`, `max_bytes` and the
    /// HTTP options (``HTTPSourceOptions/adapterOptions``).
    package static func adapterOptions(url summary: String) -> [AdapterOption] {
        [
            AdapterOption("url", kind: "URL", default: nil, summary),
            AdapterOption("max_bytes", kind: "whole number", default: "10485760", "largest body accepted, counted after decompression"),
        ] + HTTPSourceOptions.adapterOptions
    }

    /// A fetcher from a source's options (declared with ``adapterOptions(url:)``); problems are
    /// reported through `options` with their line:column. `what` names the document in the
    /// message for a missing `url` ("the feed's").
    package init(options: AdapterOptions, what: String, accept: String) {
        let written = options.writtenText("url") ?? ""
        let url = options.string("url").flatMap { Self.resolve($0, configDirectory: options.configDirectory, options: options) }
        if !options.contains("url") { options.report("missing 'url' (\(what) http(s) URL, or file:path)") }
        let http = options.httpOptions()
        self.init(
            url: url ?? "",
            displayURL: HTTPText.removingCredentials(from: EnvironmentExpansion.mentionsVariables(written) ? written : url ?? written),
            headers: http.headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) },
            maxBodyBytes: options.integer("max_bytes", in: 1024...(1 << 30)) ?? HTTPRequest.defaultMaxBodyBytes,
            userAgent: http.userAgent
        )
        self.accept = accept
        transport = http.transport
        connectTimeout = http.connectTimeout
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

    /// What an adapter's parse of a new body found.
    package typealias Parsed = (items: [Item], adapterState: JSONValue?, notes: [String])

    /// A whole fetch for an adapter that reads the body itself (`json`, `page`): a 304 or the
    /// same body again is ``FetchOutput/unchanged(validators:bodyHash:)``; a new body goes to
    /// `parse` on a thread of its own (``runOffPool(name:_:)``), which polls the flag it is
    /// given; every answer is ``annotated(_:response:)``.
    /// - Throws: what ``fetchBody(using:deadline:validators:unlessBodyHash:logger:)`` and
    ///   `parse` throw; `CancellationError` when cancelled.
    package func fetch(_ context: FetchContext, parse: @escaping @Sendable (HTTPResponse, CancellationFlag) throws -> Parsed) async throws -> FetchOutput {
        switch try await fetchBody(using: context.http, deadline: context.deadline, budget: context.budget, validators: context.validators, unlessBodyHash: context.lastBodyHash, logger: context.logger) {
        case .notModified(let response):
            return annotated(.unchanged(validators: context.validators, bodyHash: context.lastBodyHash), response: response)
        case .sameBody(let response):
            return annotated(.unchanged(validators: Self.validators(from: response), bodyHash: context.lastBodyHash), response: response)
        case .new(let response, let bodyHash):
            let parsed = try await runOffPool(name: "fetchrun-parse") { cancellation in try parse(response, cancellation) }
            return annotated(FetchOutput(items: parsed.items, adapterState: parsed.adapterState, validators: Self.validators(from: response), notes: parsed.notes, bodyHash: bodyHash), response: response)
        }
    }

    /// What every answer tells beyond its body: how long it stays fresh (Cache-Control,
    /// Expires), whether validators may be kept (`no-store`), whether the URL moved for good,
    /// and a warning when the certificate was not checked.
    package func annotated(_ output: FetchOutput, response: HTTPResponse) -> FetchOutput {
        var output = output
        let cache = CacheControl(response)
        output.freshFor = cache.freshFor
        // Empty, not nil: nil would keep the validators stored before.
        if cache.noStore { output.validators = HTTPValidators() }
        if response.redirectsWerePermanent { output.movedTo = response.effectiveURL }
        if transport.insecure, url.lowercased().hasPrefix("https:") {
            output.notes.append("TLS certificate not checked (insecure: true)")
        }
        return output
    }

    /// Fetches the body; sends `validators` back for a conditional GET, and says `sameBody`
    /// when the body's hash is `unlessBodyHash` (a server without validators that sends the
    /// same document again).
    /// - Throws: ``FetchFailure``: `.network`, `.unreachable`, `.httpStatus` (with
    ///   `Retry-After` on 429/503); `CancellationError` when the task is cancelled (at the deadline).
    /// - Parameter logger: at `info` (`-v`), one line per request: method, URL (as written,
    ///   credentials removed), status, bytes, time; at `debug` (`-vv`) the request's and the
    ///   response's headers too, with secrets masked (``HTTPText/maskedHeaderValue(name:value:)``).
    /// - Parameter budget: the fetch's deadline, paused while the request waits for its host.
    package func fetchBody(
        using client: any HTTPExchange, deadline: ContinuousClock.Instant, budget: FetchDeadline? = nil, validators: HTTPValidators? = nil,
        unlessBodyHash: String? = nil, logger: Logger? = nil
    ) async throws -> Body {
        var headers = [(name: "Accept", value: accept)] + self.headers
        if let etag = validators?.etag { headers.append(("If-None-Match", etag)) }
        if let lastModified = validators?.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        var request = HTTPRequest(url: url, headers: headers, deadline: deadline, maxBodyBytes: maxBodyBytes, connectTimeout: connectTimeout, userAgent: userAgent, allowsFileURL: isFileURL, transport: transport)
        request.budget = budget
        if let logger, logger.logLevel <= .debug { logRequest(headers, to: logger) }

        let response: HTTPResponse
        let started = client.now
        do {
            response = try await client.execute(request)
        } catch let error as HTTPError {
            throw failure(error, after: client.now - started, logger: logger)
        }
        // What follows the wait is in synchronous helpers, out of this async frame, which lives
        // as long as the request does.
        if let logger, logger.logLevel <= .info { log(response, to: logger) }
        return try body(of: response, unlessBodyHash: unlessBodyHash)
    }

    @inline(never)
    private func logRequest(_ headers: [(name: String, value: String)], to logger: Logger) {
        for header in [(name: "User-Agent", value: userAgent)] + headers {
            logger.debug("> \(header.name): \(HTTPText.maskedHeaderValue(name: header.name, value: header.value))")
        }
    }

    /// A request that got no response, as the source's failure.
    @inline(never)
    private func failure(_ error: HTTPError, after duration: Duration, logger: Logger?) -> FetchFailure {
        logger?.info("GET \(displayURL) failed after \(DurationText.format(duration)): \(error.message)")
        if case .hostBackingOff(let status) = error.kind {
            // Another feed's 429/503 holds the whole host back: scheduled like its own would be.
            return FetchFailure(.httpStatus, "\(displayURL): \(error.message)", status: status, retryAfter: error.retryAfter)
        }
        if case .hostUnreachable = error.kind {
            return FetchFailure(.unreachable, "\(displayURL): \(error.message)")
        }
        return FetchFailure(.network, "\(displayURL): \(error.message)")
    }

    @inline(never)
    private func log(_ response: HTTPResponse, to logger: Logger) {
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

    /// A response as what the source got: unchanged (304, or the body it had last time), new,
    /// or the failure its status says.
    @inline(never)
    private func body(of response: HTTPResponse, unlessBodyHash: String?) throws(FetchFailure) -> Body {
        if response.status == 304 { return .notModified(response) }
        guard response.isSuccess else {
            let retryAfter = [429, 503].contains(response.status) ? response.retryAfter() : nil
            var message = "HTTP \(response.status) from \(displayURL)"
            if let retryAfter { message += " (retry after \(DurationText.format(retryAfter)))" }
            throw FetchFailure(.httpStatus, message, status: response.status, retryAfter: retryAfter)
        }
        let bodyHash = Self.hash(response.body)
        if bodyHash == unlessBodyHash { return .sameBody(response) }
        return .new(response, bodyHash: bodyHash)
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
