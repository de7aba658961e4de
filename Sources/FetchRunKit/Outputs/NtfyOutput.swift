import Foundation

/// `type: ntfy`: a phone or desktop notification through an ntfy server, published as JSON
/// (`POST` to the server's root with `topic`, `title`, `message`, `click`, `priority`, `tags`).
/// `url` names the server and the topic, as ntfy's own URLs do: `https://ntfy.sh/my-topic`.
struct NtfyOutput: NotificationOutput {
    static let type = "ntfy"
    static var keys: [String] { ["url", "token", "priority", "tags"] + notificationKeys }

    /// "the message body … is limited to 4,096 bytes" (a longer one becomes an attachment) —
    /// ntfy documentation, Publishing, Limitations (the server's default message-size-limit).
    static let limit = NotificationText.Limit.bytes(4096)
    /// ntfy's priority names, 1 to 5 — ntfy documentation, Publishing, Message priority.
    static let priorities = ["min": 1, "low": 2, "default": 3, "high": 4, "max": 5, "urgent": 5]

    var server: String
    var topic: String
    var token: String?
    var priority: Int?
    var tags: [String]
    var settings: NotificationSettings

    init(options: OutputOptions) throws {
        let url = options.httpURL("url") ?? ""
        // The topic is the URL's last path segment; what comes before it is the server.
        let trimmed = url.hasSuffix("/") ? String(url.dropLast()) : url
        if let slash = trimmed.lastIndex(of: "/"), trimmed[..<slash].hasSuffix("/") == false, !trimmed[trimmed.index(after: slash)...].isEmpty {
            server = String(trimmed[...slash])
            topic = String(trimmed[trimmed.index(after: slash)...])
        } else {
            server = url
            topic = ""
            if !url.isEmpty { options.report("'url' names no topic: write the server and the topic, as https://ntfy.sh/my-topic", key: "url") }
        }
        token = options.contains("token") ? options.token("token") : nil
        if let written = options.string("priority") {
            priority = Self.priorities[written.lowercased()] ?? Int(written).flatMap { (1...5).contains($0) ? $0 : nil }
            if priority == nil { options.report("'priority': use 1 to 5, or min, low, default, high, max", key: "priority") }
        }
        tags = options.strings("tags") ?? []
        settings = NotificationSettings(options, markup: .plain, limit: Self.limit, target: options.written("url") ?? "")
    }

    func send(message: String, part: Int, for deliveries: [Delivery], through http: any HTTPExchange) async throws {
        let fields = deliveries.count == 1 ? deliveries[0].fields : [:]
        let body = jsonObject { json in
            json.field("topic", topic)
            json.field("title", Self.title(for: deliveries))
            json.field("message", message)
            json.field("priority", priority)
            if !tags.isEmpty { json.field("tags", tags) }
            if let link = fields["link"], link.lowercased().hasPrefix("http") { json.field("click", link) }
        }
        try await post.send(json: body, to: server, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [], through: http)
    }
}
