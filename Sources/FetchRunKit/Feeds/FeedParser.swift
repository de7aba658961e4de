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
        let document = HTMLEntityRewriter.rewrite(data) ?? data
        let encoding = Self.declaresOwnEncoding(data) ? nil : charset
        do {
            return try parse(document, encoding: encoding)
        } catch let failure as EncodingMismatch {
            // The commonest encoding mistake: Windows-1252 / Latin-1 bytes labelled UTF-8.
            var feed = try parse(document, encoding: "windows-1252")
            feed.warnings.insert("read as Windows-1252: \(failure.message)", at: 0)
            return feed
        }
    }

    private struct EncodingMismatch: Error {
        var message: String
    }

    private func parse(_ document: Data, encoding: String?) throws -> Feed {
        try document.withUnsafeBytes { buffer -> Feed in
            // libxml2 does not copy its input: it is used only inside this closure.
            let bytes = buffer.baseAddress!.assumingMemoryBound(to: CChar.self)
            guard let reader = xmlReaderForMemory(bytes, Int32(buffer.count), baseURL, encoding, Self.options) else {
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
            if errors.sawEncodingError, encoding?.lowercased() != "windows-1252" {
                throw EncodingMismatch(message: errors.messages.first.map { "line \($0.line): \($0.text)" } ?? "invalid bytes")
            }
            if status < 0 || errors.hasFatal, !errors.sawEntityLoop,
               let recovered = recover(bytes, count: buffer.count, encoding: encoding, errors: errors) {
                return recovered
            }
            return try walker.finish(status: status, errors: errors)
        }
    }

    /// No network, no entity substitution, no DTD loading, libxml2's limits on; errors are
    /// collected, not printed.
    static let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
        | XML_PARSE_RECOVER.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_COMPACT.rawValue)

    /// The streaming reader gives up at the first well-formedness error, recovery or not; the
    /// tree parser in recovery mode goes on. For a broken document, its tree is walked with
    /// the same walker, and the errors become warnings. `nil` when even that finds no feed.
    private func recover(_ bytes: UnsafePointer<CChar>, count: Int, encoding: String?, errors: ErrorCollector) -> Feed? {
        guard let document = xmlReadMemory(bytes, Int32(count), baseURL, encoding, Self.options) else { return nil }
        defer { xmlFreeDoc(document) }
        guard let reader = xmlReaderWalker(document) else { return nil }
        defer { xmlFreeTextReader(reader) }
        var walker = FeedWalker(reader: reader, baseURL: baseURL)
        let status = walker.walk()
        guard status == 0, walker.format != nil, var feed = try? walker.finish(status: status, errors: ErrorCollector()) else { return nil }
        let first = errors.messages.first.map { "line \($0.line): \($0.text)" } ?? "not well-formed"
        feed.warnings.insert("recovered from broken XML (\(first))", at: 0)
        return feed
    }

    /// A byte-order mark or an `encoding="…"` in the XML declaration.
    static func declaresOwnEncoding(_ data: Data) -> Bool {
        let head = data.prefix(256)
        if head.starts(with: [0xEF, 0xBB, 0xBF]) || head.starts(with: [0xFE, 0xFF]) || head.starts(with: [0xFF, 0xFE]) { return true }
        guard head.starts(with: Array("<?xml".utf8)), let end = head.firstIndex(of: UInt8(ascii: ">")) else { return false }
        let declaration = Array(head[..<end])
        let word = Array("encoding".utf8)
        return declaration.count >= word.count && (0...(declaration.count - word.count)).contains { declaration[$0..<$0 + word.count].elementsEqual(word) }
    }
}

/// libxml2's errors for one parse; the first fatal one explains a failure.
final class ErrorCollector {
    var messages: [(line: Int, text: String, fatal: Bool)] = []
    var codes: Set<Int32> = []

    var hasFatal: Bool { messages.contains { $0.fatal } }

    /// Bytes that are not in the encoding the document claims: usually Latin-1 labelled UTF-8.
    var sawEncodingError: Bool { codes.contains(Int32(XML_ERR_INVALID_CHAR.rawValue)) || codes.contains(Int32(XML_ERR_INVALID_ENCODING.rawValue)) }

    /// Entities that refer to themselves or expand without end: an attack, not a broken feed.
    var sawEntityLoop: Bool { codes.contains(Int32(XML_ERR_ENTITY_LOOP.rawValue)) }

    func record(_ error: xmlError) {
        codes.insert(error.code)
        guard messages.count < 20 else { return }
        // libxml2's messages can span lines ("…indicate encoding !\nBytes: 0xE9…"): a report wants one.
        let text = error.message.map { String(cString: $0).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ") } ?? "unknown XML error"
        messages.append((Int(error.line), text, error.level == XML_ERR_FATAL))
    }
}
