import CLibXML2
import Foundation

/// Reads RSS 0.9x / 2.0, RSS 1.0 (RDF) and Atom 0.3 / 1.0 with libxml2's SAX2 parser, and
/// JSON Feed 1.0 / 1.1 with ``JSONFeedReader`` (a document whose first character is `{`).
///
/// Safe by construction: the document is parsed from memory with network access off
/// (`XML_PARSE_NONET`); libxml2 never substitutes entities (no `XML_PARSE_NOENT`) and its
/// entity look-up answers only XML's five predefined names. Internal entities a feed declares
/// are expanded beforehand by ``DeclaredEntities``, bounded in nesting and in total size (a
/// "billion laughs" is refused); external and parameter entities are refused, so nothing is
/// loaded from outside; DTDs are never loaded; libxml2's size and depth limits stay on (no
/// `XML_PARSE_HUGE`). Undeclared HTML entities such as `&nbsp;` are turned into character
/// references first.
///
/// Elements are matched by namespace URI and local name, never by prefix. Broken documents
/// are read in libxml2's recovery mode; a field that cannot be read (a bad date, say) is
/// dropped and the item kept.
///
/// Bounded: ``FeedParseLimits`` caps attributes per element (checked before libxml2 reads the
/// document), items, and the text collected per field. ``parseOffPool(_:charset:)`` runs on a
/// thread of its own, off the cooperative pool, and stops when its task is cancelled.
package struct FeedParser: Sendable {
    /// For relative links; usually the URL the feed was fetched from.
    package var baseURL: String?
    package var limits: FeedParseLimits

    package init(baseURL: String? = nil, limits: FeedParseLimits = .standard) {
        self.baseURL = baseURL
        self.limits = limits
    }

    /// Parses a feed document on a thread of its own, so that a slow or hostile document never
    /// holds a thread of Swift's cooperative pool.
    /// - Throws: ``FeedParseError`` as the synchronous form does; `CancellationError` as soon
    ///   as the calling task is cancelled (at its deadline) — the parse itself stops at its
    ///   next element and its result is dropped.
    package func parseOffPool(_ data: Data, charset: String? = nil) async throws -> Feed {
        try await runOffPool(name: "fetchrun-parse") { cancellation in
            try self.parse(data, charset: charset, cancellation: cancellation)
        }
    }

    /// Parses a feed document.
    /// - Parameter charset: the HTTP `charset`, used only when the document has neither a
    ///   byte-order mark nor an encoding declaration of its own.
    /// - Parameter cancellation: polled at every element; once set, parsing stops and
    ///   `CancellationError` is thrown.
    /// - Throws: ``FeedParseError`` when the bytes are not XML, not a feed, broken beyond
    ///   recovery before any item could be read, or over ``limits``.
    package func parse(_ data: Data, charset: String? = nil, cancellation: CancellationFlag? = nil) throws -> Feed {
        guard !data.isEmpty else { throw FeedParseError("empty document") }
        if JSONFeedReader.looksLikeJSON(data) {
            return try JSONFeedReader(baseURL: baseURL, limits: limits).read(data, cancellation: cancellation)
        }
        // Entities the document declares are expanded here, within bounds; libxml2 then never
        // sees a declaration (and refuses any it still finds).
        let declared = try DeclaredEntities.expand(data) ?? data
        let document = HTMLEntityRewriter.rewrite(declared) ?? declared
        if let crowded = document.withUnsafeBytes({ limits.firstCrowdedElement(in: $0) }) {
            throw FeedParseError("refused: an element has more than \(limits.attributesPerElement) attributes (a defence against documents built to make the parser work for minutes)", line: crowded.line)
        }
        let encoding = Self.declaresOwnEncoding(data) ? nil : charset
        do {
            return try parse(document, encoding: encoding, cancellation: cancellation)
        } catch let failure as EncodingMismatch {
            // The commonest encoding mistake: Windows-1252 / Latin-1 bytes labelled UTF-8.
            var feed = try parse(document, encoding: "windows-1252", cancellation: cancellation)
            feed.warnings.insert("read as Windows-1252: \(failure.message)", at: 0)
            return feed
        }
    }

    private struct EncodingMismatch: Error {
        var message: String
    }

    /// No network, no entity substitution, no DTD loading, libxml2's limits on, recovery on;
    /// errors are collected, not printed.
    static let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
        | XML_PARSE_RECOVER.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_COMPACT.rawValue)

    private func parse(_ document: Data, encoding: String?, cancellation: CancellationFlag?) throws -> Feed {
        // Errors are collected through the SAX handler; none may reach stderr on their own.
        fetchrun_xml_silence_generic_errors()
        let walker = FeedWalker(baseURL: baseURL, limits: limits)
        let errors = ErrorCollector()
        let status = try document.withUnsafeBytes { buffer -> Int32 in
            // libxml2 does not copy its input: it is used only inside this closure.
            guard let context = xmlCreateMemoryParserCtxt(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count)) else {
                throw FeedParseError("libxml2 could not start reading the document")
            }
            defer {
                if let tree = context.pointee.myDoc { xmlFreeDoc(tree) }
                xmlFreeParserCtxt(context)
            }
            context.pointee.sax.pointee = Self.handler
            let callbacks = SAXCallbacks(walker: walker, errors: errors, cancellation: cancellation)
            callbacks.parser = context
            context.pointee.userData = Unmanaged.passUnretained(callbacks).toOpaque()
            xmlCtxtUseOptions(context, Self.options)
            if let encoding {
                guard let handler = xmlFindCharEncodingHandler(encoding) else { throw FeedParseError("unknown character encoding '\(encoding)'") }
                xmlSwitchToEncoding(context, handler)
            }
            return withExtendedLifetime(callbacks) { xmlParseDocument(context) }
        }
        if cancellation?.isCancelled == true { throw CancellationError() }
        if errors.sawEncodingError, encoding?.lowercased() != "windows-1252" {
            throw EncodingMismatch(message: errors.messages.first.map { "line \($0.line): \($0.text)" } ?? "invalid bytes")
        }
        return try walker.finish(status: status, errors: errors)
    }

    /// The SAX2 handler: element and text events go to the walker, errors to the collector,
    /// and entity look-ups find nothing beyond XML's predefined five.
    // Immutable once built; copied into each parser context.
    nonisolated(unsafe) private static let handler: xmlSAXHandler = {
        var handler = xmlSAXHandler()
        xmlSAXVersion(&handler, 2)
        handler.startDocument = nil
        handler.endDocument = nil
        handler.internalSubset = nil
        handler.externalSubset = nil
        handler.reference = nil
        handler.comment = nil
        handler.processingInstruction = nil
        handler.getEntity = { _, _ in nil }
        handler.getParameterEntity = { _, _ in nil }
        handler.entityDecl = { context, _, _, _, _, _ in
            SAXCallbacks.from(context).walker.declaredEntities += 1
        }
        handler.startElementNs = { context, localName, _, uri, _, _, attributeCount, _, attributes in
            guard let localName else { return }
            SAXCallbacks.with(context) { callbacks in
                callbacks.walker.startElement(localName: localName, uri: uri, attributes: attributes, count: Int(attributeCount))
                if callbacks.walker.shouldStop || callbacks.cancellation?.isCancelled == true, let parser = callbacks.parser { xmlStopParser(parser) }
            }
        }
        handler.endElementNs = { context, _, _, _ in
            SAXCallbacks.with(context) { $0.walker.endElement() }
        }
        handler.characters = { context, bytes, count in
            guard let bytes else { return }
            SAXCallbacks.with(context) { $0.walker.characters(bytes, count: Int(count)) }
        }
        handler.cdataBlock = handler.characters
        handler.ignorableWhitespace = handler.characters
        handler.serror = { context, error in
            guard let context, let error else { return }
            SAXCallbacks.from(context).errors.record(error.pointee)
        }
        return handler
    }()

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

