import CLibXML2
import Foundation

/// Reads RSS 0.9x / 2.0, RSS 1.0 (RDF) and Atom 0.3 / 1.0 with libxml2's streaming reader.
///
/// Safe by construction: the document is parsed from memory with network access off
/// (`XML_PARSE_NONET`), entities are never substituted (no `XML_PARSE_NOENT`, so external
/// entities are never loaded and "billion laughs" never expands), DTDs are never loaded, and
/// libxml2's size and depth limits stay on (no `XML_PARSE_HUGE`). Undeclared HTML entities
/// such as `&nbsp;` are decoded from a fixed table; any other entity reference is dropped.
///
/// Elements are matched by namespace URI and local name, never by prefix. A field that cannot
/// be read (a bad date, say) is dropped and the item kept.
public struct FeedParser: Sendable {
    /// For relative links; usually the URL the feed was fetched from.
    public var baseURL: String?

    public init(baseURL: String? = nil) {
        self.baseURL = baseURL
    }

    /// Parses a feed document.
    /// - Parameter charset: the HTTP `charset`, used only when the document has neither a
    ///   byte-order mark nor an encoding declaration of its own.
    /// - Throws: ``FeedParseError`` when the bytes are not XML, not a feed, or broken beyond
    ///   recovery before any item could be read.
    public func parse(_ data: Data, charset: String? = nil) throws -> Feed {
        guard !data.isEmpty else { throw FeedParseError("empty document") }
        let encoding = Self.declaresOwnEncoding(data) ? nil : charset
        return try data.withUnsafeBytes { buffer -> Feed in
            // The reader does not copy its input: it is used only inside this closure.
            let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
                | XML_PARSE_RECOVER.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_COMPACT.rawValue)
            guard let reader = xmlReaderForMemory(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count), baseURL, encoding, options) else {
                throw FeedParseError("libxml2 could not start reading the document")
            }
            defer { xmlFreeTextReader(reader) }
            let errors = ErrorCollector()
            xmlTextReaderSetStructuredErrorHandler(reader, { context, error in
                guard let context, let error else { return }
                Unmanaged<ErrorCollector>.fromOpaque(context).takeUnretainedValue().record(error.pointee)
            }, Unmanaged.passUnretained(errors).toOpaque())
            var walker = FeedWalker(reader: reader, baseURL: baseURL)
            let status = withExtendedLifetime(errors) { walker.walk() }
            return try walker.finish(status: status, errors: errors)
        }
    }

    /// A byte-order mark or an `encoding="…"` in the XML declaration.
    static func declaresOwnEncoding(_ data: Data) -> Bool {
        let head = data.prefix(256)
        if head.starts(with: [0xEF, 0xBB, 0xBF]) || head.starts(with: [0xFE, 0xFF]) || head.starts(with: [0xFF, 0xFE]) { return true }
        guard head.starts(with: Array("<?xml".utf8)), let end = head.firstIndex(of: UInt8(ascii: ">")) else { return false }
        return String(decoding: head[..<end], as: UTF8.self).contains("encoding")
    }
}

/// libxml2's errors for one parse; the first fatal one explains a failure.
final class ErrorCollector {
    var messages: [(line: Int, text: String, fatal: Bool)] = []

    func record(_ error: xmlError) {
        guard messages.count < 20 else { return }
        // libxml2's messages can span lines ("…indicate encoding !\nBytes: 0xE9…"): a report wants one.
        let text = error.message.map { String(cString: $0).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ") } ?? "unknown XML error"
        messages.append((Int(error.line), text, error.level == XML_ERR_FATAL))
    }
}
