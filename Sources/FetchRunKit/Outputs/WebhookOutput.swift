import Foundation

/// `type: webhook`: an HTTP POST per batch — the delivery's JSON object, a JSON array of them
/// when `batch` is more than 1, or the template's text per delivery (one per line). A 2xx is
/// taken; anything else (a 5xx, a 4xx, no answer) is a failed attempt, tried again later. A
/// 400, 413, 415 or 422 refuses those deliveries only; the output's others go on.
/// With one delivery per POST its id also goes in `X-Fetchrun-Delivery-Id`.
struct WebhookOutput: ConfigurableOutput {
    static let type = "webhook"
    static let keys = ["url", "headers", "batch", "proxy", "ca_file", "insecure"]

    var url: String
    var headers: [(name: String, value: String)]
    var batchSize: Int
    var template: OutputTemplate?
    var transport: HTTPTransport
    var timeout: Duration

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
    }

    func send(_ deliveries: [Delivery], through http: CurlHTTPClient) async throws {
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
        // Any 2xx is taken, whatever its body: only its first 64 KiB are read.
        var request = HTTPRequest(url: url, headers: sent, deadline: .now + timeout, maxBodyBytes: 64 * 1024, maxRedirects: 0, transport: transport)
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
            throw OutputError("HTTP \(response.status) from \(shown)", scope: Self.refusesOnlyThese(response.status) ? .deliveries : .destination)
        }
    }

    /// The statuses that refuse a request for what it carries (malformed, too large, of a
    /// type or content the receiver will not take), not the receiver's state: another delivery
    /// may well go through.
    static func refusesOnlyThese(_ status: Int) -> Bool {
        [400, 413, 415, 422].contains(status)
    }
}
