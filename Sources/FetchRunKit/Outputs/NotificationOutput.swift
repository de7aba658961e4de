import Foundation

/// What the chat and phone outputs (ntfy, Gotify, Slack, Discord) share: the common keys,
/// how their text is made (``NotificationText``), and how a message is posted and what the
/// answer means.
protocol NotificationOutput: ConfigurableOutput {
    var settings: NotificationSettings { get }
    /// Sends one message (already within the target's limit) for `deliveries`: part `part`
    /// (from 0) of the messages they make.
    func send(message: String, part: Int, for deliveries: [Delivery], through http: any HTTPExchange) async throws
}

extension NotificationOutput {
    /// Per delivery, one at a time (so one refused message holds no other); a digest takes
    /// everything due in one claim.
    var batchSize: Int { settings.digest ? 1000 : 1 }
    var target: String { settings.post.target }
    var post: NotificationPost { settings.post }

    /// The keys every notification output takes beside its own.
    static var notificationKeys: [String] { ["overflow", "digest", "proxy", "ca_file", "insecure"] }

    func send(_ deliveries: [Delivery], through http: any HTTPExchange) async throws {
        // A split message goes out in order; should a later part fail, the earlier ones are
        // sent again with it on the next attempt (at least once, as every output).
        let (text, template) = (settings.text, settings.template)
        let messages = settings.digest ? text.digest(of: deliveries, template: template) : deliveries.flatMap { text.messages(for: $0, template: template) }
        for (part, message) in messages.enumerated() {
            try await send(message: message, part: part, for: deliveries, through: http)
        }
    }

    /// A message's title where the service shows one apart (ntfy, Gotify): the source of a
    /// single delivery, else just fetchrun.
    static func title(for deliveries: [Delivery]) -> String {
        deliveries.count == 1 ? "fetchrun · \(deliveries[0].source)" : "fetchrun"
    }
}

/// What every notification output reads of its entry beside its own keys: `overflow`,
/// `digest`, `template`, and the request's `timeout`, `proxy`, `ca_file`, `insecure`.
struct NotificationSettings: Sendable {
    var text: NotificationText
    var template: OutputTemplate?
    /// `digest: true` (or a schedule): one message for everything due at once, instead of one
    /// per delivery.
    var digest: Bool
    var post: NotificationPost

    /// - Parameter target: what listings and errors show for the destination: never a token.
    init(_ options: OutputOptions, markup: NotificationText.Markup, limit: NotificationText.Limit, target: String) {
        text = options.notificationText(markup: markup, limit: limit)
        template = options.template
        digest = options.digest().combined
        post = NotificationPost(target: target, options: options)
    }
}

extension OutputOptions {
    /// `overflow` (`truncate`, the default, or `split`) and the target's markup and limit.
    func notificationText(markup: NotificationText.Markup, limit: NotificationText.Limit) -> NotificationText {
        var overflow = NotificationText.Overflow.truncate
        if let written = string("overflow") {
            if let value = NotificationText.Overflow(rawValue: written) { overflow = value } else {
                report("'overflow': use truncate or split", key: "overflow")
            }
        }
        return NotificationText(markup: markup, limit: limit, overflow: overflow)
    }

    /// A token from `${VAR}` (or as written): required, and never shown.
    func token(_ key: String) -> String? {
        guard contains(key) else {
            report("missing '\(key)'")
            return nil
        }
        let value = secret(key)
        if value?.isEmpty == true { report("'\(key)' is empty (an unset variable?)", key: key) }
        return value
    }
}

/// One HTTP request of a notification output, and what its answer means.
struct NotificationPost: Sendable {
    /// The destination as the config writes it, credentials removed: printed and stored.
    var target: String
    var transport: HTTPTransport
    var timeout: Duration

    init(target: String, options: OutputOptions) {
        self.target = HTTPText.removingCredentials(from: target)
        transport = options.transport()
        timeout = options.timeout
    }

    /// Sends `body` as JSON to `url` and returns once the service took it (any 2xx).
    /// - Throws: ``OutputError``: for 429 (and 503) with the `Retry-After` the service asked
    ///   for; 401 and 403 say the token was refused; 400, 413 and 422 refuse this message only
    ///   (``OutputError/Scope/deliveries``); anything else, or no answer, is the destination's.
    /// - Parameters:
    ///   - method: `PUT` where the service asks for it; a POST otherwise.
    ///   - retryAfterInBody: reads the wait, in seconds, a service puts in its JSON answer
    ///     rather than in `Retry-After` (Telegram's `parameters.retry_after`, Matrix's
    ///     `retry_after_ms`). Clamped as `Retry-After` is: a hostile number cannot trap.
    func send(
        json body: Data, to url: String, method: String? = nil, headers: [(name: String, value: String)] = [],
        retryAfterInBody: (JSONValue) -> Double? = { _ in nil }, through http: any HTTPExchange
    ) async throws {
        var request = HTTPRequest(url: url, headers: [("Content-Type", "application/json")] + headers, deadline: http.now + timeout, maxBodyBytes: 64 * 1024, maxRedirects: 0, transport: transport)
        request.cutsLongBody = true
        request.body = body
        request.bodyMethod = method
        let response: HTTPResponse
        do {
            response = try await http.execute(request)
        } catch let error as HTTPError {
            throw OutputError("\(target): \(error.message)")
        }
        switch response.status {
        case 200..<300:
            return
        case 429, 503:
            let answer = try? JSONReader.value(of: response.body)
            let longest = Double(HTTPResponse.longestRetryAfter.components.seconds)
            let asked = answer.flatMap(retryAfterInBody).flatMap { $0.isFinite ? Duration.seconds(Int64(min(max($0, 0), longest).rounded(.up))) : nil }
            let wait = response.retryAfter() ?? asked
            throw OutputError("HTTP \(response.status) from \(target)" + (wait.map { ": asked to wait \(DurationText.format($0))" } ?? ""), retryAfter: wait)
        case 401, 403:
            throw OutputError("HTTP \(response.status) from \(target): the token or URL was refused")
        default:
            throw OutputError("HTTP \(response.status) from \(target)", scope: WebhookOutput.refusesOnlyThese(response.status) ? .deliveries : .destination)
        }
    }
}

/// A JSON object's bytes, written with ``JSONWriter``.
func jsonObject(_ members: (inout JSONWriter) -> Void) -> Data {
    var json = JSONWriter()
    json.beginObject()
    members(&json)
    json.endObject()
    return Data(json.string.utf8)
}
