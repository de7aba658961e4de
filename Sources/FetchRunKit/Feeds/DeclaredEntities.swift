import Foundation

/// Expands the internal entities a feed declares in its DOCTYPE (`<!ENTITY copy "©">`), before
/// libxml2 reads it, so that such feeds are read instead of refused — within bounds that stop
/// the attacks entity declarations are known for.
///
/// - Only internal general entities are expanded. A document that declares an external entity
///   (`SYSTEM`, `PUBLIC`: XXE) or a parameter entity (`%name;`) is refused: nothing is ever
///   loaded from outside the document.
/// - Expansion is bounded like libxml2's own amplification check: entities nest at most
///   ``maximumNesting`` deep, and the expanded document may be at most
///   ``maximumAmplification`` times the size of the original (plus a small allowance), so a
///   "billion laughs" is refused after a few kilobytes of work, not after gigabytes.
///
/// The declarations are removed (the DOCTYPE keeps its name), and every reference to a
/// declared entity in the document's content and attribute values is replaced by its text;
/// comments and CDATA sections are left alone, as XML says.
enum DeclaredEntities {
    static let maximumNesting = 8
    static let maximumAmplification = 10
    static let allowance = 64 << 10
    static let maximumDeclarations = 1_000

    /// The document with its declared entities expanded; `nil` when it declares none (or is
    /// UTF-16, whose bytes this does not read; libxml2 then refuses any declarations).
    /// - Throws: ``FeedParseError`` for external or parameter entities, and past the bounds.
    static func expand(_ data: Data) throws -> Data? {
        if data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE]) { return nil }
        // Nearly every feed has no internal subset: a look at its prolog, and no copy.
        let hasSubset = data.withUnsafeBytes { raw in findDoctype(raw.bindMemory(to: UInt8.self))?.subset != nil }
        guard hasSubset else { return nil }
        let bytes = [UInt8](data)
        guard let doctype = findDoctype(bytes), let subset = doctype.subset else { return nil }
        let declarations = try readDeclarations(bytes[subset])
        guard !declarations.isEmpty else { return nil }

        let budget = bytes.count * maximumAmplification + allowance
        var expander = Expander(declarations: declarations, budget: budget)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        output += bytes[..<doctype.range.lowerBound]
        output += Array("<!DOCTYPE \(doctype.name)>".utf8)
        try expander.expandReferences(in: bytes[doctype.range.upperBound...], into: &output, depth: 0, skippingMarkupSections: true)
        return Data(output)
    }

    // MARK: The DOCTYPE

    private struct Doctype {
        var range: Range<Int>
        var name: String
        var subset: Range<Int>?
    }

    /// The DOCTYPE declaration in the prolog, if there is one before the first element.
    private static func findDoctype<C: RandomAccessCollection<UInt8>>(_ bytes: C) -> Doctype? where C.Index == Int {
        var index = bytes.startIndex
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index += 3 }
        while index < bytes.endIndex {
            guard bytes[index] == UInt8(ascii: "<") else {
                // Only whitespace may come between the prolog's parts.
                guard isSpace(bytes[index]) else { return nil }
                index += 1
                continue
            }
            if starts(bytes, at: index, with: "<?") {
                index = find(bytes, "?>", from: index + 2).map { $0 + 2 } ?? bytes.endIndex
            } else if starts(bytes, at: index, with: "<!--") {
                index = find(bytes, "-->", from: index + 4).map { $0 + 3 } ?? bytes.endIndex
            } else if starts(bytes, at: index, with: "<!DOCTYPE") {
                return readDoctype(bytes, at: index)
            } else {
                return nil
            }
        }
        return nil
    }

    private static func readDoctype<C: RandomAccessCollection<UInt8>>(_ bytes: C, at start: Int) -> Doctype? where C.Index == Int {
        var index = start + 9
        while index < bytes.endIndex, isSpace(bytes[index]) { index += 1 }
        let nameStart = index
        while index < bytes.endIndex, !isSpace(bytes[index]), bytes[index] != UInt8(ascii: "["), bytes[index] != UInt8(ascii: ">") { index += 1 }
        let name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
        var subset: Range<Int>?
        var quote: UInt8?
        while index < bytes.endIndex {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "[") {
                guard let end = subsetEnd(bytes, from: index + 1) else { return nil }
                subset = (index + 1)..<end
                index = end
            } else if byte == UInt8(ascii: ">") {
                return Doctype(range: start..<(index + 1), name: name, subset: subset)
            }
            index += 1
        }
        return nil
    }

    /// Where the internal subset's `]` is: past quoted values and comments, which may hold one.
    private static func subsetEnd<C: RandomAccessCollection<UInt8>>(_ bytes: C, from start: Int) -> Int? where C.Index == Int {
        var index = start
        var quote: UInt8?
        while index < bytes.endIndex {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if starts(bytes, at: index, with: "<!--") {
                guard let end = find(bytes, "-->", from: index + 4) else { return nil }
                index = end + 3
                continue
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "]") {
                return index
            }
            index += 1
        }
        return nil
    }

    /// The internal general entities of the subset, by name, with their literal values.
    private static func readDeclarations(_ subset: ArraySlice<UInt8>) throws -> [String: [UInt8]] {
        var declarations: [String: [UInt8]] = [:]
        let bytes = Array(subset)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if isSpace(byte) {
                index += 1
            } else if byte == UInt8(ascii: "%") {
                throw FeedParseError("refused: the document's DTD uses parameter entities (a defence against entity attacks)")
            } else if starts(bytes, at: index, with: "<!--") {
                index = find(bytes, "-->", from: index + 4).map { $0 + 3 } ?? bytes.count
            } else if starts(bytes, at: index, with: "<!ENTITY") {
                var cursor = index + 8
                skipSpace(bytes, &cursor)
                if cursor < bytes.count, bytes[cursor] == UInt8(ascii: "%") {
                    throw FeedParseError("refused: the document declares a parameter entity (a defence against entity attacks)")
                }
                let nameStart = cursor
                while cursor < bytes.count, !isSpace(bytes[cursor]), bytes[cursor] != UInt8(ascii: ">") { cursor += 1 }
                let name = String(decoding: bytes[nameStart..<cursor], as: UTF8.self)
                skipSpace(bytes, &cursor)
                guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: "\"") || bytes[cursor] == UInt8(ascii: "'") else {
                    throw FeedParseError("refused: the document declares an external entity '\(TerminalText.safe(name))' (entities are never loaded from outside the document)")
                }
                let quote = bytes[cursor]
                guard let close = bytes[(cursor + 1)...].firstIndex(of: quote) else { throw FeedParseError("unreadable XML: an entity value without its closing quote") }
                guard !name.isEmpty else { throw FeedParseError("unreadable XML: an entity without a name") }
                guard declarations.count < maximumDeclarations else { throw FeedParseError("refused: more than \(maximumDeclarations) entity declarations") }
                // The first declaration of a name is the one that counts (XML 1.0, 4.2).
                if declarations[name] == nil { declarations[name] = Array(bytes[(cursor + 1)..<close]) }
                index = (bytes[(close + 1)...].firstIndex(of: UInt8(ascii: ">")) ?? bytes.count - 1) + 1
            } else if byte == UInt8(ascii: "<") {
                // ELEMENT, ATTLIST, NOTATION, a processing instruction: skipped, quotes respected.
                var cursor = index + 1
                var quote: UInt8?
                while cursor < bytes.count {
                    let current = bytes[cursor]
                    if let open = quote {
                        if current == open { quote = nil }
                    } else if current == UInt8(ascii: "\"") || current == UInt8(ascii: "'") {
                        quote = current
                    } else if current == UInt8(ascii: ">") {
                        break
                    }
                    cursor += 1
                }
                index = cursor + 1
            } else {
                index += 1
            }
        }
        return declarations
    }

    // MARK: Expansion

    private struct Expander {
        let declarations: [String: [UInt8]]
        let budget: Int
        var expanded: [String: [UInt8]] = [:]
        var written = 0

        /// Copies `bytes` into `output` with every reference to a declared entity replaced.
        mutating func expandReferences(in bytes: ArraySlice<UInt8>, into output: inout [UInt8], depth: Int, skippingMarkupSections: Bool) throws {
            var index = bytes.startIndex
            var copiedUpTo = index
            while index < bytes.endIndex {
                let byte = bytes[index]
                if skippingMarkupSections, byte == UInt8(ascii: "<") {
                    // Comments and CDATA sections hold no references.
                    let end: Int?
                    if DeclaredEntities.starts(bytes, at: index, with: "<!--") {
                        end = DeclaredEntities.find(bytes, "-->", from: index + 4).map { $0 + 3 }
                    } else if DeclaredEntities.starts(bytes, at: index, with: "<![CDATA[") {
                        end = DeclaredEntities.find(bytes, "]]>", from: index + 9).map { $0 + 3 }
                    } else {
                        end = nil
                    }
                    if let end {
                        index = end
                        continue
                    }
                }
                guard byte == UInt8(ascii: "&") else {
                    index += 1
                    continue
                }
                var end = index + 1
                while end < bytes.endIndex, end - index <= 128, bytes[end] != UInt8(ascii: ";"), !DeclaredEntities.isSpace(bytes[end]), bytes[end] != UInt8(ascii: "&"), bytes[end] != UInt8(ascii: "<") { end += 1 }
                guard end < bytes.endIndex, bytes[end] == UInt8(ascii: ";"), end > index + 1, bytes[index + 1] != UInt8(ascii: "#") else {
                    index += 1
                    continue
                }
                let name = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
                guard declarations[name] != nil else {
                    index = end + 1
                    continue
                }
                try count(index - copiedUpTo, output: &output)
                output += bytes[copiedUpTo..<index]
                let replacement = try expansion(of: name, depth: depth + 1)
                try count(replacement.count, output: &output)
                output += replacement
                index = end + 1
                copiedUpTo = index
            }
            try count(bytes.endIndex - copiedUpTo, output: &output)
            output += bytes[copiedUpTo..<bytes.endIndex]
        }

        private mutating func count(_ bytes: Int, output: inout [UInt8]) throws {
            written += bytes
            guard written <= budget else {
                throw FeedParseError("refused: the document's entities expand to more than \(DeclaredEntities.maximumAmplification)× its size (a defence against entity-expansion attacks)")
            }
        }

        /// The fully expanded text of an entity, worked out once.
        private mutating func expansion(of name: String, depth: Int) throws -> [UInt8] {
            if let done = expanded[name] { return done }
            guard depth <= DeclaredEntities.maximumNesting else {
                throw FeedParseError("refused: entities nest deeper than \(DeclaredEntities.maximumNesting) levels (or refer to themselves)")
            }
            var result: [UInt8] = []
            // Nested expansions count against the budget as they are built.
            try expandReferences(in: declarations[name]![...], into: &result, depth: depth, skippingMarkupSections: false)
            expanded[name] = result
            return result
        }
    }

    // MARK: Bytes

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func skipSpace(_ bytes: [UInt8], _ index: inout Int) {
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
    }

    static func starts<C: RandomAccessCollection<UInt8>>(_ bytes: C, at index: C.Index, with literal: StaticString) -> Bool where C.Index == Int {
        let count = literal.utf8CodeUnitCount
        guard bytes.endIndex - index >= count else { return false }
        return literal.withUTF8Buffer { expected in (0..<count).allSatisfy { bytes[index + $0] == expected[$0] } }
    }

    static func find<C: RandomAccessCollection<UInt8>>(_ bytes: C, _ literal: StaticString, from start: Int) -> Int? where C.Index == Int {
        var index = start
        while index < bytes.endIndex {
            if starts(bytes, at: index, with: literal) { return index }
            index += 1
        }
        return nil
    }
}
