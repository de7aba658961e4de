import FetchRunCore
import Foundation

/// One mail for SMTP: the envelope (from, recipients) and the message as it goes on the wire
/// (headers, a blank line, the body; CRLF line ends). curl escapes lines that start with `.`.
public struct MailRequest: Sendable {
    public var url: String
    public var from: String
    public var recipients: [String]
    public var message: Data
    public var username: String?
    public var password: String?
    /// Every wait of the mail's, the goodbye included, ends by then.
    public var deadline: ContinuousClock.Instant
    package var transport: HTTPTransport
    /// For `smtp://`: STARTTLS before anything else, or fail (`starttls: off` clears it).
    public var requiresTLS: Bool

    public init(
        url: String, from: String, recipients: [String], message: Data, username: String? = nil, password: String? = nil,
        deadline: ContinuousClock.Instant, requiresTLS: Bool = true
    ) {
        self.init(url: url, from: from, recipients: recipients, message: message, username: username, password: password, deadline: deadline, transport: HTTPTransport(), requiresTLS: requiresTLS)
    }

    package init(
        url: String, from: String, recipients: [String], message: Data, username: String? = nil, password: String? = nil,
        deadline: ContinuousClock.Instant, transport: HTTPTransport, requiresTLS: Bool = true
    ) {
        self.requiresTLS = requiresTLS
        self.url = url
        self.from = from
        self.recipients = recipients
        self.message = message
        self.username = username
        self.password = password
        self.deadline = deadline
        self.transport = transport
    }
}
