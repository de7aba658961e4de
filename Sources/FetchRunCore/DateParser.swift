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
    package static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        let looksISO = bytes.count >= 5 && bytes[0..<4].allSatisfy(isDigit) && bytes[4] == UInt8(ascii: "-")
        return looksISO ? CalendarText.rfc3339(bytes: bytes) ?? rfc822(bytes: bytes) : rfc822(bytes: bytes) ?? CalendarText.rfc3339(bytes: bytes)
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
        return CalendarText.makeDate(year: year, month: month, day: day, hour: clock.hour, minute: clock.minute, second: clock.second, nanosecond: 0, offsetSeconds: offset ?? 0)
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
}
