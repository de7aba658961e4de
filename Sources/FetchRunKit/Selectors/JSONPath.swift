/// A JSONPath query as RFC 9535 defines it, compiled once (when the config loads) and run
/// against each fetched document.
///
/// Supported: the root `$`; child segments `.name`, `.*`, `['name']`, `["name"]`, `[n]`
/// (negative from the end), `[start:end:step]`, `[*]` and lists of these (`['a','b']`, `[0,2]`);
/// descendant segments `..name`, `..*`, `..[…]`; and filters `[?…]` with `@` (and `$`) singular
/// queries, existence tests (`[?@.isbn]`), comparisons (`==`, `!=`, `<`, `<=`, `>`, `>=`) with
/// string, number, `true`, `false` and `null` literals, `!`, `&&`, `||` and parentheses, and the
/// function `length()`. Object members come in key order (RFC 9535 leaves it open).
package struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    package let description: String
    private let segments: [Segment]

    /// - Throws: ``JSONPathError`` naming the column where the query stops making sense.
    package init(_ text: String) throws(JSONPathError) {
        var parser = JSONPathParser(text)
        segments = try parser.query(requireRoot: "$")
        guard parser.atEnd else { throw parser.error("unexpected '\(parser.rest.prefix(10))'") }
        description = text
    }

    /// Whether the query can select at most one node (no wildcard, slice, filter, list or
    /// descendant segment): the kind `select:` needs for a value.
    package var isSingular: Bool { segments.allSatisfy(\.isSingular) }

    /// The most nodes a query may gather at any step before ``select(in:maximumNodes:maximumVisits:)``
    /// gives up: `$..*..*` over a large hostile document would otherwise grow with its square.
    package static let maximumNodes = 1_000_000

    /// The most values one evaluation may look at, filters' queries included, before it gives
    /// up. Gathering few nodes is not enough: `$..entry..title` over entries nested 500 deep
    /// gathers nothing but walks the document once for each of them (a 2 MB document took
    /// 36 s of CPU). Callers with a large document allow more (``visitBudget(documentBytes:)``).
    package static let maximumVisits = 16_000_000

    /// What a query over a document of `documentBytes` may visit: four values for each of its
    /// bytes, and at least ``maximumVisits``. A JSON value takes at least one byte, so the
    /// work stays linear in the document whatever the query.
    package static func visitBudget(documentBytes: Int) -> Int {
        max(maximumVisits, documentBytes.multipliedReportingOverflow(by: 4).overflow ? .max : documentBytes * 4)
    }

    /// The nodes `document` has at this path, in document order; `nil` when a step of the
    /// query gathers more than `maximumNodes`, or the whole evaluation would look at more than
    /// `maximumVisits` values.
    package func select(in document: JSONValue, maximumNodes: Int = JSONPath.maximumNodes, maximumVisits: Int = JSONPath.maximumVisits) -> [JSONValue]? {
        var budget = EvaluationBudget(maximumNodes: maximumNodes, visitsLeft: maximumVisits)
        do {
            return try Self.evaluate(segments, on: [document], root: document, budget: &budget)
        } catch {
            return nil
        }
    }

    fileprivate static func evaluate(_ segments: [Segment], on start: [JSONValue], root: JSONValue, budget: inout EvaluationBudget) throws(EvaluationBudget.Exhausted) -> [JSONValue] {
        var nodes = start
        for segment in segments {
            var next: [JSONValue] = []
            for node in nodes {
                if segment.descendant {
                    try forEachDescendantAndSelf(of: node) { descendant throws(EvaluationBudget.Exhausted) in
                        try budget.spend(1)
                        for selector in segment.selectors { try selector.apply(to: descendant, root: root, into: &next, budget: &budget) }
                        try budget.admit(gathered: next.count)
                    }
                } else {
                    for selector in segment.selectors { try selector.apply(to: node, root: root, into: &next, budget: &budget) }
                }
                try budget.admit(gathered: next.count)
            }
            nodes = next
        }
        return nodes
    }

    /// Hands `body` a node and then each of its descendants in document order (RFC 9535
    /// §2.5.2.2). Walked with a stack of the containers being read, so what it holds grows with
    /// the depth, not with the number of descendants.
    private static func forEachDescendantAndSelf<Failure: Error>(of node: JSONValue, _ body: (JSONValue) throws(Failure) -> Void) throws(Failure) {
        func children(of node: JSONValue) -> [JSONValue] {
            switch node {
            case .array(let elements): elements
            case .object(let members): members.keys.sorted().map { members[$0]! }
            default: []
            }
        }
        try body(node)
        var stack = [children(of: node).makeIterator()]
        while !stack.isEmpty {
            guard let child = stack[stack.count - 1].next() else {
                stack.removeLast()
                continue
            }
            try body(child)
            let grandchildren = children(of: child)
            if !grandchildren.isEmpty { stack.append(grandchildren.makeIterator()) }
        }
    }
}

