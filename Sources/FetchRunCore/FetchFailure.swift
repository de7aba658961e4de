/// Why a source's fetch failed, told apart so reports and exit codes can say which.
public struct FetchFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The source's deadline passed and the fetch was cancelled.
        case deadlineExceeded
        /// The run was stopped (a signal) before the fetch ended.
        case cancelled
        /// Connecting, resolving, TLS, a transfer that broke off.
        case network
        /// Not tried: the source's host did not answer the requests before it (its breaker
        /// is open), so this one was not sent.
        case unreachable
        /// The server answered with an error status.
        case httpStatus
        /// The response could not be understood.
        case parse
        /// The response was read, but the source's selector found nothing in it, or not the
        /// kind of value it needs (a JSONPath that matches nothing, an object where text belongs).
        case selector
        /// The adapter failed for a reason of its own.
        case adapter
        /// The source's configuration cannot work.
        case config
        /// The fetch worked but its snapshot could not be written.
        case snapshot
        /// The state store could not be used: the source could not be leased or its fetch
        /// not recorded.
        case state
    }

    /// What a message keeps: a plugin's or a server's text can be any length, and it is stored
    /// with the source's state and sent in every report after.
    public static let maximumMessageLength = 1_000

    public var kind: Kind
    /// What went wrong, at most ``maximumMessageLength`` characters (longer ends in "…").
    public var message: String
    /// The HTTP status, for ``Kind/httpStatus``.
    public var status: Int?
    /// How long the server asked us to wait (`Retry-After` on a 429 or 503), for watch mode.
    public var retryAfter: Duration?

    public init(_ kind: Kind, _ message: String, status: Int? = nil, retryAfter: Duration? = nil) {
        self.kind = kind
        self.message = TerminalText.capped(message, to: Self.maximumMessageLength)
        self.status = status
        self.retryAfter = retryAfter
    }

    public var description: String { message }
}
