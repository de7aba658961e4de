import Foundation

/// A recursive-descent reader of the query text.
struct JSONPathParser {
    private let characters: [Character]
    private var position = 0
    /// Nesting of filters and parentheses: a hostile query must not exhaust the stack.
    private var depth = 0

    init(_ text: String) {
        characters = Array(text)
    }

    var atEnd: Bool { position >= characters.count }
    var rest: String { String(characters[min(position, characters.count)...]) }

    func error(_ message: String) -> JSONPathError {
        JSONPathError(column: position + 1, message: message)
    }

    private func peek(_ offset: Int = 0) -> Character? {
        position + offset < characters.count ? characters[position + offset] : nil
    }

    private mutating func skipBlanks() {
        while let character = peek(), character == " " || character == "\t" || character == "\n" || character == "\r" { position += 1 }
    }

    private mutating func take(_ text: String) -> Bool {
        let wanted = Array(text)
        guard position + wanted.count <= characters.count, Array(characters[position..<(position + wanted.count)]) == wanted else { return false }
        position += wanted.count
        return true
    }

    /// `$` or `@`, then segments, as far as they go.
    mutating func query(requireRoot root: Character) throws(JSONPathError) -> [Segment] {
        guard peek() == root else { throw error("a query starts with '\(root)'") }
        position += 1
        var segments: [Segment] = []
        while let segment = try segment() { segments.append(segment) }
        return segments
    }

    private mutating func segment() throws(JSONPathError) -> Segment? {
        let start = position
        skipBlanks()
        if take("..") {
            if peek() == "[" { return Segment(descendant: true, selectors: try bracketed()) }
            if take("*") { return Segment(descendant: true, selectors: [.wildcard]) }
            return Segment(descendant: true, selectors: [.name(try memberName())])
        }
        if take(".") {
            if take("*") { return Segment(descendant: false, selectors: [.wildcard]) }
            return Segment(descendant: false, selectors: [.name(try memberName())])
        }
        if peek() == "[" { return Segment(descendant: false, selectors: try bracketed()) }
        position = start
        return nil
    }

    /// A shorthand name: a letter, `_` or non-ASCII first, then those or digits.
    private mutating func memberName() throws(JSONPathError) -> String {
        var name = ""
        while let character = peek(), character.isLetter || character == "_" || (!character.isASCII && !character.isWhitespace) || (!name.isEmpty && character.isNumber) {
            name.append(character)
            position += 1
        }
        guard !name.isEmpty else { throw error("a member name after '.' (or use ['name'])") }
        return name
    }

    private mutating func bracketed() throws(JSONPathError) -> [PathSelector] {
        position += 1 // [
        var selectors: [PathSelector] = []
        repeat {
            skipBlanks()
            selectors.append(try selector())
            skipBlanks()
        } while take(",")
        guard take("]") else { throw error("expected ',' or ']'") }
        return selectors
    }

    private mutating func selector() throws(JSONPathError) -> PathSelector {
        if let quote = peek(), quote == "'" || quote == "\"" { return .name(try stringLiteral()) }
        if take("*") { return .wildcard }
        if take("?") {
            skipBlanks()
            return .filter(try logicalOr())
        }
        let start = try integer(optional: true)
        skipBlanks()
        guard take(":") else {
            guard let start else { throw error("a selector: 'name', *, an index, a slice or ?filter") }
            return .index(start)
        }
        skipBlanks()
        let end = try integer(optional: true)
        skipBlanks()
        var step: Int?
        if take(":") {
            skipBlanks()
            step = try integer(optional: true)
        }
        return .slice(start: start, end: end, step: step)
    }

    /// An integer within ±(2^53 − 1), as RFC 9535 allows.
    private mutating func integer(optional: Bool) throws(JSONPathError) -> Int? {
        let start = position
        if peek() == "-" { position += 1 }
        var digits = ""
        while let character = peek(), character.isASCII, character.isNumber {
            digits.append(character)
            position += 1
        }
        guard !digits.isEmpty else {
            position = start
            if optional { return nil }
            throw error("a number")
        }
        guard digits.count <= 16, let value = Int(digits), value <= 9_007_199_254_740_991 else { throw error("the number is beyond ±(2^53 − 1)") }
        if digits.count > 1, digits.first == "0" { throw error("a number without leading zeros") }
        return characters[start] == "-" ? -value : value
    }

