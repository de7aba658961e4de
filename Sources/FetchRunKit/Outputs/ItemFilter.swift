import Foundation

/// A source's `include` and `exclude`: regular expressions on an item's fields. An item passes
/// when it matches some `include` rule (or there are none) and no `exclude` rule. Items that do
/// not pass are still recorded in the snapshot — they do not come back as new — but are not
/// new in the report and are not sent.
package struct ItemFilter: Sendable {
    /// One rule: a pattern on one field, or on any of ``defaultFields`` when `field` is `nil`.
    public struct Rule: Sendable {
        public let field: String?
        public var pattern: String { expression.description }
        let expression: UserPattern

        /// - Throws: a reason phrased to follow "invalid pattern '…': ".
        public init(field: String?, pattern: String) throws {
            if let field, !ItemFilter.fields.contains(field) {
                throw ValueError("'\(field)' is not a field; use one of \(ItemFilter.fields.joined(separator: ", "))")
            }
            expression = try UserPattern(pattern)
            self.field = field
        }

        func matches(_ item: Item, budget: UserPattern.MatchBudget) throws(UserPattern.Stopped) -> Bool {
            let texts = field.map { [ItemFilter.text(of: item, field: $0)] } ?? ItemFilter.defaultFields.map { ItemFilter.text(of: item, field: $0) }
            for case let text? in texts where !text.isEmpty {
                if try expression.matches(text, budget: budget) { return true }
            }
            return false
        }
    }

    public var include: [Rule] = []
    public var exclude: [Rule] = []

    public init(include: [Rule] = [], exclude: [Rule] = []) {
        self.include = include
        self.exclude = exclude
    }

    /// The fields a rule may name.
    public static let fields = ["title", "summary", "link", "author", "id", "tags", "enclosure"]
    /// What a rule without a field looks at.
    public static let defaultFields = ["title", "summary", "link", "author"]

    public var isEmpty: Bool { include.isEmpty && exclude.isEmpty }

    /// Whether `item` passes. A rule's `^` and `$` match at each line of a field.
    /// - Throws: ``UserPattern/Stopped`` when a rule is still matching as `budget` runs out.
    public func passes(_ item: Item, budget: UserPattern.MatchBudget = .unbounded) throws(UserPattern.Stopped) -> Bool {
        if !include.isEmpty {
            var included = false
            for rule in include where try rule.matches(item, budget: budget) {
                included = true
                break
            }
            guard included else { return false }
        }
        for rule in exclude where try rule.matches(item, budget: budget) { return false }
        return true
    }

    /// The items that pass, in order, matched off the cooperative pool (a pattern can take as
    /// long as its budget allows, which must not hold back other sources' tasks).
    /// - Throws: ``UserPattern/Stopped`` at `deadline` (on `clock`); `CancellationError` when cancelled.
    package func passing(_ items: [Item], until deadline: ContinuousClock.Instant, on clock: any FetchClock) async throws -> [Item] {
        guard !isEmpty, !items.isEmpty else { return items }
        let filter = self
        return try await runOffPool(name: "fetchrun-filter") { cancellation in
            let budget = UserPattern.MatchBudget(deadline: deadline, on: clock, cancellation: cancellation)
            var passed: [Item] = []
            for item in items where try filter.passes(item, budget: budget) { passed.append(item) }
            return passed
        }
    }

    static func text(of item: Item, field: String) -> String? {
        switch field {
        case "title": return item.title
        case "summary": return item.summary
        case "link": return item.link
        case "author": return item.author
        case "id": return item.id
        case "tags": return item.tags.joined(separator: ", ")
        case "enclosure": return item.enclosures.map(\.url).joined(separator: " ")
        default: return nil
        }
    }
}
