import Foundation

/// Feed dates: RFC 822 / 2822 with the variants real feeds use, and RFC 3339 / W3C-DTF.
///
/// Real-world RFC 822 dates have named zones (`EST`, `CEST`), no seconds, two-digit years,
/// wrong or missing day names, odd commas and spacing; all of those are read. A date that is
/// impossible (31 June, hour 25) is refused: the caller drops that field, not the item.
public enum DateParser {
    /// Tries RFC 822 first, then RFC 3339 / W3C-DTF.
    public static func parse(_ text: String) -> Date? {
        rfc822(text) ?? rfc3339(text)
    }

    // MARK: RFC 822

    public static func rfc822(_ text: String) -> Date? {
        var day: Int?, month: Int?, year: Int?
        var time: (hour: Int, minute: Int, second: Int)?
        var offset: Int?
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" || $0 == "\n" || $0 == "\r" })
        for token in tokens {
            if let first = token.first, first == "+" || first == "-", token.count > 1 {
                guard offset == nil, let parsed = numericOffset(token.dropFirst(), negative: first == "-") else { return nil }
                offset = parsed
            } else if token.contains(":") {
                guard time == nil, let parsed = clock(token) else { return nil }
                time = parsed
            } else if token.allSatisfy(\.isNumber) {
                guard let number = Int(token) else { return nil }
                if day == nil, token.count <= 2, month == nil || year == nil {
                    day = number
                } else if year == nil {
                    year = token.count <= 2 ? (number < 50 ? 2000 + number : 1900 + number) : number
                } else {
                    return nil
                }
            } else if token.allSatisfy(\.isLetter) {
                let word = token.uppercased()
                if month == nil, let index = monthIndex(word) {
                    month = index
                } else if offset == nil, let zone = namedZones[word] {
                    offset = zone
                } else if offset == nil, word.count == 1 {
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

    private static let months = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]

    private static func monthIndex(_ word: String) -> Int? {
        guard word.count >= 3 else { return nil }
        let prefix = String(word.prefix(3))
        guard let index = months.firstIndex(of: prefix) else { return nil }
        // "June", "Sept", "Sep": accept the name or any prefix of it of three letters or more.
        let full = ["JANUARY", "FEBRUARY", "MARCH", "APRIL", "MAY", "JUNE", "JULY", "AUGUST", "SEPTEMBER", "OCTOBER", "NOVEMBER", "DECEMBER"][index]
        return full.hasPrefix(word) ? index + 1 : nil
    }

    /// Offsets in seconds east of UTC for the zone names feeds use.
    private static let namedZones: [String: Int] = {
        let hours: [String: Double] = [
            "UT": 0, "UTC": 0, "GMT": 0, "Z": 0, "WET": 0,
            "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
            "AKST": -9, "AKDT": -8, "HST": -10, "AST": -4, "ADT": -3, "NST": -3.5, "NDT": -2.5,
            "BST": 1, "WEST": 1, "CET": 1, "MET": 1, "CEST": 2, "MEST": 2, "EET": 2, "EEST": 3, "MSK": 3,
            "IST": 5.5, "SGT": 8, "HKT": 8, "AWST": 8, "JST": 9, "KST": 9,
            "ACST": 9.5, "ACDT": 10.5, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
        ]
        return hours.mapValues { Int($0 * 3600) }
    }()

    private static func clock(_ token: Substring) -> (hour: Int, minute: Int, second: Int)? {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.count <= 2 && $0.allSatisfy(\.isNumber) }) else { return nil }
        return (Int(parts[0])!, Int(parts[1])!, parts.count == 3 ? Int(parts[2])! : 0)
    }

    /// `0100`, `01:00`, `01`: hours and minutes east (or, with `negative`, west) of UTC.
    private static func numericOffset(_ digits: Substring, negative: Bool) -> Int? {
        let compact = digits.filter { $0 != ":" }
        guard compact.allSatisfy(\.isNumber), compact.count == 2 || compact.count == 4 else { return nil }
        let value = Int(compact)!
        let (hours, minutes) = compact.count == 2 ? (value, 0) : (value / 100, value % 100)
        guard hours <= 14, minutes < 60 else { return nil }
        let seconds = hours * 3600 + minutes * 60
        return negative ? -seconds : seconds
    }

    // MARK: RFC 3339 / W3C-DTF

    /// `2024-05-01T12:30:45.123+02:00`, `2024-05-01T12:30Z`, `2024-05-01`, `2024-05`, `2024`;
    /// a space may stand for `T`; a time without a zone is read as UTC.
    public static func rfc3339(_ text: String) -> Date? {
        var scanner = DigitScanner(Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
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
                    let nine = (fraction + Array(repeating: UInt8(ascii: "0"), count: 9)).prefix(9)
                    nanosecond = Int(String(decoding: nine, as: UTF8.self))!
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
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func skip(_ character: Character) -> Bool {
            guard index < bytes.count, bytes[index] == character.asciiValue else { return false }
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

        mutating func digits() -> [UInt8] {
            let start = index
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
            return Array(bytes[start..<index])
        }
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
