import Foundation

/// Dates as text, in UTC and the proleptic Gregorian calendar, without Foundation's formatters
/// (slow, and locale-dependent where a protocol is not): RFC 3339 / W3C-DTF read and written,
/// RFC 822 written, and the calendar arithmetic both need. Feeds read their looser RFC 822
/// variants with `DateParser`, which builds on this.
package enum CalendarText {
    // MARK: RFC 3339 / W3C-DTF

    /// `2024-05-01T12:30:45.123+02:00`, `2024-05-01T12:30Z`, `2024-05-01`, `2024-05`, `2024`;
    /// a space may stand for `T`; a time without a zone is read as UTC.
    package static func rfc3339(_ text: String) -> Date? {
        var copy = text
        return copy.withUTF8 { rfc3339(bytes: $0) }
    }

    package static func rfc3339(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var scanner = DigitScanner(bytes)
        guard let year = scanner.number(digits: 4) else { return nil }
        var month = 1, day = 1, hour = 0, minute = 0, second = 0, nanosecond = 0, offset = 0
        if scanner.skip("-") {
            guard let value = scanner.number(digits: 2) else { return nil }
            month = value
            if scanner.skip("-") {
                guard let value = scanner.number(digits: 2) else { return nil }
                day = value
            }
        }
        if scanner.skip("T") || scanner.skip("t") || scanner.skip(" ") {
            guard let h = scanner.number(digits: 2), scanner.skip(":"), let m = scanner.number(digits: 2) else { return nil }
            hour = h
            minute = m
            if scanner.skip(":") {
                guard let s = scanner.number(digits: 2) else { return nil }
                second = s
                if scanner.skip(".") || scanner.skip(",") {
                    let fraction = scanner.digits()
                    guard !fraction.isEmpty else { return nil }
                    nanosecond = fraction.prefix(9).reduce(0) { $0 * 10 + Int($1 - 48) }
                    for _ in min(9, fraction.count)..<9 { nanosecond *= 10 }
                }
            }
            if scanner.skip("Z") || scanner.skip("z") {
                offset = 0
            } else if let sign = scanner.next(oneOf: "+-") {
                guard let hours = scanner.number(digits: 2) else { return nil }
                _ = scanner.skip(":")
                let minutes = scanner.number(digits: 2) ?? 0
                guard hours <= 14, minutes < 60 else { return nil }
                offset = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
            }
        }
        guard scanner.atEnd else { return nil }
        return makeDate(year: year, month: month, day: day, hour: hour, minute: minute, second: second, nanosecond: nanosecond, offsetSeconds: offset)
    }

    private struct DigitScanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        mutating func next(oneOf characters: String) -> UInt8? {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func number(digits count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            index += count
            return value
        }

        mutating func digits() -> Slice<UnsafeBufferPointer<UInt8>> {
            let start = index
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
            return bytes[start..<index]
        }
    }

    // MARK: Writing

    /// `2026-11-22T06:00:00Z`: RFC 3339 in UTC, to the second (what JSONDecoder's `.iso8601` reads).
    package static func rfc3339String(from date: Date) -> String {
        var bytes: [UInt8] = []
        appendRFC3339(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// ``rfc3339String(from:)``'s bytes appended to `bytes`: JSON output writes every date of
    /// a snapshot or a status this way, without a string made and scanned for each.
    package static func appendRFC3339(_ date: Date, to bytes: inout [UInt8]) {
        let c = civil(date)
        bytes.append(contentsOf: String(c.year).utf8)
        appendTwoDigits(c.month, after: UInt8(ascii: "-"), to: &bytes)
        appendTwoDigits(c.day, after: UInt8(ascii: "-"), to: &bytes)
        appendTwoDigits(c.hour, after: UInt8(ascii: "T"), to: &bytes)
        appendTwoDigits(c.minute, after: UInt8(ascii: ":"), to: &bytes)
        appendTwoDigits(c.second, after: UInt8(ascii: ":"), to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// A separator and a field of 0 to 99 (a month, a day, an hour…), zero-padded.
    private static func appendTwoDigits(_ value: Int, after separator: UInt8, to bytes: inout [UInt8]) {
        bytes.append(separator)
        bytes.append(UInt8(ascii: "0") + UInt8(value / 10))
        bytes.append(UInt8(ascii: "0") + UInt8(value % 10))
    }

    /// `Sun, 22 Nov 2026 06:00:00 +0000`: RFC 822 in UTC.
    package static func rfc822String(from date: Date) -> String {
        let c = civil(date)
        let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return "\(days[c.weekday]), \(two(c.day)) \(months[c.month - 1]) \(c.year) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) +0000"
    }

    private static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// UTC fields of a date; `weekday` counts from Thursday, the weekday of 1970-01-01.
    private static func civil(_ date: Date) -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, weekday: Int) {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil from days: the inverse of makeDate's arithmetic (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60, ((days % 7) + 7) % 7)
    }

    // MARK: Calendar arithmetic

    /// A date from civil UTC fields minus an offset, or `nil` for an impossible date.
    /// (Days from civil: Howard Hinnant's algorithm, proleptic Gregorian.)
    package static func makeDate(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, nanosecond: Int, offsetSeconds: Int) -> Date? {
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second) else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        // A leap second is read as the last second of its minute.
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        return Date(timeIntervalSince1970: TimeInterval(seconds) + TimeInterval(nanosecond) / 1e9)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
