import Foundation

/// Durations as config files write them: `250ms`, `30s`, `5m`, `1h30m`, `1.5s`, `90d`.
///
/// A number without a unit is an error rather than a guess (seconds? milliseconds?).
package enum DurationText {
    /// Why a duration could not be read, phrased to follow "invalid duration 'x': ".
    package struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    private static let units: [(suffix: String, nanoseconds: Double)] = [
        ("ms", 1e6), ("d", 86_400e9), ("h", 3600e9), ("m", 60e9), ("s", 1e9),
    ]

    /// Parses a duration; zero is allowed here, callers that need a positive one check.
    package static func parse(_ text: String) throws(ParseError) -> Duration {
        // Foundation's trimming bridges to NSString: most of the cost of reading a source's
        // deadline. A text that starts and ends with a letter or digit has nothing to trim.
        let trimmed = startsAndEndsAlphanumeric(text) ? text : text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw ParseError(description: "empty; write it like 30s, 5m or 1h30m") }
        var rest = Substring(trimmed)
        var nanoseconds = 0.0
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, let value = Double(number) else {
                throw ParseError(description: "expected a number at '\(rest)'; write it like 30s, 5m or 1h30m")
            }
            rest = rest.dropFirst(number.count)
            guard let unit = units.first(where: { rest.hasPrefix($0.suffix) }) else {
                let hint = rest.isEmpty ? "missing unit after '\(number)'" : "unknown unit '\(rest.prefix { $0.isLetter })'"
                throw ParseError(description: "\(hint); units are ms, s, m, h and d (as in 250ms, 30s, 5m, 1h30m, 7d)")
            }
            rest = rest.dropFirst(unit.suffix.count)
            nanoseconds += value * unit.nanoseconds
        }
        guard nanoseconds <= 366 * 24 * 3600e9 else { throw ParseError(description: "longer than a year") }
        return .nanoseconds(Int64(nanoseconds.rounded()))
    }

    private static func startsAndEndsAlphanumeric(_ text: String) -> Bool {
        guard let first = text.utf8.first, let last = text.utf8.last else { return false }
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
        return isAlphanumeric(first) && isAlphanumeric(last)
    }

    /// The shortest config-style text for a duration: `250ms`, `1.5s`, `1h30m`.
    package static func format(_ duration: Duration) -> String {
        let totalMilliseconds = duration.milliseconds
        if totalMilliseconds < 1000 { return "\(totalMilliseconds)ms" }
        let hours = totalMilliseconds / 3_600_000
        let minutes = totalMilliseconds / 60_000 % 60
        let milliseconds = totalMilliseconds % 60_000
        var text = ""
        if hours > 0 { text += "\(hours)h" }
        if minutes > 0 { text += "\(minutes)m" }
        if milliseconds > 0 || text.isEmpty {
            text += milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(Double(milliseconds) / 1000)s"
        }
        return text
    }
}

extension Duration {
    /// Whole nanoseconds, saturating like ``milliseconds``.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (total, overflowed) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowed ? (seconds < 0 ? .min : .max) : total
    }

    /// Whole milliseconds, rounded down; saturating at `Int64.min` / `Int64.max` rather than
    /// trapping, since durations can come from outside (a server's `Retry-After`).
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        guard !overflowAgain else { return seconds < 0 ? .min : .max }
        return total
    }

    /// Seconds as a floating-point number, for reports.
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