/// What one evaluation may still spend. Running out ends the whole evaluation, filters'
/// queries included: a filter that gave up quietly would let its caller go on visiting.
struct EvaluationBudget {
    struct Exhausted: Error {}

    let maximumNodes: Int
    var visitsLeft: Int

    mutating func spend(_ visits: Int) throws(Exhausted) {
        guard visits <= visitsLeft else { throw Exhausted() }
        visitsLeft -= visits
    }

    func admit(gathered count: Int) throws(Exhausted) {
        guard count <= maximumNodes else { throw Exhausted() }
    }
}

/// Why a JSONPath query cannot be read.
package struct JSONPathError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 1-based, in characters of the query.
    package var column: Int
    package var message: String

    package var description: String { "column \(column): \(message)" }
}

struct Segment: Sendable, Hashable {
    var descendant: Bool
    var selectors: [PathSelector]

    var isSingular: Bool {
        guard !descendant, selectors.count == 1 else { return false }
        switch selectors[0] {
        case .name, .index: return true
        default: return false
        }
    }
}

indirect enum PathSelector: Sendable, Hashable {
    case name(String)
    case wildcard
    case index(Int)
    case slice(start: Int?, end: Int?, step: Int?)
    case filter(Filter)

    /// Adds what this selector picks from `node` to `result`, spending a visit for each child
    /// it looks at.
    func apply(to node: JSONValue, root: JSONValue, into result: inout [JSONValue], budget: inout EvaluationBudget) throws(EvaluationBudget.Exhausted) {
        switch (self, node) {
        case (.name(let name), .object(let members)):
            try budget.spend(1)
            if let value = members[name] { result.append(value) }
        case (.wildcard, .object(let members)):
            try budget.spend(members.count)
            for key in members.keys.sorted() { result.append(members[key]!) }
        case (.wildcard, .array(let elements)):
            try budget.spend(elements.count)
            result += elements
        case (.index(let index), .array(let elements)):
            try budget.spend(1)
            let position = index < 0 ? elements.count + index : index
            if position >= 0, position < elements.count { result.append(elements[position]) }
        case (.slice(let start, let end, let step), .array(let elements)):
            let positions = Self.slice(count: elements.count, start: start, end: end, step: step ?? 1)
            try budget.spend(positions.count)
            for position in positions { result.append(elements[position]) }
        case (.filter(let filter), .object(let members)):
            try budget.spend(members.count)
            for key in members.keys.sorted() where try filter.holds(for: members[key]!, root: root, budget: &budget) { result.append(members[key]!) }
        case (.filter(let filter), .array(let elements)):
            try budget.spend(elements.count)
            for element in elements where try filter.holds(for: element, root: root, budget: &budget) { result.append(element) }
        default:
            break
        }
    }

    /// The positions a slice selects (RFC 9535 §2.3.4.2.2), clamped without overflow.
    static func slice(count: Int, start: Int?, end: Int?, step: Int) -> [Int] {
        guard step != 0 else { return [] }
        func normalized(_ value: Int) -> Int { value >= 0 ? value : count + max(value, -count - 1) }
        if step > 0 {
            let lower = min(max(normalized(start ?? 0), 0), count)
            let upper = min(max(normalized(end ?? count), 0), count)
            return Array(stride(from: lower, to: upper, by: step))
        }
        let upper = min(max(normalized(start ?? count - 1), -1), count - 1)
        let lower = min(max(normalized(end ?? -count - 1), -1), count - 1)
        return Array(stride(from: upper, to: lower, by: step))
    }
}

