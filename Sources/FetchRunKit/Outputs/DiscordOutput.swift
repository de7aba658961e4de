import Foundation

/// `type: discord`: a message through a Discord webhook (Execute Webhook: `POST` the webhook
/// URL with `content`). Markdown in titles and summaries is escaped and `allowed_mentions` is
/// empty, so no text can ping `@everyone`, a role or a user.
struct DiscordOutput: NotificationOutput {
    static let type = "discord"
    static var keys: [String] { ["url"] + notificationKeys }

    /// "content: the message contents (up to 2000 characters)" — Discord developer
    /// documentation, Webhook resource, Execute Webhook.
    static let limit = NotificationText.Limit.characters(2000)

    var url: String
    var settings: NotificationSettings

    init(options: OutputOptions) throws {
        url = options.httpURL("url") ?? ""
        // The URL holds the webhook's token: what is shown is the URL as written (`${VAR}`).
        settings = NotificationSettings(options, markup: .discord, limit: Self.limit, target: options.written("url") ?? "")
    }

    func send(message: String, part: Int, for deliveries: [Delivery], through http: any HTTPExchange) async throws {
        let body = jsonObject { json in
            json.field("content", message)
            json.key("allowed_mentions")
            json.beginObject()
            json.field("parse", [String]())
            json.endObject()
        }
        try await post.send(json: body, to: url, through: http)
    }
}
