import CLibXML2
import Foundation

/// A web page as `page` sources read it: parsed by libxml2's HTML parser (tag soup recovered,
/// no network, no entity expansion beyond HTML's own), then copied into an array of nodes in
/// document order, so that selecting, excluding and rendering are plain Swift over values.
///
/// Bounds, whatever the page: at most ``maximumNodes`` nodes are kept (a page with more fails
/// to parse — libxml2 is stopped as it passes them, before it has built the rest), elements
/// opened deeper than ``maximumDepth`` are flattened into the element at the limit (their text
/// kept, and everything after them read), and the body was already capped by `max_bytes`. The
/// walk polls the cancellation flag.
package struct HTMLDocument: Sendable {
    package struct Attribute: Sendable, Hashable {
        package var name: String
        package var value: String
    }

    package struct Node: Sendable {
        /// The element's lower-cased name; empty for a text node.
        package var name: String
        package var attributes: [Attribute]
        /// A text node's text (HTML entities already decoded).
        package var text: String
        /// The parent's index; -1 for the root.
        package var parent: Int
        /// One past the last index of this node's subtree: its descendants are `index+1..<end`.
        package var end: Int
        /// 1-based position among its parent's element children, and how many there are.
        package var position: Int
        package var siblingElements: Int

        package var isElement: Bool { !name.isEmpty }

        package func attribute(_ name: String) -> String? {
            attributes.first { $0.name == name }?.value
        }
    }

    package static let maximumNodes = 2_000_000
    package static let maximumDepth = 256

    /// `nodes[0]` is the document itself, named `#document`.
    package private(set) var nodes: [Node]
    /// Where relative links resolve: the page's `<base href>` (resolved), else its URL.
    package private(set) var baseURL: String?
    /// Elements opened deeper than ``maximumDepth``: not made, their content (text and the
    /// elements inside) kept in the element open at the limit, so that the rest of the page is
    /// still read.
    package private(set) var cutDepth = 0

    package struct ParseError: Error, Sendable, CustomStringConvertible {
        package var description: String

        static func tooManyNodes(_ limit: Int) -> ParseError {
            ParseError(description: "more than \(limit) elements and texts")
        }
    }

    /// Parses `data` and, when `xpath` is given, evaluates it on libxml2's own tree before that
    /// is freed.
    /// - Parameters:
    ///   - url: the page's URL, for relative links; `nil` for a local file.
    ///   - charset: the HTTP `charset`; the page's encoding is decided by ``HTMLEncoding``.
    ///   - nodeLimit: the most nodes a page may have, ``maximumNodes`` but in tests.
    /// - Throws: ``ParseError`` for an empty or unreadable page, or one past `nodeLimit`;
    ///   ``XPathQuery/EvaluationError``; `CancellationError` once `cancellation` is set.
    package static func parse(_ data: Data, url: String?, charset: String? = nil, xpath: XPathQuery? = nil, cancellation: CancellationFlag? = nil, nodeLimit: Int = maximumNodes) throws -> (document: HTMLDocument, xpathResult: [Selected]?) {
        guard !data.isEmpty else { throw ParseError(description: "an empty page") }
        fetchrun_xml_silence_generic_errors()
        let options = Int32(HTML_PARSE_NONET.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue | HTML_PARSE_RECOVER.rawValue)
        return try data.withUnsafeBytes { whole in
            // Decided here rather than by libxml2, which lets a `<meta>` override the HTTP header,
            // reads a page without a declaration as Latin-1, and keeps a byte-order mark's bytes
            // when something else is declared.
            let encoding = HTMLEncoding.sniff(whole, httpCharset: charset)
            let buffer = UnsafeRawBufferPointer(rebasing: whole[encoding.byteOrderMarkLength...])
            guard !buffer.isEmpty else { throw ParseError(description: "an empty page") }
            var passed: Int32 = 0
            var flattened: UInt = 0
            let document = fetchrun_html_read_memory(
                buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(clamping: buffer.count), encoding.name, options,
                UInt(max(0, nodeLimit)), UInt(Self.maximumDepth - 1), &passed, &flattened
            )
            defer { if let document { xmlFreeDoc(document) } }
            // Counted as libxml2 made them, and the parser stopped: what it built is a part.
            guard passed == 0 else { throw ParseError.tooManyNodes(nodeLimit) }
            guard let document else { throw ParseError(description: "not readable as HTML") }
            var builder = Builder(cancellation: cancellation, keepsAddresses: xpath != nil, nodeLimit: nodeLimit)
            try builder.copy(document)
            var page = HTMLDocument(nodes: builder.nodes, baseURL: url, cutDepth: Int(clamping: flattened) + builder.cutDepth)
            if let base = page.nodes.first(where: { $0.name == "base" })?.attribute("href") {
                page.baseURL = ItemDraft.resolve(base, against: url)
            }
            let selected = try xpath.map { try $0.evaluate(on: document, addresses: builder.addresses) }
            return (page, selected)
        }
    }

    /// What a selector picked: an element (by index), or text (an XPath attribute, text node,
    /// string or number).
    package enum Selected: Sendable, Hashable {
        case element(Int)
        case text(String)
    }

    /// Copies libxml2's tree, depth first, without recursion.
    private struct Builder {
        var nodes: [Node] = []
        var cutDepth = 0
        let cancellation: CancellationFlag?
        let keepsAddresses: Bool
        let nodeLimit: Int
        var addresses: [UInt: Int] = [:]

        init(cancellation: CancellationFlag?, keepsAddresses: Bool, nodeLimit: Int) {
            self.cancellation = cancellation
            self.keepsAddresses = keepsAddresses
            self.nodeLimit = nodeLimit
        }

        mutating func copy(_ document: htmlDocPtr) throws {
            nodes.append(Node(name: "#document", attributes: [], text: "", parent: -1, end: 1, position: 1, siblingElements: 1))
            // Each frame: the next libxml2 child to copy, the parent's index, its depth, and the
            // element children copied so far.
            var stack: [(next: xmlNodePtr?, parent: Int, depth: Int, elements: [Int])] = [(document.pointee.children, 0, 1, [])]
            while !stack.isEmpty {
                guard let current = stack[stack.count - 1].next else {
                    let frame = stack.removeLast()
                    nodes[frame.parent].end = nodes.count
                    // Positions are known as children are copied; the count only at the end.
                    for child in frame.elements { nodes[child].siblingElements = frame.elements.count }
                    continue
                }
                stack[stack.count - 1].next = current.pointee.next
                // Fields, not the frame: a copy of it would share its element list, and the
                // append below would then copy the list — for every child of a wide parent.
                let (parent, depth) = (stack[stack.count - 1].parent, stack[stack.count - 1].depth)
                if nodes.count % 4096 == 0, cancellation?.isCancelled == true { throw CancellationError() }
                guard nodes.count < nodeLimit else { throw ParseError.tooManyNodes(nodeLimit) }
                switch current.pointee.type {
                case XML_ELEMENT_NODE:
                    guard depth < HTMLDocument.maximumDepth else {
                        cutDepth += 1
                        continue
                    }
                    let index = nodes.count
                    stack[stack.count - 1].elements.append(index)
                    nodes.append(Node(
                        name: current.pointee.name.map { String(cString: $0).lowercased() } ?? "unknown",
                        attributes: Self.attributes(of: current), text: "", parent: parent, end: index + 1,
                        position: stack[stack.count - 1].elements.count, siblingElements: 0
                    ))
                    if keepsAddresses { addresses[UInt(bitPattern: current)] = index }
                    stack.append((current.pointee.children, index, depth + 1, []))
                case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                    guard let content = current.pointee.content else { continue }
                    let index = nodes.count
                    nodes.append(Node(name: "", attributes: [], text: String(cString: content), parent: parent, end: index + 1, position: 0, siblingElements: 0))
                    if keepsAddresses { addresses[UInt(bitPattern: current)] = index }
                default:
                    continue // comments, processing instructions, the doctype
                }
            }
        }

        static func attributes(of element: xmlNodePtr) -> [Attribute] {
            var result: [Attribute] = []
            var attribute = element.pointee.properties
            while let current = attribute {
                if let name = current.pointee.name {
                    result.append(Attribute(name: String(cString: name).lowercased(), value: HTMLDocument.content(of: UnsafeMutableRawPointer(current).assumingMemoryBound(to: xmlNode.self))))
                }
                attribute = current.pointee.next
            }
            return result
        }
    }

    /// The text libxml2 holds for a node (an attribute's value, a text's content).
    static func content(of node: xmlNodePtr) -> String {
        guard let text = xmlNodeGetContent(node) else { return "" }
        defer { fetchrun_xml_free(text) }
        return String(cString: text)
    }

    /// The indexes of the elements below `root` (not `root` itself), in document order.
    package func elements(below root: Int) -> some Sequence<Int> {
        ((root + 1)..<nodes[root].end).lazy.filter { nodes[$0].isElement }
    }

    /// The nearest enclosing element, or `nil` at the top.
    package func parentElement(of index: Int) -> Int? {
        let parent = nodes[index].parent
        return parent > 0 ? parent : nil
    }
}

