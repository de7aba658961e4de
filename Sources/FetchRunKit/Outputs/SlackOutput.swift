import Foundation

/// `type: slack`: a message through a Slack incoming webhook (`POST` the webhook URL with
/// `text`, in mrkdwn). `&`, `<` and `>` in titles and summaries are escaped as Slack asks, so
/// no text can become a link or a `<!channel>` mention.
struct SlackOutput: NotificationOutput {
    static let type = "slack"
    static var keys: [String] { ["url"] + notificationKeys }

    /// "For best results, limit the number of characters in the text field to 4,000
    /// characters. Ideally, messages should be short and human-readable… Slack will truncate
    /// messages containing more than 40,000 characters." — Slack API, chat.postMessage,
    /// "Truncating content". The hard limit is taken.
    static let limit = NotificationText.Limit.characters(40_000)

    var url: String
    var settings: NotificationSettings

    init(options: OutputOptions) throws {
        url = options.httpURL("url") ?? ""
        settings = NotificationSettings(options, markup: .slack, limit: Self.limit, target: options.written("url") ?? "")
    }

    func send(message: String, part: Int, for deliveries: [Delivery], through http: any HTTPExchange) async throws {
        try await post.send(json: jsonObject { $0.field("text", message) }, to: url, through: http)
    }
}
