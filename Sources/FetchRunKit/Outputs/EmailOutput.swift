import Foundation

/// `type: email`: mail through SMTP (libcurl) — one per delivery with `per_item`, else one for
/// everything due (at a `digest:` schedule's times, when it has one). `format: html` (the
/// default) sends a text and an HTML form of it (``MailMessage``, ``MailLayout``); `format:
/// text` the text alone. The subject and the text come from templates or defaults.
struct EmailOutput: ConfigurableOutput {
    static let type = "email"
    static let keys = ["url", "from", "to", "username", "password", "per_item", "subject", "ca_file", "insecure", "starttls", "format", "images", "digest"]

    /// What a mail holds: text alone, or text and HTML.
    enum Format: String, Sendable, CaseIterable {
        case html, text
    }

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
        var format = Format.html
        /// `images: true`: a summary's remote images stay in the HTML (they tell the sender
        /// that the mail was opened); by default only their `alt` text does.
        var images = false
        /// The output's name: in `List-Id` and `Message-ID`.
        var outputName = "mail"
        /// Where the HTML part's dates are shown (the config's `timezone:`).
        var timeZone = TimeZone(identifier: "UTC") ?? .current
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
        // A template writes text: with one, the mail is text unless the config asks for HTML.
        settings.format = options.template == nil ? .html : .text
        if let written = options.string("format") {
            if let format = Format(rawValue: written) { settings.format = format } else {
                options.report("'format' must be html or text", key: "format")
            }
        }
        settings.images = options.boolean("images") ?? false
        settings.outputName = options.outputName
        settings.timeZone = options.timeZone
        template = options.template
        timeout = options.timeout
    }

    init(settings: Settings, template: OutputTemplate?, timeout: Duration) {
        self.settings = settings
        self.template = template
        self.timeout = timeout
    }

    func send(_ deliveries: [Delivery], through http: any HTTPExchange) async throws {
        // Every summary is parsed and rebuilt for the HTML part: parser work, off the shared threads.
        let (settings, template, date) = (settings, template, http.date)
        let message = try await runOffPool(name: "fetchrun-mail") { _ in Self.message(deliveries, settings: settings, template: template, date: date) }
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

    /// The message as it goes on the wire (``MailMessage``).
    static func message(_ deliveries: [Delivery], settings: Settings, template: OutputTemplate?, date: Date) -> String {
        MailMessage.make(deliveries, settings: settings, template: template, date: date)
    }
}
