import Foundation

/// Writes JSON by appending bytes: snapshots and NDJSON events.
///
/// Foundation's JSONEncoder spent more time than fetching and parsing together in a run of
/// 1,000 feeds (see Benchmarks/README.md); this writer does the one thing fetchrun needs.
/// ``JSONReader`` is its counterpart for reading.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    /// Per open object or array: whether the next member needs a comma first.
    private var needsComma: [Bool] = []

    package init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    package var string: String { String(decoding: bytes, as: UTF8.self) }

    // MARK: Structure

    package mutating func beginObject() { open(UInt8(ascii: "{")) }
    package mutating func endObject() { close(UInt8(ascii: "}")) }
    package mutating func beginArray() { open(UInt8(ascii: "[")) }
    package mutating func endArray() { close(UInt8(ascii: "]")) }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        needsComma.append(false)
    }

    private mutating func close(_ bracket: UInt8) {
        needsComma.removeLast()
        bytes.append(bracket)
    }

    /// Ends a top-level value as a line of NDJSON, so that the next value begins a line of
    /// its own.
    package mutating func endLine() {
        precondition(needsComma.isEmpty, "a line of NDJSON ends only after its top-level value")
        bytes.append(0x0A)
    }

    /// A line break before the next member, for files people read.
    package mutating func newline(indent: Int) {
        bytes.append(0x0A)
        bytes.append(contentsOf: repeatElement(0x20, count: indent))
    }

    package mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        // The value that follows belongs to this key: no comma before it.
        needsComma[needsComma.count - 1] = false
    }

    // MARK: Values

    package mutating func value(_ text: String) {
        separate()
        appendQuoted(text)
    }

    package mutating func value(_ number: Int64) {
        separate()
        bytes.append(contentsOf: String(number).utf8)
    }

    package mutating func value(_ number: Int) {
        value(Int64(number))
    }

    package mutating func value(_ number: Double) {
        value(JSONNumber(number))
    }

    /// A number with every digit it was read with; `null` past a `Double`'s range.
    package mutating func value(_ number: JSONNumber) {
        separate()
        bytes.append(contentsOf: (number.text ?? "null").utf8)
    }

    package mutating func value(_ flag: Bool) {
        separate()
        bytes.append(contentsOf: (flag ? "true" : "false").utf8)
    }

    /// RFC 3339 in UTC, to the second.
    package mutating func value(_ date: Date) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        CalendarText.appendRFC3339(date, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
    }

    package mutating func value(_ json: JSONValue) {
        switch json {
        case .null: null()
        case .bool(let flag): value(flag)
        case .number(let number): value(number)
        case .string(let text): value(text)
        case .array(let elements):
            beginArray()
            for element in elements { value(element) }
            endArray()
        case .object(let members):
            beginObject()
            for name in members.keys.sorted() {
                key(name)
                value(members[name]!)
            }
            endObject()
        }
    }

    // MARK: Key-value shorthands; nil values are left out.

    package mutating func field(_ name: String, _ text: String?) {
        guard let text else { return }
        key(name)
        value(text)
    }

    package mutating func field(_ name: String, _ number: Int64?) {
        guard let number else { return }
        key(name)
        value(number)
    }

    package mutating func field(_ name: String, _ number: Int?) {
        field(name, number.map(Int64.init))
    }

    package mutating func field(_ name: String, _ flag: Bool?) {
        guard let flag else { return }
        key(name)
        value(flag)
    }

    package mutating func field(_ name: String, _ date: Date?) {
        guard let date else { return }
        key(name)
        value(date)
    }

    package mutating func field(_ name: String, _ strings: [String]) {
        key(name)
        beginArray()
        for text in strings { value(text) }
        endArray()
    }

    // MARK: Internals

    private mutating func separate() {
        guard let last = needsComma.last else { return }
        if last { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var copy = text
        copy.withUTF8 { utf8 in
            var start = 0
            var index = 0
            let count = utf8.count
            while index < count {
                let byte = utf8[index]
                // Only quotes, backslashes and control characters need escaping.
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else {
                    index += 1
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                switch byte {
                case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
                case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                default:
                    let hex: StaticString = "0123456789abcdef"
                    bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex.utf8Start[Int(byte >> 4)], hex.utf8Start[Int(byte & 0xF)]])
                }
                index += 1
                start = index
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
