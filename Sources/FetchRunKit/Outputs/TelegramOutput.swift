import Foundation

/// `type: telegram`: a message from a bot (Bot API `sendMessage`: `POST
/// {api_url}/bot{token}/sendMessage` with `chat_id`, `text` and `parse_mode: HTML`). Titles
/// and summaries are escaped as HTML, so no text can open a tag or a link of its own.
struct TelegramOutput: NotificationOutput {
    static let type = "telegram"
    static var keys: [String] { ["token", "chat_id", "api_url"] + notificationKeys }

    /// "text: Text of the message to be sent, 1-4096 characters after entities parsing" —
    /// Telegram Bot API, sendMessage. Counted here with the HTML tags, which is never more
    /// than Telegram counts.
    static let limit = NotificationText.Limit.characters(4096)

    var url: String
    var chatID: String
    var settings: NotificationSettings

    init(options: OutputOptions) throws {
        let token = options.token("token") ?? ""
        if token.contains("/") || token.contains("?") || token.contains("#") { options.report("'token' is not a bot token (it holds /, ? or #)", key: "token") }
        chatID = options.string("chat_id") ?? ""
        if !options.contains("chat_id") { options.report("missing 'chat_id' (the chat's number, or @channelname)") }
        let api = options.contains("api_url") ? options.httpURL("api_url") ?? "" : "https://api.telegram.org"
        url = (api.hasSuffix("/") ? String(api.dropLast()) : api) + "/bot\(token)/sendMessage"
        // The token is in the URL's path: what is shown names the API and the chat only.
        settings = NotificationSettings(options, markup: .html, limit: Self.limit, target: "\(options.written("api_url") ?? "https://api.telegram.org") chat \(chatID)")
    }

    func send(message: String, part: Int, for deliveries: [Delivery], through http: any HTTPExchange) async throws {
        let body = jsonObject { json in
            json.field("chat_id", chatID)
            json.field("text", message)
            json.field("parse_mode", "HTML")
            json.key("link_preview_options")
            json.beginObject()
            json.field("is_disabled", true)
            json.endObject()
        }
        // A 429's wait is in the answer: {"parameters": {"retry_after": 30}} — Bot API, ResponseParameters.
        try await post.send(json: body, to: url, retryAfterInBody: { answer in
            if case .number(let seconds)? = answer["parameters"]?["retry_after"] { seconds.value } else { nil }
        }, through: http)
    }
}
