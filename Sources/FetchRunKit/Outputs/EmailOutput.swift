import Foundation

/// `type: email`: a plain-text mail through SMTP (libcurl) — one per delivery with
/// `per_item`, else one for everything due. The subject and body come from templates or
/// defaults; header fields are kept to one line (a title cannot add headers) and non-ASCII
/// subjects are encoded (RFC 2047).
struct EmailOutput: Output {
    var settings: OutputConfig.EmailSettings
    var template: OutputTemplate?
    var timeout: Duration
    var http: HTTPClient

    var batchSize: Int { settings.perItem ? 1 : 200 }

    func send(_ deliveries: [Delivery]) async throws {
        let message = Self.message(deliveries, settings: settings, template: template)
        let mail = MailRequest(
            url: settings.url, from: settings.from, recipients: settings.to, message: Data(message.utf8),
            username: settings.username, password: settings.password, deadline: .now + timeout, transport: settings.transport
        )
        do {
            let code = try await http.send(mail)
            guard code == 0 || (200..<300).contains(code) else { throw OutputError("the SMTP server answered \(code)") }
        } catch let error as HTTPError {
            throw OutputError("\(HTTPText.removingCredentials(from: settings.url)): \(error.message)")
        }
    }

    /// The message as it goes on the wire.
    static func message(_ deliveries: [Delivery], settings: OutputConfig.EmailSettings, template: OutputTemplate?, date: Date = Date()) -> String {
        let fields = deliveries.map(\.fields)
        var first = fields.first ?? [:]
        first["count"] = String(deliveries.count)
        let subject = settings.subject?.render(first) ?? defaultSubject(deliveries, fields: first)
        let bodies = zip(deliveries, fields).map { delivery, fields in template?.render(fields) ?? defaultBody(delivery.kind, fields) }
        let headers = [
            "From: \(oneLine(settings.from))",
            "To: \(settings.to.map(oneLine).joined(separator: ", "))",
            "Subject: \(encodedHeader(oneLine(subject)))",
            "Date: \(rfc5322Date(date))",
            "Message-ID: <\(UUID().uuidString.lowercased())@fetchrun>",
            "X-Fetchrun-Delivery-Ids: \(deliveries.map(\.id).map(oneLine).joined(separator: " ").prefix(900))",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit",
        ]
        let body = bodies.joined(separator: "\n").replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + body + (body.hasSuffix("\r\n") ? "" : "\r\n")
    }

    static func defaultSubject(_ deliveries: [Delivery], fields: [String: String]) -> String {
        guard deliveries.count == 1, let delivery = deliveries.first else { return "fetchrun: \(deliveries.count) updates" }
        switch delivery.kind {
        case .item: return "\(fields["source_title"] ?? fields["source"] ?? ""): \(fields["title"] ?? "")"
        case .failing: return "fetchrun: \(fields["source"] ?? "") is failing"
        case .recovered: return "fetchrun: \(fields["source"] ?? "") works again"
        }
    }

    static func defaultBody(_ kind: Delivery.Kind, _ fields: [String: String]) -> String {
        let source = fields["source"] ?? ""
        switch kind {
        case .item:
            return [fields["title"], fields["link"], "(\(source))"].compactMap { $0 }.joined(separator: "\n") + "\n"
        case .failing:
            return "\(source) has failed \(fields["failures"] ?? "?") times in a row since \(fields["failing_since"] ?? "?"): \(fields["error"] ?? "")\n"
        case .recovered:
            return "\(source) works again after \(fields["failures"] ?? "?") failures since \(fields["failing_since"] ?? "?").\n"
        }
    }

    /// A header value on one line: line breaks and other control characters become spaces.
    static func oneLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    }

    /// RFC 2047 for a header with non-ASCII text: `=?UTF-8?B?…?=` words of at most 45 bytes.
    static func encodedHeader(_ text: String) -> String {
        guard !text.unicodeScalars.allSatisfy(\.isASCII) else { return text }
        var words: [String] = []
        var chunk = ""
        for character in text {
            if chunk.utf8.count + String(character).utf8.count > 45 {
                words.append(chunk)
                chunk = ""
            }
            chunk.append(character)
        }
        if !chunk.isEmpty { words.append(chunk) }
        return words.map { "=?UTF-8?B?\(Data($0.utf8).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
