import FetchRunKit
import Foundation

/// A file the fixture server serves at `/enclosures/<name>` the way podcast hosts do: with
/// `Accept-Ranges`, an ETag and Last-Modified, `If-Range` honoured — or, for tests, without
/// ranges, slowly, stalling part-way, or with a `Content-Disposition` name.
public struct FixtureEnclosure: Sendable {
    public var size: Int
    /// Changing it changes the bytes and the ETag: "the file changed on the server".
    public var version: Int
    /// Bytes per second; `nil` sends as fast as the socket takes them.
    public var bytesPerSecond: Int?
    /// `false`: every request gets the whole file with a 200, whatever Range it sent.
    public var acceptsRanges: Bool
    /// Send the file up to this offset, then hold the connection open sending nothing.
    public var stallAt: Int?
    public var contentDisposition: String?
    public var contentType: String
    /// The status to answer with instead of the file (a 404, say).
    public var status: Int?
    /// Answer every Range with a 206 of the current version, whatever `If-Range` says: a
    /// broken server that mixes two versions of a file into one download.
    public var ignoresIfRange: Bool

    public init(
        size: Int, version: Int = 1, bytesPerSecond: Int? = nil, acceptsRanges: Bool = true, stallAt: Int? = nil,
        contentDisposition: String? = nil, contentType: String = "audio/mpeg", status: Int? = nil, ignoresIfRange: Bool = false
    ) {
        self.ignoresIfRange = ignoresIfRange
        self.size = size
        self.version = version
        self.bytesPerSecond = bytesPerSecond
        self.acceptsRanges = acceptsRanges
        self.stallAt = stallAt
        self.contentDisposition = contentDisposition
        self.contentType = contentType
        self.status = status
    }

    /// The file's bytes: pseudo-random, fixed by name, size and version, so a test can check
    /// a download byte for byte without keeping a copy.
    public static func body(name: String, size: Int, version: Int) -> [UInt8] {
        var seed: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(name)#\(version)".utf8 {
            seed ^= UInt64(byte)
            seed &*= 0x100_0000_01b3
        }
        var generator = SplitMix64(state: seed)
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < size {
                var word = generator.next()
                let count = min(8, size - offset)
                withUnsafeBytes(of: &word) { buffer.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: count) }
                offset += count
            }
        }
        return bytes
    }

    func etag(name: String) -> String { "\"\(name)-v\(version)\"" }
    static let lastModified = "Tue, 20 Oct 2026 10:00:00 GMT"

    /// The response to one request: whole, a range, or a refusal.
    func response(name: String, request: FixtureServer.Request, server: FixtureServer) -> FixtureServer.Response {
        if let status {
            return .full(status: status, headers: [("Content-Type", "text/plain")], body: Array("status \(status)".utf8))
        }
        let body = server.generated("enclosure \(name) \(size) \(version)") { Self.body(name: name, size: size, version: version) }
        var headers = [("Content-Type", contentType), ("ETag", etag(name: name)), ("Last-Modified", Self.lastModified)]
        if acceptsRanges { headers.append(("Accept-Ranges", "bytes")) }
        if let contentDisposition { headers.append(("Content-Disposition", contentDisposition)) }

        var start = 0
        var status = 200
        if acceptsRanges, let range = request.headers["range"], range.hasPrefix("bytes="), range.hasSuffix("-"),
           let offset = Int(range.dropFirst(6).dropLast()) {
            let validator = request.headers["if-range"]
            if validator == nil || validator == etag(name: name) || validator == Self.lastModified || ignoresIfRange {
                guard offset < size else {
                    return .full(status: 416, headers: [("Content-Range", "bytes */\(size)")], body: [])
                }
                start = offset
                status = 206
                headers.append(("Content-Range", "bytes \(offset)-\(size - 1)/\(size)"))
            }
        }
        return .paced(status: status, headers: headers, body: body, from: start, bytesPerSecond: bytesPerSecond, stallAt: stallAt)
    }
}
