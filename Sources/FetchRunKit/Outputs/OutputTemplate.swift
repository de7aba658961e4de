/// A body or subject with placeholders: `{title}`, `{link}`, `{source}`… replaced by the
/// delivery's fields (``Delivery/fields``); `{title:json}` inserts the value as a JSON string
/// (quoted and escaped), for JSON bodies; `{{` and `}}` are literal braces. Any other `{` is
/// literal too, so JSON text needs no escaping: `{"text": {title:json}}`.
///
/// Placeholders are checked when the config loads; a field a delivery lacks (`{link}` of an
/// alert) becomes empty text. `{count}` and `{sources}` (the source names, three at most) say
/// what a whole mail or digest holds, for subjects.
package struct OutputTemplate: Sendable, Hashable {
    /// Every placeholder a template may use.
    public static let placeholders = [
        "title", "link", "summary", "author", "id", "published", "updated", "tags", "source", "source_title",
        "diff", "delivery_id", "event", "failures", "failing_since", "error", "error_kind", "recovered_at", "count", "sources",
    ]

    enum Part: Sendable, Hashable {
        case text(String)
        case field(String, json: Bool)
    }

    let parts: [Part]
    public let text: String

    /// - Throws: a reason naming the unknown placeholder.
    public init(_ text: String) throws {
        self.text = text
        var parts: [Part] = []
        var literal = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            if character == "{", next < text.endIndex, text[next] == "{" {
                literal.append("{")
                index = text.index(after: next)
                continue
            }
            if character == "}", next < text.endIndex, text[next] == "}" {
                literal.append("}")
                index = text.index(after: next)
                continue
            }
            if character == "{", let close = text[next...].firstIndex(of: "}") {
                let inside = String(text[next..<close])
                let pieces = inside.split(separator: ":", maxSplits: 1).map(String.init)
                let name = pieces.first ?? ""
                if !name.isEmpty, name.allSatisfy({ $0.isLetter || $0 == "_" }), pieces.count == 1 || pieces[1] == "json" {
                    guard Self.placeholders.contains(name) else {
                        throw ValueError("unknown placeholder '{\(inside)}'; known: \(Self.placeholders.map { "{\($0)}" }.joined(separator: " "))")
                    }
                    if !literal.isEmpty { parts.append(.text(literal)) }
                    literal = ""
                    parts.append(.field(name, json: pieces.count == 2))
                    index = text.index(after: close)
                    continue
                }
            }
            literal.append(character)
            index = next
        }
        if !literal.isEmpty { parts.append(.text(literal)) }
        self.parts = parts
    }

    public func render(_ fields: [String: String]) -> String {
        var output = ""
        for part in parts {
            switch part {
            case .text(let text): output += text
            case .field(let name, let json):
                let value = fields[name] ?? ""
                if json {
                    var writer = JSONWriter()
                    writer.value(value)
                    output += writer.string
                } else {
                    output += value
                }
            }
        }
        return output
    }
}
