import Foundation

/// Feed dates: RFC 822 / 2822 with the variants real feeds use, and RFC 3339 / W3C-DTF.
///
/// Real-world RFC 822 dates have named zones (`EST`, `CEST`), no seconds, two-digit years,
/// wrong or missing day names, odd commas and spacing; all of those are read. A date that is
/// impossible (31 June, hour 25) is refused: the caller drops that field, not the item.
package enum DateParser {
    /// RFC 3339 for text that starts like `2024-`, RFC 822 otherwise; each falls back on the other.
    package static func parse(_ text: String) -> Date? {
        var copy = text
        return copy.withUTF8(parse(bytes:))
    }

    /// The same, straight from UTF-8 bytes: the feed parser hands over its text buffer.
    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        let looksISO = bytes.count >= 5 && bytes[0..<4].allSatisfy(isDigit) && bytes[4] == UInt8(ascii: "-")
        return looksISO ? rfc3339(bytes: bytes) ?? rfc822(bytes: bytes) : rfc822(bytes: bytes) ?? rfc3339(bytes: bytes)
    }

    // MARK: RFC 822

    package static func rfc822(_ text: String) -> Date? {
        var copy = text
        return copy.withUTF8 { rfc822(bytes: $0) }
    }

    /// Works on the UTF-8 bytes in place: dates are parsed once per item, so this is hot.
    private static func rfc822(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        var day: Int?, month: Int?, year: Int?
        var time: (hour: Int, minute: Int, second: Int)?
        var offset: Int?
        var index = 0
        while index < bytes.count {
            while index < bytes.count, isSeparator(bytes[index]) { index += 1 }
            let start = index
            while index < bytes.count, !isSeparator(bytes[index]) { index += 1 }
            guard start < index else { break }
            let token = UnsafeBufferPointer(rebasing: bytes[start..<index])
            let first = token[0]
            if first == UInt8(ascii: "+") || first == UInt8(ascii: "-"), token.count > 1 {
                guard offset == nil, let parsed = numericOffset(UnsafeBufferPointer(rebasing: token.dropFirst()), negative: first == UInt8(ascii: "-")) else { return nil }
                offset = parsed
            } else if token.contains(UInt8(ascii: ":")) {
                guard time == nil, let parsed = clock(token) else { return nil }
                time = parsed
            } else if token.allSatisfy(isDigit) {
                guard token.count <= 4 else { return nil }
                let number = decimal(token)
                if day == nil, token.count <= 2, month == nil || year == nil {
                    day = number
                } else if year == nil {
                    year = token.count <= 2 ? (number < 50 ? 2000 + number : 1900 + number) : number
                } else {
                    return nil
                }
            } else if token.allSatisfy(isLetter) {
                let key = packed(token)
                if month == nil, token.count >= 3, let index = monthIndex(token) {
                    month = index
                } else if offset == nil, let key, let zone = namedZones[key] {
                    offset = zone
                } else if offset == nil, token.count == 1 {
                    offset = 0 // military zones: RFC 2822 says to read them as -0000
                }
                // Anything else — a day name, right or wrong — carries no information.
            } else {
                return nil
            }
        }
        guard let day, let month, let year else { return nil }
        let clock = time ?? (0, 0, 0)
        return makeDate(year: year, month: month, day: day, hour: clock.hour, minute: clock.minute, second: clock.second, nanosecond: 0, offsetSeconds: offset ?? 0)
    }

    private static func isSeparator(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x2C || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (48...57).contains(byte) }

    private static func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) }

    private static func upper(_ byte: UInt8) -> UInt8 { (97...122).contains(byte) ? byte - 32 : byte }

    /// Up to four letters, upper-cased, in one number: a dictionary key with no allocation.
    private static func packed(_ letters: some Collection<UInt8>) -> UInt32? {
        guard letters.count <= 4 else { return nil }
        return letters.reduce(UInt32(0)) { $0 << 8 | UInt32(upper($1)) }
    }

    private static let monthNames: [[UInt8]] = ["JANUARY", "FEBRUARY", "MARCH", "APRIL", "MAY", "JUNE", "JULY", "AUGUST", "SEPTEMBER", "OCTOBER", "NOVEMBER", "DECEMBER"].map { Array($0.utf8) }

    /// "Jun", "JUNE", "Sept": three letters or more of a month's name, any case.
    private static func monthIndex(_ word: UnsafeBufferPointer<UInt8>) -> Int? {
        for (index, name) in monthNames.enumerated() where name.count >= word.count {
            if zip(name, word).allSatisfy({ $0 == upper($1) }) { return index + 1 }
        }
        return nil
    }

    /// Offsets in seconds east of UTC for the zone names feeds use.
    private static let namedZones: [UInt32: Int] = {
        let hours: [String: Double] = [
            "UT": 0, "UTC": 0, "GMT": 0, "Z": 0, "WET": 0,
            "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
            "AKST": -9, "AKDT": -8, "HST": -10, "AST": -4, "ADT": -3, "NST": -3.5, "NDT": -2.5,
            "BST": 1, "WEST": 1, "CET": 1, "MET": 1, "CEST": 2, "MEST": 2, "EET": 2, "EEST": 3, "MSK": 3,
            "IST": 5.5, "SGT": 8, "HKT": 8, "AWST": 8, "JST": 9, "KST": 9,
            "ACST": 9.5, "ACDT": 10.5, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
        ]
        return Dictionary(uniqueKeysWithValues: hours.map { (packed(Array($0.key.utf8))!, Int($0.value * 3600)) })
    }()

    private static func decimal(_ digits: some Collection<UInt8>) -> Int {
        digits.reduce(0) { $0 * 10 + Int($1 - 48) }
    }

    /// `H:MM`, `HH:MM` or `HH:MM:SS`.
    private static func clock(_ token: UnsafeBufferPointer<UInt8>) -> (hour: Int, minute: Int, second: Int)? {
        var parts = (0, 0, 0), count = 0, digits = 0, value = 0
        for byte in token {
            if byte == UInt8(ascii: ":") {
                guard digits > 0, count < 2 else { return nil }
                if count == 0 { parts.0 = value } else { parts.1 = value }
                count += 1
                digits = 0
                value = 0
            } else {
                guard isDigit(byte), digits < 2 else { return nil }
                value = value * 10 + Int(byte - 48)
                digits += 1
            }
        }
        guard digits > 0, count >= 1 else { return nil }
        if count == 1 { parts.1 = value } else { parts.2 = value }
        return parts
    }

    /// `0100`, `01:00`, `01`: hours and minutes east (or, with `negative`, west) of UTC.
    private static func numericOffset(_ digits: UnsafeBufferPointer<UInt8>, negative: Bool) -> Int? {
        var value = 0, count = 0
        for byte in digits where byte != UInt8(ascii: ":") {
            // Refused at the fifth digit, before a feed's run of them can overflow `value`.
            guard isDigit(byte), count < 4 else { return nil }
            value = value * 10 + Int(byte - 48)
            count += 1
        }
        guard count == 2 || count == 4 else { return nil }
        let (hours, minutes) = count == 2 ? (value, 0) : (value / 100, value % 100)
        guard hours <= 14, minutes < 60 else { return nil }
        let seconds = hours * 3600 + minutes * 60
        return negative ? -seconds : seconds
    }

    // MARK: RFC 3339 / W3C-DTF

    /// `2024-05-01T12:30:45.123+02:00`, `2024-05-01T12:30Z`, `2024-05-01`, `2024-05`, `2024`;
    /// a space may stand for `T`; a time without a zone is read as UTC.
    package static func rfc3339(_ text: String) -> Date? {
        var copy = text
        return copy.withUTF8 { rfc3339(bytes: $0) }
    }

    private static func rfc3339(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
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
    static func makeDate(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, nanosecond: Int, offsetSeconds: Int) -> Date? {
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
