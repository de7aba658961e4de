import Foundation

/// `type: matrix`: a message in a Matrix room (Client-Server API: `PUT
/// /_matrix/client/v3/rooms/{room}/send/m.room.message/{txnId}` with a bearer token), as
/// `m.notice` with `body` (plain text) and `formatted_body` (HTML, escaped). The transaction
/// id is made from the delivery ids and the part, so a message sent again after a crash is the
/// same transaction, and the homeserver does not post it twice.
struct MatrixOutput: NotificationOutput {
    static let type = "matrix"
    static var keys: [String] { ["homeserver", "token", "room"] + notificationKeys }

    /// "The complete event MUST NOT be larger than 65536 bytes" — Matrix specification, Room
    /// Events, Size limits. An event carries the text twice (`body` and `formatted_body`) with
    /// its envelope: each is kept to 30,000 bytes. The line breaks of `formatted_body` are sent
    /// as `<br>` (``lineBreaks(_:)``), so they are counted as such; `body` is its text, no longer.
    static let limit = NotificationText.Limit.bytesWithBreaks(30_000)

    var homeserver: String
    var room: String
    var token: String
    var settings: NotificationSettings

    init(options: OutputOptions) throws {
        let server = options.httpURL("homeserver") ?? ""
        homeserver = server.hasSuffix("/") ? String(server.dropLast()) : server
        token = options.token("token") ?? ""
        room = options.string("room") ?? ""
        if !options.contains("room") {
            options.report("missing 'room' (the room's id, !…:server, from its settings)")
        } else if !room.hasPrefix("!") || !room.contains(":") {
            options.report("'room': '\(TerminalText.safe(room))' is not a room id (!…:server, shown in the room's settings); an alias (#…) is not resolved", key: "room")
        }
        settings = NotificationSettings(options, markup: .html, limit: Self.limit, target: "\(options.written("homeserver") ?? "") room \(room)")
    }

    func send(message: String, part: Int, for deliveries: [Delivery], through http: any HTTPExchange) async throws {
        let transaction = "fetchrun-" + ItemLimits.hash(deliveries.map(\.id).joined(separator: "\n")) + "-\(part)"
        let url = "\(homeserver)/_matrix/client/v3/rooms/\(HTTPText.percentEncodedComponent(room))/send/m.room.message/\(transaction)"
        let body = jsonObject { json in
            json.field("msgtype", "m.notice")
            // The message as text, for clients that do not show HTML.
            json.field("body", HTMLDocument.text(ofFragment: Self.lineBreaks(message)))
            json.field("format", "org.matrix.custom.html")
            json.field("formatted_body", Self.lineBreaks(message))
        }
        try await post.send(json: body, to: url, method: "PUT", headers: [("Authorization", "Bearer \(token)")], retryAfterInBody: { answer in
            if case .number(let milliseconds)? = answer["retry_after_ms"] { milliseconds.value / 1000 } else { nil }
        }, through: http)
    }

    /// Line breaks as `<br>` outside `<pre>`, where HTML would show them as spaces.
    static func lineBreaks(_ html: String) -> String {
        var result = ""
        var rest = html[...]
        while let open = rest.range(of: "<pre>") {
            result += rest[..<open.lowerBound].replacingOccurrences(of: "\n", with: "<br>\n")
            let close = rest[open.upperBound...].range(of: "</pre>")?.upperBound ?? rest.endIndex
            result += rest[open.lowerBound..<close]
            rest = rest[close...]
        }
        return result + rest.replacingOccurrences(of: "\n", with: "<br>\n")
    }
}