/// What libxml2's callbacks reach through their opaque context pointer.
final class SAXCallbacks {
    let walker: FeedWalker
    let errors: ErrorCollector
    let cancellation: CancellationFlag?
    /// The parser, for stopping early once the document is known not to be a feed.
    var parser: xmlParserCtxtPtr?

    init(walker: FeedWalker, errors: ErrorCollector, cancellation: CancellationFlag?) {
        self.walker = walker
        self.errors = errors
        self.cancellation = cancellation
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> SAXCallbacks {
        Unmanaged<SAXCallbacks>.fromOpaque(context!).takeUnretainedValue()
    }

    /// `body` with the callbacks, without a retain and release around every SAX event: the
    /// parse holds them alive (`withExtendedLifetime`) for as long as libxml2 can call.
    static func with<T>(_ context: UnsafeMutableRawPointer?, _ body: (SAXCallbacks) -> T) -> T {
        Unmanaged<SAXCallbacks>.fromOpaque(context!)._withUnsafeGuaranteedRef(body)
    }
}

/// libxml2's errors for one parse; the first fatal one explains a failure.
final class ErrorCollector {
    var messages: [(line: Int, text: String, fatal: Bool)] = []
    var codes: Set<Int32> = []

    /// Bytes that are not in the encoding the document claims: usually Latin-1 labelled UTF-8.
    var sawEncodingError: Bool { codes.contains(Int32(XML_ERR_INVALID_CHAR.rawValue)) || codes.contains(Int32(XML_ERR_INVALID_ENCODING.rawValue)) }

    func record(_ error: xmlError) {
        codes.insert(error.code)
        guard messages.count < 20 else { return }
        // libxml2's messages can span lines ("…indicate encoding !\nBytes: 0xE9…"): a report wants one.
        let text = error.message.map { String(cString: $0).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ") } ?? "unknown XML error"
        messages.append((Int(error.line), text, error.level == XML_ERR_FATAL))
    }
}
