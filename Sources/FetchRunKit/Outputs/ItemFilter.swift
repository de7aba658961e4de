import Foundation

/// A source's `include` and `exclude`: regular expressions on an item's fields. An item passes
/// when it matches some `include` rule (or there are none) and no `exclude` rule. Items that do
/// not pass are still recorded in the snapshot — they do not come back as new — but are not
/// new in the report and are not sent.
package struct ItemFilter: Sendable {
    /// One rule: a pattern on one field, or on any of ``defaultFields`` when `field` is `nil`.
    public struct Rule: @unchecked Sendable {
        // NSRegularExpression is immutable once made and documented safe to share across threads.
        public let field: String?
        public let pattern: String
        let expression: NSRegularExpression

        /// - Throws: a reason phrased to follow "invalid pattern '…': ".
        public init(field: String?, pattern: String) throws {
            if let field, !ItemFilter.fields.contains(field) {
                throw ValueError("'\(field)' is not a field; use one of \(ItemFilter.fields.joined(separator: ", "))")
            }
            do {
                expression = try NSRegularExpression(pattern: pattern)
            } catch {
                throw ValueError("not a regular expression (ICU syntax, such as (?i)swift|linux)")
            }
            self.field = field
            self.pattern = pattern
        }

        func matches(_ item: Item) -> Bool {
            let texts = field.map { [ItemFilter.text(of: item, field: $0)] } ?? ItemFilter.defaultFields.map { ItemFilter.text(of: item, field: $0) }
            return texts.contains { text in
                guard let text, !text.isEmpty else { return false }
                return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            }
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

    public func passes(_ item: Item) -> Bool {
        if !include.isEmpty, !include.contains(where: { $0.matches(item) }) { return false }
        return !exclude.contains { $0.matches(item) }
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
