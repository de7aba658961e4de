import FetchRunCore
import Foundation
/// Checks and cleaning for text that crosses the HTTP layer's border.
///
/// Inbound, header values and user agents come from the config, where a `${VAR}` can expand to
/// anything: a line break there would add a header of the attacker's choosing. Outbound,
/// URLs leave the layer as base URLs, redirects and messages: credentials written into a URL
/// (`https://user:${PASS}@host/`) must not travel with them into snapshots and reports.
package enum HTTPText {
    /// Why `text` cannot be sent in a header: it holds a control character (anything below
    /// U+0020 but the tab, or DEL). `nil` when it can.
    package static func controlCharacterProblem(_ text: String) -> String? {
        for scalar in text.unicodeScalars where (scalar.value < 0x20 && scalar != "\t") || scalar.value == 0x7F {
            let name = scalar == "\r" ? "a carriage return" : scalar == "\n" ? "a line break" : "the control character U+\(String(scalar.value, radix: 16, uppercase: true).leftPadded(4, with: "0"))"
            return "holds \(name), which would let it add headers of its own"
        }
        return nil
    }

    /// Whether a header name is a token (RFC 9110): letters, digits and ``!#$%&'*+-.^_`|~``.
    package static func isHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
            default: return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
        }
    }

    /// The URL without the `user:password@` of its authority; other URLs unchanged.
    /// A URL path segment or query value with everything but unreserved characters (RFC 3986:
    /// letters, digits, `-._~`) percent-encoded, UTF-8 by UTF-8.
    package static func percentEncodedComponent(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    package static func removingCredentials(from url: String) -> String {
        guard let authority = authority(of: url), let at = url.utf8[authority].lastIndex(of: UInt8(ascii: "@")) else { return url }
        return String(url[..<authority.lowerBound]) + String(url[url.index(after: at)...])
    }

    /// Where `scheme://` ends and the path, query or fragment begins: `user:pw@host:port`.
    /// Read by bytes, as RFC 3986 defines it: this runs for every request and redirect, and
    /// Foundation's `range(of:)` went through a bridged string each time.
    static func authority(of url: String) -> Range<String.Index>? {
        let bytes = url.utf8
        var index = bytes.startIndex
        var start: String.Index?
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: ":") {
                let slash = bytes.index(after: index)
                if slash < bytes.endIndex, bytes[slash] == UInt8(ascii: "/") {
                    let second = bytes.index(after: slash)
                    if second < bytes.endIndex, bytes[second] == UInt8(ascii: "/") {
                        start = bytes.index(after: second)
                        break
                    }
                }
            }
            index = bytes.index(after: index)
        }
        guard let start else { return nil }
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        return start..<end
    }

    /// The host a URL's connections go to, as per-host limits count it: the name, lower-cased,
    /// with the port when it is not the scheme's default (`example.org`, `127.0.0.1:8080`).
    /// `nil` for a URL without an authority (`file:`).
    package static func hostKey(of url: String) -> String? {
        guard let authority = authority(of: url) else { return nil }
        let scheme = url[..<authority.lowerBound].dropLast(3).lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        var hostAndPort = url[authority]
        if let at = hostAndPort.utf8.lastIndex(of: UInt8(ascii: "@")) { hostAndPort = hostAndPort[hostAndPort.index(after: at)...] }
        let text = hostAndPort.lowercased()
        let defaultPort = scheme == "https" ? ":443" : ":80"
        return text.hasSuffix(defaultPort) ? String(text.dropLast(defaultPort.count)) : text
    }

    /// `scheme://host[:port]` of an http or https URL, lower-cased, the default port left out:
    /// what credentials and headers are bound to. `nil` for any other URL.
    package static func origin(of url: String) -> String? {
        guard let host = hostKey(of: url), let authority = authority(of: url) else { return nil }
        return url[..<authority.lowerBound].lowercased() + host
    }

    /// A header's value as a log may show it: whole, unless the header usually carries a
    /// secret (credentials, cookies, tokens, keys), which shows as `***`.
    package static func maskedHeaderValue(name: String, value: String) -> String {
        let lowered = name.lowercased()
        let secretWords = ["authorization", "cookie", "token", "secret", "password", "key", "session", "auth"]
        return secretWords.contains(where: lowered.contains) ? "***" : TerminalText.safe(value)
    }
}
