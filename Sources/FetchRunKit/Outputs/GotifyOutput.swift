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
    var settings: NotificationSettings

    init(options: OutputOptions) throws {
        let server = options.httpURL("url") ?? ""
        url = (server.hasSuffix("/") ? server : server + "/") + "message"
        token = options.token("token") ?? ""
        priority = options.integer("priority", in: 0...10)
        settings = NotificationSettings(options, markup: .plain, limit: Self.limit, target: options.written("url") ?? "")
    }

    func send(message: String, part: Int, for deliveries: [Delivery], through http: any HTTPExchange) async throws {
        let body = jsonObject { json in
            json.field("title", Self.title(for: deliveries))
            json.field("message", message)
            json.field("priority", priority)
        }
        try await post.send(json: body, to: url, headers: [("X-Gotify-Key", token)], through: http)
    }
}
