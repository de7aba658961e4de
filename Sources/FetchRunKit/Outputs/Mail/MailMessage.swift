import Foundation

/// A mail as it goes on the wire (RFC 5322 with MIME): its header fields, and a text/plain
/// body — alone (`format: text`) or beside a text/html one in `multipart/alternative`
/// (`format: html`), which a mail client shows as one message in whichever form it prefers.
///
/// What makes a mail recognisable to filters and to the reader's client: `List-Id:
/// <OUTPUT.fetchrun>` on every mail, and a `Message-ID` made from the deliveries' ids, so that a
/// mail sent again after a failed attempt has the same one. Header fields are kept to one line
/// (a title cannot add fields), non-ASCII text in them is encoded (RFC 2047), and every line of
/// the body is within the 998 bytes RFC 5322 allows.
enum MailMessage {
    /// The text before the parts, which only a client that reads no MIME shows.
    static let preamble = "This is a message in several formats (MIME); your mail program shows one of them."

    static func make(_ deliveries: [Delivery], settings: EmailOutput.Settings, template: OutputTemplate?, date: Date) -> String {
        let fields = deliveries.map(\.fields)
        var first = fields.first ?? [:]
        first["count"] = String(deliveries.count)
        first["sources"] = MailLayout.sourceNames(deliveries, fields: fields)
        let subject = settings.subject?.render(first) ?? defaultSubject(deliveries, fields: first)
        let text = zip(deliveries, fields).map { delivery, fields in template?.render(fields) ?? defaultBody(delivery.kind, fields) }.joined(separator: "\n")
        let idHash = ItemLimits.hash(deliveries.map(\.id).joined(separator: "\n"))
        var headers = [
            "From: \(oneLine(settings.from))",
            // One address a line past the first: a long list stays within 998 bytes a line.
            "To: \(settings.to.map(oneLine).joined(separator: ",\r\n "))",
            "Subject: \(encodedHeader(oneLine(subject)))",
            "Date: \(CalendarText.rfc822String(from: date))",
            "Message-ID: <\(idHash).\(settings.outputName)@\(domain(of: settings.from))>",
            "List-Id: fetchrun \(settings.outputName) <\(settings.outputName).fetchrun>",
            "X-Fetchrun-Delivery-Ids: \(deliveryIDs(deliveries))",
            "MIME-Version: 1.0",
        ]
        let plain = part(text, type: "text/plain")
        guard settings.format == .html else {
            headers += plain.headers
            return headers.joined(separator: "\r\n") + "\r\n\r\n" + plain.body
        }
        let page = MailLayout.html(deliveries, fields: fields, subject: subject, settings: settings)
        let html = part(page, type: "text/html", quoted: true)
        // `=_` cannot stand in quoted-printable text, and a plain part that holds it is quoted.
        let boundary = "=_fetchrun_\(idHash)"
        headers.append("Content-Type: multipart/alternative; boundary=\"\(boundary)\"")
        var message = headers.joined(separator: "\r\n") + "\r\n\r\n" + preamble + "\r\n"
        for part in [plain, html] {
            message += "\r\n--\(boundary)\r\n" + part.headers.joined(separator: "\r\n") + "\r\n\r\n" + part.body
        }
        return message + "\r\n--\(boundary)--\r\n"
    }

