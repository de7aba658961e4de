import Foundation

/// Any JSON value: the opaque state an adapter asks to keep between fetches.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(JSONNumber)
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
            self = .number(JSONNumber(value))
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
        case .number(let value):
            // Decimal keeps an integer's every digit, which a Double would round.
            if let digits = value.digits, let exact = Decimal(string: digits) { try container.encode(exact) } else { try container.encode(value.value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// A number from a Swift `Double` (no digits of its own to keep).
    public static func number(_ value: Double) -> JSONValue {
        .number(JSONNumber(value))
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
        case .number(let number): return number.text
        case .bool(let flag): return String(flag)
        case .null, .array, .object: return nil
        }
    }

    /// A number that is a whole number, as adapters store counters.
    public var intValue: Int? {
        if case .number(let number) = self, let exact = Int(exactly: number.value) { return exact }
        return nil
    }
}

/// A JSON number: its value as a `Double`, for comparing and arithmetic, and for an integer of
/// 16 digits or more (past what a `Double` holds exactly: Twitter-, Discord- and Snowflake-style
/// ids) the digits as written, so that it is shown, stored, compared and told apart from its
/// neighbours with every digit.
///
/// Two numbers are equal when both keep digits and the digits are the same, or neither does and
/// their values are equal; a number with digits never equals one without.
public struct JSONNumber: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number as a `Double`: rounded for an integer past 2^53, ±infinity past its range.
    public let value: Double
    /// An integer's digits as written (with its minus sign), when it has 16 digits or more.
    public let digits: String?

    /// From 1e15 on a `Double` prints with an exponent (and past 2^53 it is rounded): integers
    /// that large keep their digits.
    static let digitsKeptFrom = 1e15

    public init(_ value: Double) {
        self.value = value
        digits = nil
    }

    /// A number as JSON writes it (`-12`, `0.5`, `1e3`, `1311111111111111111`); nil for text
    /// that is not one.
    public init?(json text: some StringProtocol) {
        guard let value = Double(text) else { return nil }
        self.value = value
        let isInteger = !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
        digits = isInteger && abs(value) >= Self.digitsKeptFrom && text.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) })
            ? String(text) : nil
    }

    /// The number as text: an integer's digits, a whole number without a fraction, else the
    /// shortest text that reads back as the same `Double`; nil past a `Double`'s range.
    public var text: String? {
        if let digits { return digits }
        // A number past a double's range (1e999) has no text worth showing.
        guard value.isFinite else { return nil }
        // Int64(value) would trap past ±9.2e18; those print as Double does.
        return value == value.rounded() && abs(value) < Self.digitsKeptFrom ? String(Int64(value)) : String(value)
    }

    public var description: String { text ?? String(value) }

    public static func == (a: JSONNumber, b: JSONNumber) -> Bool {
        switch (a.digits, b.digits) {
        case (nil, nil): a.value == b.value
        case (let x?, let y?): x == y
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(digits)
        if digits == nil { hasher.combine(value) }
    }

    /// By value; two integers that round to the same `Double`, by their digits.
    public static func < (a: JSONNumber, b: JSONNumber) -> Bool {
        if a.value != b.value { return a.value < b.value }
        guard let x = a.digits, let y = b.digits, x != y else { return a.digits == nil && b.digits != nil }
        let (negativeX, negativeY) = (x.hasPrefix("-"), y.hasPrefix("-"))
        if negativeX != negativeY { return negativeX }
        let (magnitudeX, magnitudeY) = (x.drop { $0 == "-" }, y.drop { $0 == "-" })
        let smaller = magnitudeX.count != magnitudeY.count ? magnitudeX.count < magnitudeY.count : magnitudeX < magnitudeY
        return negativeX ? !smaller : smaller
    }
}
