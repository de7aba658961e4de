/// A CSS selector list, as `page` sources write `css:`, `exclude:` and `items:`, matched
/// against an ``HTMLDocument``.
///
/// Supported (Selectors Level 3, the part pages are watched with): type and `*`, `.class`,
/// `#id`, `[attr]`, `[attr=v]`, `[attr~=v]`, `[attr|=v]`, `[attr^=v]`, `[attr$=v]`,
/// `[attr*=v]` (values as identifiers or quoted), `:first-child`, `:last-child`,
/// `:only-child`, `:nth-child(an+b | odd | even)`, `:nth-last-child(…)`, `:not(compound)`;
/// the combinators descendant (a space), `>`, `+` and `~`; and `,` lists. Names and attribute
/// names match without regard to case, as HTML's do; values match exactly.
package struct CSSSelector: Sendable, Hashable, CustomStringConvertible {
    package let description: String
    private let alternatives: [Complex]

    /// - Throws: ``CSSSelectorError`` naming the column where the selector stops making sense.
    package init(_ text: String) throws(CSSSelectorError) {
        var parser = Parser(text)
        alternatives = try parser.selectorList()
        description = text
    }

    /// The elements below `root` (not `root` itself) that match, in document order.
    package func select(in document: HTMLDocument, below root: Int = 0) -> [Int] {
        Array(matches(in: document).elements(below: root, in: document))
    }

    /// Every element of `document` that matches. Found in one pass over the nodes per compound
    /// selector, so the time grows with the page's nodes times the selector's compounds, whatever
    /// the page's shape: matching each element right to left, trying every ancestor or earlier
    /// sibling in turn, took a minute for `h2 ~ p + p` over 20,000 paragraphs in one `div`,
    /// and 30 s for `#news .story .story a` over 200 nested `.story`s without a `#news`.
    package func matches(in document: HTMLDocument) -> Matches {
        var matched = [Bool](repeating: false, count: document.nodes.count)
        let previousSiblings = alternatives.contains { $0.combinators.contains { $0 == .adjacent || $0 == .sibling } }
            ? Complex.previousElementSiblings(in: document) : []
        for complex in alternatives {
            for (index, matches) in complex.matchingElements(in: document, previousSiblings: previousSiblings).enumerated() where matches {
                matched[index] = true
            }
        }
        return Matches(indexes: matched.indices.filter { matched[$0] })
    }

    /// The elements a selector list matches in one document, in document order.
    package struct Matches: Sendable {
        /// Ascending.
        let indexes: [Int]

        /// Those below `root` (not `root` itself), in document order.
        package func elements(below root: Int, in document: HTMLDocument) -> ArraySlice<Int> {
            indexes[firstPosition(after: root)..<firstPosition(after: document.nodes[root].end - 1)]
        }

        /// The first below `root` (not `root` itself), found without walking `root`'s subtree.
        package func first(below root: Int, in document: HTMLDocument) -> Int? {
            elements(below: root, in: document).first
        }

        /// Where the first index greater than `index` is, or the end.
        private func firstPosition(after index: Int) -> Int {
            var low = 0, high = indexes.count
            while low < high {
                let middle = low + (high - low) / 2
                if indexes[middle] <= index { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }
}

/// Why a CSS selector cannot be read.
package struct CSSSelectorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 1-based, in characters of the selector.
    package var column: Int
    package var message: String

    package var description: String { "column \(column): \(message)" }
}

/// Compound selectors joined by combinators, kept right to left for matching.
private struct Complex: Sendable, Hashable {
    enum Combinator: Sendable, Hashable { case descendant, child, adjacent, sibling }

    /// The rightmost compound first; `combinators[i]` joins `compounds[i]` to `compounds[i+1]`.
    var compounds: [Compound]
    var combinators: [Combinator]

    /// For each node, whether it is an element this selector matches: the leftmost compound's
    /// elements first, then, compound by compound to the right, the elements that match it and
    /// stand in the combinator's relation to one matched so far. Parents and earlier siblings
    /// come before a node in document order, so "has a matched ancestor" (or earlier sibling)
    /// is carried forward from them instead of searched for.
    func matchingElements(in document: HTMLDocument, previousSiblings: [Int]) -> [Bool] {
        let count = document.nodes.count
        let leftmost = compounds.count - 1
        var matched = (0..<count).map { compounds[leftmost].matches($0, in: document) }
        for position in stride(from: leftmost - 1, through: 0, by: -1) {
            let combinator = combinators[position]
            var next = [Bool](repeating: false, count: count)
            var carried = [Bool](repeating: false, count: count)
            for index in document.nodes.indices.dropFirst() where document.nodes[index].isElement {
                let related: Bool
                switch combinator {
                case .child:
                    related = document.parentElement(of: index).map { matched[$0] } ?? false
                case .descendant:
                    carried[index] = document.parentElement(of: index).map { matched[$0] || carried[$0] } ?? false
                    related = carried[index]
                case .adjacent:
                    let sibling = previousSiblings[index]
                    related = sibling >= 0 && matched[sibling]
                case .sibling:
                    let sibling = previousSiblings[index]
                    carried[index] = sibling >= 0 && (matched[sibling] || carried[sibling])
                    related = carried[index]
                }
                next[index] = related && compounds[position].matches(index, in: document)
            }
            matched = next
        }
        return matched
    }

    /// Each node's previous element sibling, -1 for none, in one pass.
    static func previousElementSiblings(in document: HTMLDocument) -> [Int] {
        var previous = [Int](repeating: -1, count: document.nodes.count)
        var lastChild = [Int](repeating: -1, count: document.nodes.count)
        for index in document.nodes.indices.dropFirst() where document.nodes[index].isElement {
            let parent = document.nodes[index].parent
            previous[index] = lastChild[parent]
            lastChild[parent] = index
        }
        return previous
    }
}

private struct Compound: Sendable, Hashable {
    var name: String?
    var conditions: [Condition]

    func matches(_ index: Int, in document: HTMLDocument) -> Bool {
        let node = document.nodes[index]
        guard node.isElement, index > 0 else { return false }
        if let name, node.name != name { return false }
        return conditions.allSatisfy { $0.holds(for: node, index: index, in: document) }
    }
}

private indirect enum Condition: Sendable, Hashable {
    enum Operator: String, Sendable, Hashable { case equals = "=", word = "~=", dashPrefix = "|=", prefix = "^=", suffix = "$=", contains = "*=" }

    case id(String)
    case className(String)
    case attribute(String, Operator?, String)
    /// `an+b`, counted from the start or (`fromEnd`) from the end.
    case nthChild(a: Int, b: Int, fromEnd: Bool)
    case not(Compound)

    func holds(for node: HTMLDocument.Node, index: Int, in document: HTMLDocument) -> Bool {
        switch self {
        case .id(let id):
            return node.attribute("id") == id
        case .className(let name):
            return node.attribute("class")?.split(whereSeparator: \.isWhitespace).contains { $0 == name } ?? false
        case .attribute(let name, let op, let value):
            guard let actual = node.attribute(name) else { return false }
            switch op {
            case nil: return true
            case .equals?: return actual == value
            case .word?: return actual.split(whereSeparator: \.isWhitespace).contains { $0 == value }
            case .dashPrefix?: return actual == value || actual.hasPrefix(value + "-")
            case .prefix?: return !value.isEmpty && actual.hasPrefix(value)
            case .suffix?: return !value.isEmpty && actual.hasSuffix(value)
            case .contains?: return !value.isEmpty && actual.contains(value)
            }
        case .nthChild(let a, let b, let fromEnd):
            let position = fromEnd ? node.siblingElements - node.position + 1 : node.position
            // position = a·n + b for some n ≥ 0.
            if a == 0 { return position == b }
            let offset = position - b
            return offset % a == 0 && offset / a >= 0
        case .not(let compound):
            return !compound.matches(index, in: document)
        }
    }
}

private struct Parser {
    let characters: [Character]
    var position = 0

    init(_ text: String) {
        characters = Array(text)
    }

    func error(_ message: String, at column: Int? = nil) -> CSSSelectorError {
        CSSSelectorError(column: (column ?? position) + 1, message: message)
    }

    private func peek(_ offset: Int = 0) -> Character? {
        position + offset < characters.count ? characters[position + offset] : nil
    }

    @discardableResult
    private mutating func skipBlanks() -> Bool {
        let start = position
        while let character = peek(), character.isWhitespace { position += 1 }
        return position > start
    }

    static let maximumCompounds = 64

    mutating func selectorList() throws(CSSSelectorError) -> [Complex] {
        guard characters.count <= 4096 else { throw error("longer than 4096 characters", at: 0) }
        var list: [Complex] = []
        var compounds = 0
        repeat {
            skipBlanks()
            let start = position
            list.append(try complex())
            compounds += list[list.count - 1].compounds.count
            // Each compound is a pass over the page's nodes: a bound on the work per page.
            guard compounds <= Self.maximumCompounds else { throw error("more than \(Self.maximumCompounds) compound selectors in one list", at: start) }
            skipBlanks()
        } while take(",")
        guard position == characters.count else { throw error("unexpected '\(peek()!)'") }
        return list
    }

    private mutating func take(_ character: Character) -> Bool {
        guard peek() == character else { return false }
        position += 1
        return true
    }

    private mutating func complex() throws(CSSSelectorError) -> Complex {
        var compounds = [try compound()]
        var combinators: [Complex.Combinator] = []
        while true {
            let hadBlank = skipBlanks()
            let combinator: Complex.Combinator
            if take(">") { combinator = .child } else if take("+") { combinator = .adjacent } else if take("~") { combinator = .sibling } else if hadBlank, let next = peek(), next != ",", next != ")" { combinator = .descendant } else { break }
            skipBlanks()
            compounds.append(try compound())
            combinators.append(combinator)
        }
        return Complex(compounds: compounds.reversed(), combinators: combinators.reversed())
    }

    private mutating func compound() throws(CSSSelectorError) -> Compound {
        var compound = Compound(name: nil, conditions: [])
        var empty = true
        if take("*") {
            empty = false
        } else if let character = peek(), Self.startsIdentifier(character) {
            compound.name = try identifier().lowercased()
            empty = false
        }
        while let character = peek() {
            switch character {
            case "#":
                position += 1
                compound.conditions.append(.id(try identifier()))
            case ".":
                position += 1
                compound.conditions.append(.className(try identifier()))
            case "[":
                position += 1
                compound.conditions.append(try attribute())
            case ":":
                position += 1
                compound.conditions.append(try pseudoClass())
            default:
                guard !empty else { throw error("a selector: a name, *, #id, .class, [attribute] or :pseudo-class") }
                return compound
            }
            empty = false
        }
        guard !empty else { throw error("a selector: a name, *, #id, .class, [attribute] or :pseudo-class") }
        return compound
    }

    private static func startsIdentifier(_ character: Character) -> Bool {
        character.isLetter || character == "_" || character == "-" || character == "\\" || !character.isASCII
    }

    private mutating func identifier() throws(CSSSelectorError) -> String {
        var name = ""
        while let character = peek() {
            if character == "\\" {
                guard let escaped = peek(1) else { throw error("'\\' at the end") }
                name.append(escaped)
                position += 2
            } else if character.isLetter || character.isNumber || character == "_" || character == "-" || !character.isASCII {
                name.append(character)
                position += 1
            } else {
                break
            }
        }
        guard !name.isEmpty else { throw error("a name") }
        return name
    }

    private mutating func attribute() throws(CSSSelectorError) -> Condition {
        skipBlanks()
        let name = try identifier().lowercased()
        skipBlanks()
        if take("]") { return .attribute(name, nil, "") }
        var op: Condition.Operator?
        for candidate in [Condition.Operator.word, .dashPrefix, .prefix, .suffix, .contains, .equals] {
            let symbol = Array(candidate.rawValue)
            if position + symbol.count <= characters.count, Array(characters[position..<(position + symbol.count)]) == symbol {
                op = candidate
                position += symbol.count
                break
            }
        }
        guard let op else { throw error("'=', '~=', '|=', '^=', '$=', '*=' or ']'") }
        skipBlanks()
        let value: String
        if let quote = peek(), quote == "\"" || quote == "'" {
            position += 1
            var text = ""
            while let character = peek(), character != quote {
                if character == "\\", let escaped = peek(1) {
                    text.append(escaped)
                    position += 2
                } else {
                    text.append(character)
                    position += 1
                }
            }
            guard take(quote) else { throw error("a closing \(quote)") }
            value = text
        } else {
            value = try identifier()
        }
        skipBlanks()
        guard take("]") else { throw error("']'") }
        return .attribute(name, op, value)
    }

    private mutating func pseudoClass() throws(CSSSelectorError) -> Condition {
        let start = position
        let name = try identifier().lowercased()
        switch name {
        case "first-child": return .nthChild(a: 0, b: 1, fromEnd: false)
        case "last-child": return .nthChild(a: 0, b: 1, fromEnd: true)
        case "only-child": return .not(Compound(name: nil, conditions: [.not(Compound(name: nil, conditions: [.nthChild(a: 0, b: 1, fromEnd: false), .nthChild(a: 0, b: 1, fromEnd: true)]))]))
        case "nth-child", "nth-last-child":
            guard take("(") else { throw error("'(' after :\(name)") }
            skipBlanks()
            let (a, b) = try nth()
            skipBlanks()
            guard take(")") else { throw error("')'") }
            return .nthChild(a: a, b: b, fromEnd: name == "nth-last-child")
        case "not":
            guard take("(") else { throw error("'(' after :not") }
            skipBlanks()
            let inner = try compound()
            skipBlanks()
            guard take(")") else { throw error("')' (:not takes one compound selector)") }
            return .not(inner)
        default:
            throw error("unknown pseudo-class ':\(name)'; known: first-child, last-child, only-child, nth-child(), nth-last-child(), not()", at: start)
        }
    }

    /// `an+b`, `odd`, `even`, `3`, `-n+3`: the numbers bounded, so nothing can overflow.
    private mutating func nth() throws(CSSSelectorError) -> (Int, Int) {
        var text = ""
        while let character = peek(), character != ")" {
            if !character.isWhitespace { text.append(character) }
            position += 1
        }
        let lowered = text.lowercased()
        if lowered == "odd" { return (2, 1) }
        if lowered == "even" { return (2, 0) }
        func number(_ digits: Substring) -> Int? {
            guard digits.count <= 6 else { return nil }
            return Int(digits)
        }
        if let n = lowered.firstIndex(of: "n") {
            let before = lowered[..<n], after = lowered[lowered.index(after: n)...]
            let a = before.isEmpty || before == "+" ? 1 : before == "-" ? -1 : number(before)
            let b = after.isEmpty ? 0 : (after.first == "+" || after.first == "-") ? number(after.first == "+" ? after.dropFirst() : after) : nil
            guard let a, let b else { throw error("an+b, odd or even in :nth-child()") }
            return (a, b)
        }
        guard let b = number(Substring(lowered)) else { throw error("an+b, odd or even in :nth-child()") }
        return (0, b)
    }
}