    /// A body part: its `Content-Type` and `Content-Transfer-Encoding`, and the text with CRLF
    /// line ends — as it is (8bit) when every line fits, else quoted-printable.
    private static func part(_ text: String, type: String, quoted: Bool = false) -> (headers: [String], body: String) {
        var body = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
        if !body.hasSuffix("\r\n") { body += "\r\n" }
        // A summary is often one long line, which a server may refuse or break anywhere.
        let fits = body.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).allSatisfy { $0.count <= 999 }
        let plain = fits && !quoted && !body.contains("=_")
        return (
            ["Content-Type: \(type); charset=utf-8", "Content-Transfer-Encoding: \(plain ? "8bit" : "quoted-printable")"],
            plain ? body : quotedPrintable(body)
        )
    }

    static func defaultSubject(_ deliveries: [Delivery], fields: [String: String]) -> String {
        guard deliveries.count == 1, let delivery = deliveries.first else {
            return "fetchrun: \(deliveries.count) updates from \(fields["sources"] ?? "")"
        }
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
        case .failing, .recovered:
            return alertText(kind, fields) + "\n"
        }
    }

    /// What an alert says, in the text part and the HTML one alike.
    static func alertText(_ kind: Delivery.Kind, _ fields: [String: String]) -> String {
        let source = fields["source"] ?? ""
        if kind == .failing {
            return "\(source) has failed \(fields["failures"] ?? "?") times in a row since \(fields["failing_since"] ?? "?"): \(fields["error"] ?? "")"
        }
        return "\(source) works again after \(fields["failures"] ?? "?") failures since \(fields["failing_since"] ?? "?")."
    }

    /// The domain of the sender's address, for the `Message-ID`: only its letters, digits, dots
    /// and hyphens; `fetchrun.invalid` when nothing is left.
    static func domain(of address: String) -> String {
        let host = address.split(separator: "@").last.map(String.init) ?? ""
        let kept = String(host.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "." || $0 == "-") }.prefix(200).map(Character.init))
        return kept.isEmpty || !address.contains("@") ? "fetchrun.invalid" : kept
    }

    /// `text` (lines ending in CRLF) as quoted-printable (RFC 2045 §6.7): printable ASCII as it
    /// is, every other byte (and `=`, and a space or tab that ends a line) as `=XX`, and lines
    /// longer than 76 characters broken with a soft line break (`=` at the end).
    static func quotedPrintable(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 11 / 10)
        for line in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast() {
            let bytes = line.last == UInt8(ascii: "\r") ? line.dropLast() : line[...]
            var width = 0
            for index in bytes.indices {
                let byte = bytes[index]
                let isLast = index == bytes.index(before: bytes.endIndex)
                let literal = (33...126).contains(byte) && byte != UInt8(ascii: "=") || ((byte == 32 || byte == 9) && !isLast)
                let size = literal ? 1 : 3
                // Room for this character and, unless it ends the line, a soft break after it.
                if width + size > (isLast ? 76 : 75) {
                    output += [UInt8(ascii: "="), 13, 10]
                    width = 0
                }
                if literal {
                    output.append(byte)
                } else {
                    output += [UInt8(ascii: "="), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
                }
                width += size
            }
            output += [13, 10]
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// A header value on one line: line breaks and other control characters become spaces.
    static func oneLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    }

    /// The deliveries' ids, as far as they fit one header line: whole ids, ASCII (anything else
    /// percent-encoded, since a header is ASCII without SMTPUTF8).
    static func deliveryIDs(_ deliveries: [Delivery]) -> String {
        var line = ""
        for id in deliveries.map(\.id) {
            let ascii = oneLine(id).addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "!\"#$&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~")) ?? ""
            guard line.utf8.count + ascii.utf8.count + 1 <= 900 else { break }
            line += (line.isEmpty ? "" : " ") + ascii
        }
        return line
    }

    /// RFC 2047 for a header with non-ASCII text, or ASCII too long for one line:
    /// `=?UTF-8?B?…?=` words of at most 45 bytes, each on a line of its own, never splitting
    /// a character (or a grapheme cluster).
    static func encodedHeader(_ text: String) -> String {
        guard !text.unicodeScalars.allSatisfy(\.isASCII) || text.utf8.count > 900 else { return text }
        var words: [String] = []
        var chunk = ""
        // Cut between characters; a made-up cluster longer than a word, between its scalars.
        let pieces = text.flatMap { character in
            String(character).utf8.count <= 45 ? [String(character)] : character.unicodeScalars.map { String($0) }
        }
        for piece in pieces {
            if !chunk.isEmpty, chunk.utf8.count + piece.utf8.count > 45 {
                words.append(chunk)
                chunk = ""
            }
            chunk += piece
        }
        if !chunk.isEmpty { words.append(chunk) }
        return words.map { "=?UTF-8?B?\(Data($0.utf8).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }
}
