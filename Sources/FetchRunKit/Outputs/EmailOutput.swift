import Foundation

/// `type: email`: a plain-text mail through SMTP (libcurl) — one per delivery with
/// `per_item`, else one for everything due. The subject and body come from templates or
/// defaults; header fields are kept to one line (a title cannot add headers) and non-ASCII
/// subjects are encoded (RFC 2047).
struct EmailOutput: ConfigurableOutput {
    static let type = "email"
    static let keys = ["url", "from", "to", "username", "password", "per_item", "subject", "ca_file", "insecure", "starttls"]

    /// Where and how a mail goes.
    struct Settings: Sendable {
        /// `smtp://host[:port]` (STARTTLS required unless ``requiresTLS`` is off) or `smtps://host[:port]`.
        var url: String
        /// `starttls: off` clears it: a local relay without TLS, never with a password.
        var requiresTLS = true
        /// The URL as the config writes it (`${VAR}` unexpanded), for messages.
        var writtenURL: String?
        var from: String
        var to: [String]
        var username: String?
        /// Never printed, logged or stored.
        var password: String?
        var perItem: Bool
        var subject: OutputTemplate?
        var transport = HTTPTransport()
    }

    var settings: Settings
    var template: OutputTemplate?
    var timeout: Duration

    var batchSize: Int { settings.perItem ? 1 : 200 }
    var target: String { "\(shownURL) → \(settings.to.joined(separator: ", "))" }
    private var shownURL: String { HTTPText.removingCredentials(from: settings.writtenURL ?? settings.url) }

    init(options: OutputOptions) throws {
        let url = options.required("url", "smtp:// or smtps://")
        if let url, !(url.lowercased().hasPrefix("smtp://") || url.lowercased().hasPrefix("smtps://")) {
            options.report("'url' must be smtp://host[:port] or smtps://host[:port]", key: "url")
        }
        // `starttls: required` (the default) or `off`; off only for smtp:// and never with a
        // password, which would then cross the wire in cleartext.
        var requiresTLS = true
        if let startTLS = options.string("starttls") {
            switch startTLS {
            case "required": break
            case "off":
                requiresTLS = false
                if url?.lowercased().hasPrefix("smtps://") == true {
                    options.report("'starttls: off' is for smtp:// relays; smtps:// is TLS throughout", key: "starttls")
                }
                if options.contains("password") {
                    options.report("'starttls: off' sends everything in cleartext: it cannot be used with a 'password'", key: "starttls")
                }
            default:
                options.report("'starttls' must be required or off", key: "starttls")
            }
        }
        if !options.contains("from") { options.report("output '\(options.outputName)': missing 'from'") }
        if !options.contains("to") { options.report("output '\(options.outputName)': missing 'to' (a list of addresses)") }
        settings = Settings(
            url: url ?? "", from: options.address("from") ?? "", to: options.addresses("to") ?? [], username: options.string("username"),
            password: options.secret("password"), perItem: options.boolean("per_item") ?? false, subject: options.template("subject"),
            transport: options.transport(proxy: false)
        )
        settings.requiresTLS = requiresTLS
        settings.writtenURL = options.written("url")
        template = options.template
        timeout = options.timeout
    }

    init(settings: Settings, template: OutputTemplate?, timeout: Duration) {
        self.settings = settings
        self.template = template
        self.timeout = timeout
    }

    func send(_ deliveries: [Delivery], through http: any HTTPExchange) async throws {
        let message = Self.message(deliveries, settings: settings, template: template, date: http.date)
        let mail = MailRequest(
            url: settings.url, from: settings.from, recipients: settings.to, message: Data(message.utf8),
            username: settings.username, password: settings.password, deadline: http.now + timeout, transport: settings.transport,
            requiresTLS: settings.requiresTLS
        )
        do {
            let code = try await http.send(mail)
            guard code == 0 || (200..<300).contains(code) else { throw OutputError("the SMTP server answered \(code)") }
        } catch let error as HTTPError {
            throw OutputError("\(shownURL): \(error.message)")
        }
    }

    /// The message as it goes on the wire.
    static func message(_ deliveries: [Delivery], settings: Settings, template: OutputTemplate?, date: Date) -> String {
        let fields = deliveries.map(\.fields)
        var first = fields.first ?? [:]
        first["count"] = String(deliveries.count)
        let subject = settings.subject?.render(first) ?? defaultSubject(deliveries, fields: first)
        let bodies = zip(deliveries, fields).map { delivery, fields in template?.render(fields) ?? defaultBody(delivery.kind, fields) }
        let headers = [
            "From: \(oneLine(settings.from))",
            // One address a line past the first: a long list stays within 998 bytes a line.
            "To: \(settings.to.map(oneLine).joined(separator: ",\r\n "))",
            "Subject: \(encodedHeader(oneLine(subject)))",
            "Date: \(rfc5322Date(date))",
            "Message-ID: <\(UUID().uuidString.lowercased())@fetchrun>",
            "X-Fetchrun-Delivery-Ids: \(deliveryIDs(deliveries))",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
        ]
        var body = bodies.joined(separator: "\n").replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
        if !body.hasSuffix("\r\n") { body += "\r\n" }
        // A mail's lines may be 998 bytes at most (RFC 5322); a summary is often one long line,
        // which a server may refuse or break anywhere. Such a body goes quoted-printable.
        let fits = body.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).allSatisfy { $0.count <= 999 }
        let encoding = fits ? "Content-Transfer-Encoding: 8bit" : "Content-Transfer-Encoding: quoted-printable"
        return (headers + [encoding]).joined(separator: "\r\n") + "\r\n\r\n" + (fits ? body : quotedPrintable(body))
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

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
