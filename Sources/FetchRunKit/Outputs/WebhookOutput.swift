import Crypto
import Foundation

/// `type: webhook`: an HTTP POST per batch — the delivery's JSON object, a JSON array of them
/// when `batch` is more than 1, or the template's text per delivery (one per line). A 2xx is
/// taken; anything else (a 5xx, a 4xx, no answer) is a failed attempt, tried again later. A
/// 400, 413, 415 or 422 refuses those deliveries only; the output's others go on.
/// With one delivery per POST its id also goes in `X-Fetchrun-Delivery-Id`. With `secret`,
/// every POST is signed (`X-Fetchrun-Signature`, `X-Fetchrun-Timestamp`).
struct WebhookOutput: ConfigurableOutput {
    static let type = "webhook"
    static let keys = ["url", "headers", "batch", "secret", "proxy", "ca_file", "insecure"]

    var url: String
    var headers: [(name: String, value: String)]
    var batchSize: Int
    var template: OutputTemplate?
    var transport: HTTPTransport
    var timeout: Duration
    /// `secret`: signs each POST (``signatureHeaders(for:secret:at:)``).
    var secret: String?

    /// The URL as the config writes it, without credentials: printed and stored, never what
    /// `${VAR}` expanded to (Slack and Discord put their token in the path).
    var target: String

    init(options: OutputOptions) throws {
        url = options.httpURL("url") ?? ""
        target = HTTPText.removingCredentials(from: options.written("url") ?? "")
        headers = options.headers("headers")
        batchSize = options.integer("batch", in: 1...1000) ?? 1
        template = options.template
        transport = options.transport()
        timeout = options.timeout
        secret = options.secret("secret")
        if secret?.isEmpty == true { options.report("'secret' is empty (an unset variable?); a signature needs a key", key: "secret") }
    }

    func send(_ deliveries: [Delivery], through http: any HTTPExchange) async throws {
        let body: String
        if let template {
            body = deliveries.map { template.render($0.fields) }.joined(separator: "\n")
        } else {
            body = batchSize == 1 && deliveries.count == 1 ? deliveries[0].payload : "[" + deliveries.map(\.payload).joined(separator: ",") + "]"
        }
        var sent = headers
        if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            sent.append(("Content-Type", template == nil ? "application/json" : "text/plain; charset=utf-8"))
        }
        if deliveries.count == 1 { sent.append(("X-Fetchrun-Delivery-Id", deliveries[0].id)) }
        if let secret { sent += Self.signatureHeaders(for: Data(body.utf8), secret: secret, at: http.date) }
        // Any 2xx is taken, whatever its body: only its first 64 KiB are read.
        var request = HTTPRequest(url: url, headers: sent, deadline: http.now + timeout, maxBodyBytes: 64 * 1024, maxRedirects: 0, transport: transport)
        request.cutsLongBody = true
        request.body = Data(body.utf8)
        let shown = target
        let response: HTTPResponse
        do {
            response = try await http.execute(request)
        } catch let error as HTTPError {
            throw OutputError("\(shown): \(error.message)")
        }
        guard (200..<300).contains(response.status) else {
            if response.status == 429 || response.status == 503, let wait = response.retryAfter() {
                // The receiver's own word on when to come back: the whole output waits for it.
                throw OutputError("HTTP \(response.status) from \(shown): asked to wait \(DurationText.format(wait))", retryAfter: wait)
            }
            throw OutputError("HTTP \(response.status) from \(shown)", scope: Self.refusesOnlyThese(response.status) ? .deliveries : .destination)
        }
    }

    /// `X-Fetchrun-Timestamp` (Unix seconds) and `X-Fetchrun-Signature: sha256=<hex>`, the
    /// HMAC-SHA256 under `secret` of the timestamp, a dot, and the body: the timestamp is signed
    /// too, so a receiver that refuses old ones cannot be fed a recorded post again.
    static func signatureHeaders(for body: Data, secret: String, at date: Date) -> [(name: String, value: String)] {
        let timestamp = String(Int64(date.timeIntervalSince1970.rounded(.down)))
        var signed = Data(timestamp.utf8)
        signed.append(UInt8(ascii: "."))
        signed.append(body)
        let code = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(secret.utf8)))
        let hex = code.map { String(format: "%02x", $0) }.joined()
        return [("X-Fetchrun-Timestamp", timestamp), ("X-Fetchrun-Signature", "sha256=" + hex)]
    }

    /// The statuses that refuse a request for what it carries (malformed, too large, of a
    /// type or content the receiver will not take), not the receiver's state: another delivery
    /// may well go through.
    static func refusesOnlyThese(_ status: Int) -> Bool {
        [400, 413, 415, 422].contains(status)
    }
}