    private mutating func stringLiteral() throws(JSONPathError) -> String {
        let quote = characters[position]
        position += 1
        var text = ""
        while let character = peek() {
            position += 1
            if character == quote { return text }
            if character == "\\" {
                guard let escaped = peek() else { break }
                position += 1
                switch escaped {
                case "b": text.append("\u{08}")
                case "f": text.append("\u{0C}")
                case "n": text.append("\n")
                case "r": text.append("\r")
                case "t": text.append("\t")
                case "/", "\\", "'", "\"": text.append(escaped)
                case "u":
                    guard position + 4 <= characters.count, let value = UInt32(String(characters[position..<(position + 4)]), radix: 16), let scalar = Unicode.Scalar(value) else {
                        throw error("\\u needs four hex digits of a character")
                    }
                    position += 4
                    text.unicodeScalars.append(scalar)
                default:
                    throw error("unknown escape '\\\(escaped)'")
                }
                continue
            }
            text.append(character)
        }
        throw error("a string that is not closed")
    }

    private mutating func nested<T>(_ body: (inout JSONPathParser) throws(JSONPathError) -> T) throws(JSONPathError) -> T {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 64 else { throw error("filters nested more than 64 deep") }
        return try body(&self)
    }

    private mutating func logicalOr() throws(JSONPathError) -> Filter {
        var parts = [try logicalAnd()]
        while true {
            skipBlanks()
            guard take("||") else { break }
            skipBlanks()
            parts.append(try logicalAnd())
        }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    private mutating func logicalAnd() throws(JSONPathError) -> Filter {
        var parts = [try basic()]
        while true {
            skipBlanks()
            guard take("&&") else { break }
            skipBlanks()
            parts.append(try basic())
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private mutating func basic() throws(JSONPathError) -> Filter {
        skipBlanks()
        if take("!") {
            skipBlanks()
            if peek() == "(" { return .not(try parenthesized()) }
            return .not(.exists(try filterQuery()))
        }
        if peek() == "(" { return try parenthesized() }
        let left = try comparable()
        skipBlanks()
        for comparison in [Comparison.equal, .notEqual, .lessOrEqual, .greaterOrEqual, .less, .greater] where take(comparison.rawValue) {
            skipBlanks()
            let right = try comparable()
            if case .query(let query) = left, !query.segments.allSatisfy(\.isSingular) { throw error("a comparison needs a singular query (no *, .., slices or filters)") }
            if case .query(let query) = right, !query.segments.allSatisfy(\.isSingular) { throw error("a comparison needs a singular query (no *, .., slices or filters)") }
            return .compare(left, comparison, right)
        }
        guard case .query(let query) = left else { throw error("a literal alone is not a test; compare it with ==, !=, <, <=, > or >=") }
        return .exists(query)
    }

    private mutating func parenthesized() throws(JSONPathError) -> Filter {
        position += 1 // (
        let inner = try nested { (parser: inout JSONPathParser) throws(JSONPathError) -> Filter in try parser.logicalOr() }
        skipBlanks()
        guard take(")") else { throw error("expected ')'") }
        return inner
    }

    private mutating func filterQuery() throws(JSONPathError) -> Query {
        guard let first = peek(), first == "@" || first == "$" else { throw error("a query (@… or $…)") }
        let segments = try nested { (parser: inout JSONPathParser) throws(JSONPathError) -> [Segment] in try parser.query(requireRoot: first) }
        return Query(relative: first == "@", segments: segments)
    }

    private mutating func comparable() throws(JSONPathError) -> Operand {
        if let first = peek(), first == "@" || first == "$" { return .query(try filterQuery()) }
        if let quote = peek(), quote == "'" || quote == "\"" { return .literal(.string(try stringLiteral())) }
        if take("true") { return .literal(.bool(true)) }
        if take("false") { return .literal(.bool(false)) }
        if take("null") { return .literal(.null) }
        if take("length(") {
            skipBlanks()
            let argument = try nested { (parser: inout JSONPathParser) throws(JSONPathError) -> Operand in try parser.comparable() }
            skipBlanks()
            guard take(")") else { throw error("expected ')' after length's argument") }
            return .length(argument)
        }
        return .literal(.number(try number()))
    }

    /// A JSON number (an integer's every digit kept, to compare with ids past 2^53).
    private mutating func number() throws(JSONPathError) -> JSONNumber {
        var text = ""
        while let character = peek(), character.isASCII, character.isNumber || "+-.eE".contains(character) {
            text.append(character)
            position += 1
        }
        guard !text.isEmpty, let value = JSONNumber(json: text), value.value.isFinite else { throw error(text.isEmpty ? "a value: a query, a string, a number, true, false or null" : "'\(text)' is not a number") }
        return value
    }
}
