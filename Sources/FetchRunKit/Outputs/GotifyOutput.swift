import Foundation

/// `type: gotify`: a notification through a Gotify server (`POST /message` with an
/// application's token in `X-Gotify-Key`, and `title`, `message`, `priority`).
struct GotifyOutput: NotificationOutput {
    static let type = "gotify"
    static var keys: [String] { ["url", "token", "priority"] + notificationKeys }

    /// Gotify documents no length limit for a message; fetchrun's own caps (a summary as it
    /// was read, a diff to 64 KiB) bound it.
    static let limit = NotificationText.Limit.none

    var url: String
    var token: String
    var priority: Int?
    var text: NotificationText
    var template: OutputTemplate?
    var digest: Bool
    var post: NotificationPost

    init(options: OutputOptions) throws {
        let server = options.httpURL("url") ?? ""
        url = (server.hasSuffix("/") ? server : server + "/") + "message"
        token = options.token("token") ?? ""
        priority = options.integer("priority", in: 0...10)
        text = options.notificationText(markup: .plain, limit: Self.limit)
        template = options.template
        digest = options.boolean("digest") ?? false
        post = NotificationPost(target: options.written("url") ?? "", options: options)
    }

    func send(message: String, part: Int, for deliveries: [Delivery], through http: CurlHTTPClient) async throws {
        let fields = deliveries.count == 1 ? deliveries[0].fields : [:]
        let body = jsonObject { json in
            json.field("title", deliveries.count == 1 ? fields["source"].map { "fetchrun · \($0)" } : "fetchrun")
            json.field("message", message)
            json.field("priority", priority)
        }
        try await post.send(json: body, to: url, headers: [("X-Gotify-Key", token)], through: http)
    }
}
