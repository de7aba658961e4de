/// A source's HTTP options — what `defaults:` may set for every HTTP source and a source may
/// override: request headers, User-Agent, connect time-out, and the ``HTTPTransport`` (HTTP
/// version, proxy, TLS trust, basic auth, cookies).
package struct HTTPSourceOptions: Sendable, Equatable {
    /// Extra request headers by name; a source's own replace `defaults:`' of the same name.
    public var headers: [String: String] = [:]
    public var userAgent = HTTPRequest.defaultUserAgent
    /// The longest time to set up a connection (DNS, TCP, TLS), within the deadline.
    public var connectTimeout: Duration = .seconds(10)
    public var transport = HTTPTransport()

    public init() {}

    /// The keys, in the order `fetchrun adapters` lists them.
    static let keys = ["headers", "user_agent", "timeout_connect", "http2", "proxy", "no_proxy", "ca_file", "insecure", "username", "password", "cookies"]

    /// The options as ``AdapterOption``s, for adapters that fetch over HTTP.
    static let adapterOptions = [
        AdapterOption("headers", kind: "map", default: "none", "extra request headers, e.g. Authorization: \"Bearer ${TOKEN}\" (merged with defaults:)"),
        AdapterOption("user_agent", kind: "string", default: HTTPRequest.defaultUserAgent, "the User-Agent header"),
        AdapterOption("timeout_connect", kind: "duration", default: "10s", "longest time to connect (DNS, TCP, TLS), within the deadline"),
        AdapterOption("http2", kind: "auto, prior-knowledge or 1.1", default: "auto", "auto: HTTP/2 over https when the server offers it; prior-knowledge: HTTP/2 also over plain http; 1.1: never HTTP/2"),
        AdapterOption("proxy", kind: "URL", default: "the environment's", "http://, https://, socks5:// or socks5h:// proxy (credentials in the URL are never shown)"),
        AdapterOption("no_proxy", kind: "string", default: "none", "comma-separated hosts reached without the proxy, or *"),
        AdapterOption("ca_file", kind: "path", default: "system CAs", "PEM file of the certificate authorities to trust (relative to the config)"),
        AdapterOption("insecure", kind: "true or false", default: "false", "skip the TLS certificate check (every fetch warns)"),
        AdapterOption("username", kind: "string", default: "none", "HTTP basic authentication user"),
        AdapterOption("password", kind: "string", default: "none", "HTTP basic authentication password, e.g. ${FEED_PASSWORD}; never shown or stored"),
        AdapterOption("cookies", kind: "map", default: "none", "cookies sent with every request, name: value (merged with defaults:)"),
    ]

    /// Applies the HTTP keys among `entries` over `self`; problems are reported with their
    /// line:column. Messages name headers, cookies and the password, never their values.
    mutating func apply(_ entries: [YAMLMappingEntry], configDirectory: String, source: String?, reader: ConfigValueReader) {
        for entry in entries {
            let node = entry.value
            switch entry.key.value {
            case "headers":
                for (name, value, mark) in stringMap(node, key: "headers", source: source, reader: reader) {
                    if !HTTPText.isHeaderName(name) {
                        reader.report("header '\(TerminalText.safe(name))': a header name is letters, digits and !#$%&'*+-.^_`|~ only (no ':', spaces or control characters)", at: mark, source: source)
                    } else if let problem = HTTPText.controlCharacterProblem(value) {
                        reader.report("header '\(name)': its value \(problem)", at: mark, source: source)
                    } else {
                        headers[name] = value
                    }
                }
            case "user_agent":
                guard let value = reader.string(node, key: "user_agent", source: source) else { continue }
                if let problem = HTTPText.controlCharacterProblem(value) {
                    reader.report("'user_agent' \(problem)", at: node.mark, source: source)
                } else {
                    userAgent = value
                }
            case "timeout_connect":
                if let value = reader.duration(node, key: "timeout_connect", source: source) { connectTimeout = value }
            case "http2":
                let names = HTTPTransport.Version.allCases.map(\.rawValue)
                if let version = reader.value(node, key: "http2", what: "HTTP version", source: source, parse: { text in
                    guard let version = HTTPTransport.Version(rawValue: text.lowercased()) else { throw ValueError("use one of \(names.joined(separator: ", "))") }
                    return version
                }) {
                    transport.version = version
                }
            case "proxy":
                // Not `reader.value`, whose message quotes the text: a proxy URL may hold a password.
                guard let text = reader.string(node, key: "proxy", source: source) else { continue }
                do {
                    transport.proxy = try Self.checkProxy(text)
                } catch {
                    reader.report("'proxy': not a usable proxy URL: \(error)", at: node.mark, source: source)
                }
            case "no_proxy":
                guard let value = reader.string(node, key: "no_proxy", source: source) else { continue }
                if let problem = HTTPText.controlCharacterProblem(value) {
                    reader.report("'no_proxy' \(problem)", at: node.mark, source: source)
                } else {
                    transport.noProxy = value
                }
            case "ca_file":
                guard let path = reader.string(node, key: "ca_file", source: source) else { continue }
                let resolved = ConfigLoader.resolve(path, against: configDirectory)
                if path.isEmpty {
                    reader.report("'ca_file' must not be empty", at: node.mark, source: source)
                } else if !SafeFile.exists(resolved) {
                    reader.report("'ca_file': no file at \(TerminalText.safe(resolved))", at: node.mark, source: source)
                } else {
                    transport.caFile = resolved
                }
            case "insecure":
                if let value = reader.boolean(node, key: "insecure", source: source) { transport.insecure = value }
            case "username":
                guard let value = reader.string(node, key: "username", source: source) else { continue }
                if value.contains(":") || HTTPText.controlCharacterProblem(value) != nil {
                    reader.report("'username' must not hold ':' or control characters", at: node.mark, source: source)
                } else {
                    transport.username = value
                }
            case "password":
                guard let value = reader.string(node, key: "password", source: source) else { continue }
                if HTTPText.controlCharacterProblem(value) != nil {
                    reader.report("'password' holds a control character", at: node.mark, source: source)
                } else {
                    transport.password = value
                }
            case "cookies":
                for (name, value, mark) in stringMap(node, key: "cookies", source: source, reader: reader) {
                    if !HTTPText.isHeaderName(name) || name.contains("=") {
                        reader.report("cookie '\(TerminalText.safe(name))': a cookie name is letters, digits and !#$%&'*+-.^_`|~ only", at: mark, source: source)
                    } else if value.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || ";,\"\\".unicodeScalars.contains($0) }) {
                        reader.report("cookie '\(name)': its value holds a space, control character, ';', ',', '\"' or '\\', which a Cookie header cannot carry", at: mark, source: source)
                    } else {
                        transport.cookies[name] = value
                    }
                }
            default:
                break
            }
        }
        if transport.password != nil, transport.username == nil {
            let mark = entries.entry("password")?.value.mark
            if let mark { reader.report("'password' without 'username'", at: mark, source: source) }
        }
    }

    /// A mapping of strings with each value's place, `${VAR}` expanded.
    private func stringMap(_ node: YAMLNode, key: String, source: String?, reader: ConfigValueReader) -> [(String, String, SourceMark)] {
        guard let entries = reader.mapping(node, key: key, source: source) else { return [] }
        return entries.compactMap { entry in
            reader.string(entry.value, key: "\(key).\(entry.key.value)", source: source).map { (entry.key.value, $0, entry.value.mark) }
        }
    }

    /// A proxy URL curl will take: a scheme we name, a host, no control characters. The
    /// reasons never quote the URL, which may hold credentials.
    static func checkProxy(_ text: String) throws -> String {
        let schemes = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]
        guard let separator = text.range(of: "://") else { throw ValueError("write it with a scheme: \(schemes.map { "\($0)://" }.joined(separator: ", "))") }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard schemes.contains(scheme) else { throw ValueError("the scheme must be one of \(schemes.joined(separator: ", "))") }
        guard HTTPText.controlCharacterProblem(text) == nil, !text.contains(" ") else { throw ValueError("it holds a space or a control character") }
        guard let host = HTTPText.hostKey(of: "http" + text[separator.lowerBound...]), !host.isEmpty else { throw ValueError("it names no host") }
        return text
    }
}