/// A filter's logical expression.
indirect enum Filter: Sendable, Hashable {
    case or([Filter])
    case and([Filter])
    case not(Filter)
    /// A query that selects at least one node.
    case exists(Query)
    case compare(Operand, Comparison, Operand)

    func holds(for current: JSONValue, root: JSONValue, budget: inout EvaluationBudget) throws(EvaluationBudget.Exhausted) -> Bool {
        switch self {
        case .or(let parts):
            for part in parts where try part.holds(for: current, root: root, budget: &budget) { return true }
            return false
        case .and(let parts):
            for part in parts where try !part.holds(for: current, root: root, budget: &budget) { return false }
            return true
        case .not(let inner): return try !inner.holds(for: current, root: root, budget: &budget)
        case .exists(let query): return try !query.select(current: current, root: root, budget: &budget).isEmpty
        case .compare(let left, let comparison, let right):
            return comparison.holds(try left.value(current: current, root: root, budget: &budget), try right.value(current: current, root: root, budget: &budget))
        }
    }
}

/// `@…` or `$…` inside a filter.
struct Query: Sendable, Hashable {
    var relative: Bool
    var segments: [Segment]

    /// An existence test may be a descendant query, run for every node the filter looks at:
    /// it spends from the evaluation's one budget.
    func select(current: JSONValue, root: JSONValue, budget: inout EvaluationBudget) throws(EvaluationBudget.Exhausted) -> [JSONValue] {
        try JSONPath.evaluate(segments, on: [relative ? current : root], root: root, budget: &budget)
    }
}

/// One side of a comparison: a literal, a singular query, or `length(…)`.
indirect enum Operand: Sendable, Hashable {
    case literal(JSONValue)
    case query(Query)
    case length(Operand)

    /// The value, or `nil` for RFC 9535's Nothing (a query that selects no node).
    func value(current: JSONValue, root: JSONValue, budget: inout EvaluationBudget) throws(EvaluationBudget.Exhausted) -> JSONValue? {
        switch self {
        case .literal(let value): return value
        case .query(let query):
            let nodes = try query.select(current: current, root: root, budget: &budget)
            return nodes.count == 1 ? nodes[0] : nil
        case .length(let argument):
            switch try argument.value(current: current, root: root, budget: &budget) {
            case .string(let text)?: return .number(Double(text.unicodeScalars.count))
            case .array(let elements)?: return .number(Double(elements.count))
            case .object(let members)?: return .number(Double(members.count))
            default: return nil
            }
        }
    }
}

enum Comparison: String, Sendable, Hashable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="

    /// RFC 9535 §2.3.5.2.2: Nothing equals only Nothing; `<` holds between two numbers or two
    /// strings only; `<=` is `<` or `==`.
    func holds(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        switch self {
        case .equal: return Self.equal(left, right)
        case .notEqual: return !Self.equal(left, right)
        case .less: return Self.less(left, right)
        case .lessOrEqual: return Self.less(left, right) || Self.equal(left, right)
        case .greater: return Self.less(right, left)
        case .greaterOrEqual: return Self.less(right, left) || Self.equal(left, right)
        }
    }

    private static func equal(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        left == right
    }

    private static func less(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        switch (left, right) {
        case (.number(let a)?, .number(let b)?): return a < b
        case (.string(let a)?, .string(let b)?): return a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
        default: return false
        }
    }
}
