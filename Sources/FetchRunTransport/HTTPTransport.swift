import FetchRunCore
/// How a request reaches its server: HTTP version, proxy, TLS trust, credentials, cookies.
/// A source's HTTP options (and `defaults:`) become one of these.
///
/// Secrets (the password, cookie values, credentials inside a proxy URL) are handed to curl
/// and nowhere else: ``description`` masks them, and nothing stores them.
package struct HTTPTransport: Sendable, Hashable, CustomStringConvertible {
    /// Which HTTP the request speaks.
    public enum Version: String, Sendable, Hashable, CaseIterable {
        /// HTTP/2 over TLS when the server offers it (ALPN), HTTP/1.1 otherwise.
        case auto
        /// HTTP/2 from the first byte, also over plain http (`h2c`); for servers known to speak it.
        case priorKnowledge = "prior-knowledge"
        /// HTTP/1.1 only.
        case http1 = "1.1"
    }

    public var version: Version = .auto
    /// `http://`, `https://`, `socks5://` or `socks5h://` proxy URL; `nil` uses the
    /// environment's (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`), as curl does.
    public var proxy: String?
    /// Hosts reached without the proxy: comma-separated names (a leading `.` or none matches
    /// subdomains too), or `*`.
    public var noProxy: String?
    /// PEM file of the certificate authorities to trust instead of the system's.
    public var caFile: String?
    /// Do not check the server's certificate or name. Reported on every fetch.
    public var insecure = false
    /// HTTP basic authentication, sent to the URL's own host only (not after a redirect elsewhere).
    public var username: String?
    public var password: String?
    /// Cookies sent with every request, by name.
    public var cookies: [String: String] = [:]

    public init() {}

    /// The same way to the server without what identifies the user (basic auth, cookies): for
    /// requests to hosts the user did not name, such as a feed's enclosures.
    public var anonymous: HTTPTransport {
        var transport = self
        transport.username = nil
        transport.password = nil
        transport.cookies = [:]
        return transport
    }

    /// The `Cookie` header's value: names in order, so the same config sends the same bytes.
    var cookieHeader: String? {
        cookies.isEmpty ? nil : cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
    }

    /// For logs: what is set, secrets masked.
    public var description: String {
        var parts: [String] = []
        if version != .auto { parts.append("http2: \(version.rawValue)") }
        if let proxy { parts.append("proxy: \(HTTPText.removingCredentials(from: proxy))") }
        if let noProxy { parts.append("no_proxy: \(noProxy)") }
        if let caFile { parts.append("ca_file: \(caFile)") }
        if insecure { parts.append("insecure") }
        if let username { parts.append("username: \(username), password: \(password == nil ? "none" : "***")") }
        if !cookies.isEmpty { parts.append("cookies: \(cookies.keys.sorted().joined(separator: ", ")) (values ***)") }
        return parts.isEmpty ? "defaults" : parts.joined(separator: ", ")
    }
}
