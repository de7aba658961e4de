import Foundation

/// One entry of the config's `outputs:` list: where new items (and, if asked, failure alerts)
/// are sent.
public struct OutputConfig: Sendable {
    public enum Event: String, Sendable, Hashable, CaseIterable {
        /// New items of the sources that send here.
        case items
        /// A source failing `alert_after` times in a row, and its recovery.
        case failures
    }

    public enum Destination: Sendable {
        /// `type: command`: a program (no shell) that gets deliveries as NDJSON on stdin —
        /// all that are due in one run of it, or one run per delivery with `per_item`.
        case command(executable: String, arguments: [String], perItem: Bool)
        /// `type: webhook`: an HTTP POST of JSON (one delivery, or `batch` of them as an array),
        /// or of the template's text.
        case webhook(url: String, headers: [(name: String, value: String)], batch: Int, transport: HTTPTransport)
        /// `type: email`: a mail through SMTP (libcurl): one per delivery with `per_item`, else
        /// one for all that are due.
        case email(EmailSettings)
    }

    public struct EmailSettings: Sendable {
        /// `smtp://host[:port]` (STARTTLS when the server offers it) or `smtps://host[:port]`.
        public var url: String
        public var from: String
        public var to: [String]
        public var username: String?
        /// Never printed, logged or stored.
        public var password: String?
        public var perItem: Bool
        public var subject: OutputTemplate?
        public var transport: HTTPTransport
    }

    public var name: String
    public var destination: Destination
    public var events: Set<Event> = [.items]
    /// Failures in a row before a `failures` output hears of a source.
    public var alertAfter = 3
    /// The body's text per delivery; `nil` sends JSON (webhook) or the default text (email).
    public var template: OutputTemplate?
    /// The longest one delivery attempt may take.
    public var timeout: Duration = .seconds(60)
    /// Where the entry starts in the config file.
    public var mark = SourceMark(line: 0, column: 0)

    public var type: String {
        switch destination {
        case .command: return "command"
        case .webhook: return "webhook"
        case .email: return "email"
        }
    }

    /// What the output sends to, for listings: the program, the URL without credentials, the
    /// recipients.
    public var target: String {
        switch destination {
        case .command(let executable, let arguments, _): return ([executable] + arguments).joined(separator: " ")
        case .webhook(let url, _, _, _): return HTTPText.removingCredentials(from: url)
        case .email(let email): return "\(HTTPText.removingCredentials(from: email.url)) → \(email.to.joined(separator: ", "))"
        }
    }
}

/// Which outputs a source sends to, and which of its items.
public struct SourceRouting: Sendable {
    /// `outputs:` of the source: `nil` sends to every output, `[]` to none.
    public var outputs: [String]?
    public var filter = ItemFilter()
    /// Send what a source's first fetch finds (`send_baseline: true`); by default a first
    /// fetch only sets the baseline.
    public var sendBaseline = false

    public init(outputs: [String]? = nil, filter: ItemFilter = ItemFilter(), sendBaseline: Bool = false) {
        self.outputs = outputs
        self.filter = filter
        self.sendBaseline = sendBaseline
    }

    /// The outputs of `all` this source's `event`s go to.
    public func outputs(for event: OutputConfig.Event, among all: [OutputConfig]) -> [OutputConfig] {
        all.filter { $0.events.contains(event) && (outputs?.contains($0.name) ?? true) }
    }
}
