import Foundation

/// A pull reader of JSON bytes, the reading half of ``JSONWriter``: snapshots are decoded with
/// it rather than JSONDecoder, which builds a whole tree of boxed values before the first field
/// is read and was most of the cost of reading snapshots that had to change.
///
/// The caller says what it expects (an object, a string, an integer…) and the reader checks
/// it, so a file that is not what it should be fails with where and why — `wrong type at
/// 'items.3.title' (expected a string)` — never with a trap: the files come from a folder that
/// anyone with access can edit. Nesting is limited to ``maximumDepth``.
package struct JSONReader: ~Copyable {
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// Deeper nesting is refused rather than recursed into (JSONDecoder's limit too).
    package static let maximumDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var path: [PathComponent] = []
    private var depth = 0

    private enum PathComponent {
        case key(String)
        case index(Int)
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The one value `data` holds, whatever it is; only whitespace may follow it.
    /// - Throws: ``Failure`` naming what is wrong and where, or that it nests deeper than
    ///   ``maximumDepth``. In time linear in the bytes, however they nest.
    package static func value(of data: Data) throws(Failure) -> JSONValue {
        try read(data) { reader throws(Failure) in try reader.readValue() }
    }

    /// Reads `data` with `body`, which must consume exactly one value; only whitespace may
    /// follow it.
    package static func read<T>(_ data: Data, _ body: (inout JSONReader) throws(Failure) -> T) throws(Failure) -> T {
        let result: Result<T, Failure> = data.withUnsafeBytes { raw in
            var reader = JSONReader(bytes: raw.bindMemory(to: UInt8.self))
            do throws(Failure) {
                let value = try body(&reader)
                reader.skipWhitespace()
                guard reader.position == reader.bytes.count else { return .failure(reader.invalid("more data after the end")) }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    // MARK: Containers

    /// Reads an object, calling `member` with each key; `member` must read (or skip) its value.
    package mutating func readObject(_ member: (inout JSONReader, String) throws(Failure) -> Void) throws(Failure) {
        try expectStart(of: UInt8(ascii: "{"), "an object")
        defer { depth -= 1 }
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw invalid("expected a key") }
            let key = try readString()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw invalid("expected ':'") }
            position += 1
            path.append(.key(key))
            try member(&self, key)
            path.removeLast()
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"): position += 1; return
            default: throw invalid("expected ',' or '}'")
            }
        }
    }

    /// Reads an array, calling `element` with each index; `element` must read (or skip) it.
    package mutating func readArray(_ element: (inout JSONReader, Int) throws(Failure) -> Void) throws(Failure) {
        try expectStart(of: UInt8(ascii: "["), "an array")
        defer { depth -= 1 }
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            return
        }
        var index = 0
        while true {
            path.append(.index(index))
            try element(&self, index)
            path.removeLast()
            index += 1
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"): position += 1; return
            default: throw invalid("expected ',' or ']'")
            }
        }
    }

    private mutating func expectStart(of opening: UInt8, _ what: String) throws(Failure) {
        skipWhitespace()
        guard peek() == opening else { throw wrongType(what) }
        guard depth < Self.maximumDepth else { throw invalid("nested deeper than \(Self.maximumDepth) levels") }
        depth += 1
        position += 1
    }

    // MARK: Scalars

    /// Consumes a `null` if one comes next.
    package mutating func readNull() -> Bool {
        skipWhitespace()
        guard matches("null") else { return false }
        position += 4
        return true
    }

    package mutating func readString() throws(Failure) -> String {
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else { throw wrongType("a string") }
        position += 1
        let start = position
        // The common case, a string without escapes, is one validated copy of its bytes.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                position += 1
                guard let text else { throw invalid("a string that is not UTF-8") }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw invalid("a control character inside a string") }
            position += 1
        }
        var utf8 = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else { throw invalid("a string that is not UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                try readEscape(into: &utf8)
            case ..<0x20:
                throw invalid("a control character inside a string")
            default:
                utf8.append(byte)
            }
        }
        throw invalid("a string without its closing quote")
    }

    package mutating func readOptionalString() throws(Failure) -> String? {
        readNull() ? nil : try readString()
    }

    /// An integer that fits 64 bits; a fraction, an exponent or a larger number is refused.
    package mutating func readInt64() throws(Failure) -> Int64 {
        skipWhitespace()
        let negative = peek() == UInt8(ascii: "-")
        if negative { position += 1 }
        guard let first = peek(), first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { throw wrongType("an integer") }
        var value: Int64 = 0
        while let digit = peek(), digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") {
            let (times10, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowB) = negative ? times10.subtractingReportingOverflow(Int64(digit - 48)) : times10.addingReportingOverflow(Int64(digit - 48))
            guard !overflowA, !overflowB else { throw wrongType("an integer that fits 64 bits") }
            value = next
            position += 1
        }
        if let next = peek(), next == UInt8(ascii: ".") || next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            throw wrongType("a whole number")
        }
        return value
    }

    package mutating func readOptionalInt64() throws(Failure) -> Int64? {
        readNull() ? nil : try readInt64()
    }

    package mutating func readInt() throws(Failure) -> Int {
        let value = try readInt64()
        guard let exact = Int(exactly: value) else { throw wrongType("an integer") }
        return exact
    }

    package mutating func readBool() throws(Failure) -> Bool {
        skipWhitespace()
        if matches("true") {
            position += 4
            return true
        }
        if matches("false") {
            position += 5
            return false
        }
        throw wrongType("true or false")
    }

    /// An RFC 3339 date in a string, as ``JSONWriter`` writes dates.
    package mutating func readDate() throws(Failure) -> Date {
        let text = try readString()
        guard let date = CalendarText.rfc3339(text) else { throw wrongType("an RFC 3339 date") }
        return date
    }

    package mutating func readOptionalDate() throws(Failure) -> Date? {
        readNull() ? nil : try readDate()
    }

    /// Any value, as a ``JSONValue``.
    package mutating func readValue() throws(Failure) -> JSONValue {
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: "{"):
            var object: [String: JSONValue] = [:]
            try readObject { reader, key throws(Failure) in object[key] = try reader.readValue() }
            return .object(object)
        case UInt8(ascii: "["):
            var array: [JSONValue] = []
            try readArray { reader, _ throws(Failure) in array.append(try reader.readValue()) }
            return .array(array)
        case UInt8(ascii: "\""):
            return .string(try readString())
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return .bool(try readBool())
        case UInt8(ascii: "n"):
            guard readNull() else { throw invalid("expected a value") }
            return .null
        default:
            return .number(try readNumber())
        }
    }

    /// Reads past a value the caller does not want (an unknown key's, from a newer fetchrun).
    package mutating func skipValue() throws(Failure) {
        _ = try readValue()
    }

    // MARK: Failures

    /// A required member was not in the object just read.
    package func missing(_ key: String) -> Failure {
        Failure(description: "missing field '\(key)'" + (path.isEmpty ? "" : " at '\(pathText)'"))
    }

    private func wrongType(_ expected: String) -> Failure {
        guard position < bytes.count else { return invalid("the data ends where \(expected) should be") }
        return Failure(description: "wrong type " + (path.isEmpty ? "at the top" : "at '\(pathText)'") + " (expected \(expected))")
    }

    private func invalid(_ reason: String) -> Failure {
        Failure(description: "not valid JSON at byte \(position)" + (path.isEmpty ? "" : " ('\(pathText)')") + ": \(reason)")
    }

    /// Where the reader is, as its last few keys and indexes: a document nested 500 deep
    /// would otherwise push the reason past what a failure message keeps.
    private var pathText: String {
        let shown = 8
        let text = path.suffix(shown).map { component in
            switch component {
            case .key(let key): return TerminalText.safe(key, maximumLength: 60)
            case .index(let index): return String(index)
            }
        }.joined(separator: ".")
        return path.count > shown ? "….\(text)" : text
    }

    // MARK: Bytes

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private func matches(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        return word.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[position + $0] == expected[$0] }
        }
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
    }

    private mutating func readNumber() throws(Failure) -> JSONNumber {
        let start = position
        while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            position += 1
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        // A number of valid JSON past a double's range (1e999, 400 digits) reads as ±infinity:
        // JSON sets no limit, so the document is not broken; whoever uses the value checks it
        // (``JSONValue/scalarText`` has none, JSONWriter writes null).
        guard !text.isEmpty, let number = JSONNumber(json: text) else {
            position = start
            throw invalid("expected a value")
        }
        return number
    }

    private mutating func readEscape(into utf8: inout [UInt8]) throws(Failure) {
        guard let escaped = peek() else { throw invalid("a string without its closing quote") }
        position += 1
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escaped)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try readHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard matches("\\u") else { throw invalid("a lone surrogate in a \\u escape") }
                position += 2
                let low = try readHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw invalid("a lone surrogate in a \\u escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw invalid("a lone surrogate in a \\u escape") }
            utf8.append(contentsOf: UTF8.encode(unicode)!)
        default:
            throw invalid("an unknown escape '\\\(Character(Unicode.Scalar(escaped)))'")
        }
    }

    private mutating func readHex4() throws(Failure) -> UInt32 {
        guard bytes.count - position >= 4 else { throw invalid("a short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw invalid("a \\u escape that is not hexadecimal")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }
}
