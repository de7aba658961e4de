import FetchRunCore
import Foundation

/// One GET request, with the limits fetchrun puts on every transfer.
public struct HTTPRequest: Sendable {
    public var url: String
    /// Sent as given, in order. Values may be secrets: they are never logged.
    public var headers: [(name: String, value: String)]
    /// The most body bytes accepted, counted after decompression.
    public var maxBodyBytes: Int
    /// When the transfer is given up. The calling task's cancellation ends it sooner.
    public var deadline: ContinuousClock.Instant
    /// The longest time to establish a connection, within the deadline.
    public var connectTimeout: Duration
    public var maxRedirects: Int
    public var userAgent: String
    /// Allows `file:` for this request's own URL. Redirects are always http/https only.
    public var allowsFileURL: Bool
    /// HTTP version, proxy, TLS trust, credentials and cookies.
    package var transport: HTTPTransport
    /// A body makes the request a POST (a webhook's); `nil` is a GET.
    public var body: Data?
    /// Another method for a request with a body, such as `PUT` (Matrix sends messages so);
    /// `nil` is a POST.
    package var bodyMethod: String?
    /// For answers read only for their status (a webhook's): past ``maxBodyBytes`` the body is
    /// cut and the transfer ended there, with the response so far — a large or endless body
    /// costs bounded memory and is not a failure.
    package var cutsLongBody = false
    /// Whether curl follows redirects itself. Off, a 3xx is the response, with its target in
    /// ``HTTPResponse/redirectURL``: ``CurlHTTPClient`` walks the hops itself when the request
    /// carries what belongs to its own origin only.
    package var followsRedirects = true
    /// The deadline of the fetch this request belongs to: it stands still while the request
    /// waits for a slot on its host (the wait is fetchrun's, not the source's), and
    /// ``deadline`` moves with it. `nil` outside a fetch.
    package var budget: FetchDeadline?

    public static let defaultMaxBodyBytes = 10 * 1024 * 1024
    public static let defaultUserAgent = "fetchrun/\(FetchRunVersion.current) (libcurl)"

    /// A GET of `url` with curl's defaults for proxies and TLS; the kit's own options (a
    /// source's proxy, CA file, credentials) come through its `transport`.
    public init(
        url: String,
        headers: [(name: String, value: String)] = [],
        deadline: ContinuousClock.Instant,
        maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes,
        connectTimeout: Duration = .seconds(10),
        maxRedirects: Int = 5,
        userAgent: String = HTTPRequest.defaultUserAgent,
        allowsFileURL: Bool = false
    ) {
        self.init(url: url, headers: headers, deadline: deadline, maxBodyBytes: maxBodyBytes, connectTimeout: connectTimeout, maxRedirects: maxRedirects, userAgent: userAgent, allowsFileURL: allowsFileURL, transport: HTTPTransport())
    }

    package init(
        url: String,
        headers: [(name: String, value: String)] = [],
        deadline: ContinuousClock.Instant,
        maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes,
        connectTimeout: Duration = .seconds(10),
        maxRedirects: Int = 5,
        userAgent: String = HTTPRequest.defaultUserAgent,
        allowsFileURL: Bool = false,
        transport: HTTPTransport
    ) {
        self.transport = transport
        self.url = url
        self.headers = headers
        self.deadline = deadline
        self.maxBodyBytes = maxBodyBytes
        self.connectTimeout = connectTimeout
        self.maxRedirects = maxRedirects
        self.userAgent = userAgent
        self.allowsFileURL = allowsFileURL
    }
}

extension HTTPRequest {
    /// Headers fetchrun adds that carry nothing of the origin's (what answers it takes, and
    /// the validators, which came from the final URL after the redirects): kept on a hop to
    /// another origin.
    static let portableHeaders: Set<String> = ["accept", "if-none-match", "if-modified-since"]

    /// What this request sends that is meant for its own origin only: its header names (all
    /// but ``portableHeaders``), `cookies`, `username and password`. Empty when a redirect
    /// anywhere could carry nothing of it.
    var originBound: [String] {
        var bound = headers.map(\.name).filter { !Self.portableHeaders.contains($0.lowercased()) }
        if !transport.cookies.isEmpty { bound.append("cookies") }
        if transport.username != nil { bound.append("username and password") }
        return bound
    }
}
