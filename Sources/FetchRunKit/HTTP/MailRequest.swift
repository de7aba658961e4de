import Foundation

/// One mail for SMTP: the envelope (from, recipients) and the message as it goes on the wire
/// (headers, a blank line, the body; CRLF line ends). curl escapes lines that start with `.`.
package struct MailRequest: Sendable {
    package var url: String
    package var from: String
    package var recipients: [String]
    package var message: Data
    package var username: String?
    package var password: String?
    package var deadline: ContinuousClock.Instant
    package var transport: HTTPTransport
    /// For `smtp://`: STARTTLS before anything else, or fail (`starttls: off` clears it).
    package var requiresTLS: Bool

    package init(
        url: String, from: String, recipients: [String], message: Data, username: String? = nil, password: String? = nil,
        deadline: ContinuousClock.Instant, transport: HTTPTransport = HTTPTransport(), requiresTLS: Bool = true
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