/// An XPath 1.0 expression, checked when the config loads and evaluated by libxml2.
package struct XPathQuery: Sendable, Hashable, CustomStringConvertible {
    package let description: String

    package struct EvaluationError: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// The deepest nesting of brackets and parentheses an expression may have: libxml2 compiles
    /// an expression by recursion, and 50,000 nested parentheses overflowed the stack.
    package static let maximumNesting = 64

    /// - Throws: a reason naming where libxml2 stopped reading the expression, or where it
    ///   nests deeper than ``maximumNesting``.
    package init(_ text: String) throws {
        guard !text.isEmpty else { throw ValueError("an empty expression") }
        guard !text.utf8.contains(0) else { throw ValueError("the expression holds a NUL character") }
        if let column = Self.columnPastNesting(text) {
            throw ValueError("brackets and parentheses nested more than \(Self.maximumNesting) deep at column \(column)")
        }
        fetchrun_xml_silence_generic_errors()
        xmlResetLastError()
        guard let compiled = xmlXPathCompile(text) else {
            throw ValueError(Self.lastError(in: text) ?? "not an XPath 1.0 expression")
        }
        xmlXPathFreeCompExpr(compiled)
        description = text
    }

    /// The column (from 1, in characters) where `(` or `[` opens past ``maximumNesting``;
    /// brackets inside a string literal do not count.
    private static func columnPastNesting(_ text: String) -> Int? {
        var depth = 0, column = 0
        var quote: Character?
        for character in text {
            column += 1
            if let open = quote {
                if character == open { quote = nil }
                continue
            }
            switch character {
            case "'", "\"": quote = character
            case "(", "[":
                depth += 1
                if depth > maximumNesting { return column }
            case ")", "]": depth = max(0, depth - 1)
            default: break
            }
        }
        return nil
    }

    /// What libxml2 may count while evaluating one expression on one page: about 1.5 s of CPU
    /// on the machine it was measured on, where `//div//b` or `//p[b]/b` over a page of
    /// 400,000 nodes count fewer than 200,000.
    static let operationLimit: UInt = 50_000_000

    private static func lastError(in text: String) -> String? {
        guard let error = xmlGetLastError(), let message = error.pointee.message else { return nil }
        let reason = String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
        // libxml2 keeps the offset where it stopped in int1.
        let offset = Int(error.pointee.int1)
        return offset >= 0 && offset <= text.utf8.count ? "\(reason) at column \(offset + 1)" : reason
    }

    /// The nodes or value the expression gives on `document`: elements as indexes of the copy
    /// (through `addresses`), attributes and texts as their text, a string, number or boolean
    /// result as its text.
    fileprivate func evaluate(on document: htmlDocPtr, addresses: [UInt: Int]) throws -> [HTMLDocument.Selected] {
        guard let context = xmlXPathNewContext(document) else { throw XPathQuery.EvaluationError(description: "libxml2 could not make an XPath context") }
        defer { xmlXPathFreeContext(context) }
        // libxml2 cannot be cancelled, and an expression can take time that grows with a power
        // of the page's size (`//p[count(following-sibling::p) = count(preceding-sibling::p)]`
        // took 7 s over 20,000 paragraphs): its count of operations is what bounds the thread.
        context.pointee.opLimit = Self.operationLimit
        xmlResetLastError()
        guard let result = xmlXPathEvalExpression(description, context) else {
            if let error = xmlGetLastError(), error.pointee.domain == Int32(XML_FROM_XPATH.rawValue),
               error.pointee.code == Int32(XML_XPATH_EXPRESSION_OK.rawValue + XPATH_OP_LIMIT_EXCEEDED.rawValue) {
                throw XPathQuery.EvaluationError(description: "'\(description)' takes more than libxml2's \(Self.operationLimit) operations on this page; stopped")
            }
            throw XPathQuery.EvaluationError(description: "'\(description)' could not be evaluated" + (Self.lastError(in: description).map { ": \($0)" } ?? ""))
        }
        defer { xmlXPathFreeObject(result) }
        switch result.pointee.type {
        case XPATH_NODESET:
            guard let set = result.pointee.nodesetval, set.pointee.nodeNr > 0, let table = set.pointee.nodeTab else { return [] }
            var selected: [HTMLDocument.Selected] = []
            for position in 0..<Int(set.pointee.nodeNr) {
                guard let node = table[position] else { continue }
                switch node.pointee.type {
                case XML_ELEMENT_NODE:
                    // Absent: an element cut for its depth.
                    if let index = addresses[UInt(bitPattern: node)] { selected.append(.element(index)) }
                case XML_DOCUMENT_NODE, XML_HTML_DOCUMENT_NODE:
                    selected.append(.element(0))
                default:
                    selected.append(.text(HTMLDocument.content(of: node)))
                }
            }
            return selected
        case XPATH_STRING:
            return result.pointee.stringval.map { [.text(String(cString: $0))] } ?? []
        case XPATH_NUMBER:
            let number = result.pointee.floatval
            return [.text(JSONValue.number(number).scalarText ?? "\(number)")]
        case XPATH_BOOLEAN:
            return [.text(result.pointee.boolval != 0 ? "true" : "false")]
        default:
            return []
        }
    }
}
