import Foundation

/// The top-level `listen:` block (and `--listen`): where `watch` and `worker` serve
/// `/metrics`, `/healthz`, `/readyz` and `/status`, and who may ask.
///
/// Off unless given. A loopback address serves this machine only; any other address must
/// say who may ask — a bearer `token` (from `${VAR}`), an `allow` list of networks, or both —
/// since a metrics endpoint open to a network is a way in.
package struct ListenSettings: Sendable, Equatable {
    package var host: String
    package var port: Int
    /// Every request must carry `Authorization: Bearer <token>` when set. Never printed.
    package var token: String?
    /// Peers outside these networks are refused (loopback is always allowed); empty: any peer.
    package var allow: [IPNetwork]
    /// `feed_token:`: feed readers cannot send a header, so `/feeds/*` also takes this token as
    /// `?token=`. Never printed; `allow:` still applies.
    package var feedToken: String?
    /// `dashboard:`: the pages at `/` with their actions (``DashboardMode/on``), without them
    /// (`read_only`), or no pages at all (`off`).
    package var dashboard: DashboardMode = .on

    /// What `dashboard:` allows.
    package enum DashboardMode: String, Sendable, Equatable, CaseIterable {
        /// The pages and their two actions, "check now" and "retry".
        case on
        /// The pages; the actions are neither shown nor accepted.
        case readOnly = "read_only"
        /// No pages: `/` and the rest answer 404.
        case off
    }

    package init(host: String, port: Int, token: String? = nil, allow: [IPNetwork] = []) {
        self.host = host
        self.port = port
        self.token = token
        self.allow = allow
    }

    /// `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (loopback).
    /// - Throws: a message saying what is wrong with `text`.
    package static func address(_ text: String) throws(ConfigValueError) -> (host: String, port: Int) {
        var host: Substring, portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw ConfigValueError("'\(text)' must be HOST:PORT ([IPv6]:PORT for an IPv6 address)") }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw ConfigValueError("'\(text)' must be HOST:PORT, for example 127.0.0.1:9464") }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { throw ConfigValueError("'\(text)': write an IPv6 address in brackets, [::1]:9464") }
        }
        if host.isEmpty { host = "127.0.0.1" }
        guard let port = Int(portText), (1...65_535).contains(port) else { throw ConfigValueError("'\(text)': the port must be a number from 1 to 65535") }
        return (String(host), port)
    }

    /// Whether the address serves this machine only.
    /// `host:port` as it is written (``address(_:)`` reads it back): an IPv6 host in brackets.
    package var written: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    package var isLoopback: Bool {
        host == "localhost" || (IPNetwork.bytes(of: host).map(IPNetwork.isLoopback) ?? false)
    }

    /// Why these settings cannot be used, or `nil`.
    package var problem: String? {
        guard !isLoopback, token == nil, allow.isEmpty else { return nil }
        return "listening on \(host) (not loopback) needs 'token' or 'allow' under 'listen:' (a metrics endpoint open to a network is a way in)"
    }

    /// Whether a request from `peer` with `authorization` (its header) may be answered.
    package func admits(peer: String?, authorization: String?) -> Bool {
        if let token, !Self.same("Bearer \(token)", authorization ?? "") { return false }
        return admitsPeer(peer)
    }

    /// Whether a `/feeds/*` request may be answered: with the feed token as `?token=`, or as any
    /// other request — except that a listener with `feed_token:` and no `token:` (loopback)
    /// still asks feed readers for theirs. `allow:` applies either way.
    package func admitsFeed(peer: String?, authorization: String?, feedToken given: String?) -> Bool {
        if let feedToken, Self.same(feedToken, given ?? "") { return admitsPeer(peer) }
        return (feedToken == nil || token != nil) && admits(peer: peer, authorization: authorization)
    }

    /// Whether `peer` is in `allow:` (or loopback); any peer when `allow:` is empty.
    package func admitsPeer(_ peer: String?) -> Bool {
        guard !allow.isEmpty else { return true }
        guard let peer, let bytes = IPNetwork.bytes(of: peer) else { return false }
        return IPNetwork.isLoopback(bytes) || allow.contains { $0.contains(bytes) }
    }

    /// Compared in constant time: the endpoint must not tell how much of a guess was right.
    package static func same(_ expected: String, _ given: String) -> Bool {
        let expected = Array(expected.utf8), given = Array(given.utf8)
        var difference = expected.count ^ given.count
        for index in expected.indices { difference |= Int(expected[index] ^ (index < given.count ? given[index] : 0)) }
        return difference == 0
    }
}

/// A network in CIDR notation: `10.0.0.0/8`, `192.168.1.7` (one host), `fd00::/8`.
package struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    let address: [UInt8]
    let prefixLength: Int
    package let description: String

    /// - Throws: a message naming what is wrong.
    package init(_ text: String) throws(ConfigValueError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.bytes(of: String(parts[0])) else { throw ConfigValueError("'\(text)' is not a network: an IPv4 or IPv6 address, then /prefix") }
        let length = parts.count > 1 ? Int(parts[1]) : address.count * 8
        guard let length, (0...(address.count * 8)).contains(length) else { throw ConfigValueError("'\(text)': the prefix must be from 0 to \(address.count * 8)") }
        self.address = address
        prefixLength = length
        description = text
    }

    func contains(_ bytes: [UInt8]) -> Bool {
        var bytes = bytes
        // An IPv4 peer on an IPv6 socket arrives as ::ffff:a.b.c.d.
        if address.count == 4, bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { bytes = Array(bytes[12...]) }
        guard bytes.count == address.count else { return false }
        var remaining = prefixLength
        for index in address.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            guard bytes[index] & mask == address[index] & mask else { return false }
            remaining -= bits
        }
        return true
    }

    /// An address's bytes (4 or 16), or `nil` when it is not an IP address.
    static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func isLoopback(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 { return bytes[0] == 127 }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
        // ::ffff:127.x.y.z
        return bytes.count == 16 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
    }
}

/// What is wrong with one config value, said in words.
package struct ConfigValueError: Error, Sendable, Equatable, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}
