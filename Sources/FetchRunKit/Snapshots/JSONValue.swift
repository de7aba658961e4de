/// Any JSON value: the opaque state an adapter asks to keep between fetches.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// A string, number or boolean as text (`"x"`, `42`, `0.5`, `true`); `nil` for null, arrays
    /// and objects. Whole numbers print without a fraction, however large.
    public var scalarText: String? {
        switch self {
        case .string(let text): return text
        case .number(let number):
            // A number past a double's range (1e999) has no text worth showing.
            guard number.isFinite else { return nil }
            // Int64(number) would trap past ±9.2e18; those print as Double does.
            return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .bool(let flag): return String(flag)
        case .null, .array, .object: return nil
        }
    }

    /// A number that is a whole number, as adapters store counters.
    public var intValue: Int? {
        if case .number(let value) = self, let exact = Int(exactly: value) { return exact }
        return nil
    }
}
