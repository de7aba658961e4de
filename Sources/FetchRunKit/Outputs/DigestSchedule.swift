import Foundation

/// When an output with `digest: SCHEDULE` sends what it has collected: `hourly` (on the hour),
/// `hourly@:MM`, `daily@HH:MM` (`daily` alone is midnight), `weekly@DAY HH:MM` (`DAY` is `mon`
/// to `sun`, or the whole name), all in the config's `timezone:`.
///
/// The rule (``OutboxDelivery`` keeps it): an output's deliveries are sent at the first time of
/// the schedule after the oldest of them was queued, all together. So none waits longer than one
/// period — plus, when that attempt fails, the retries every delivery gets. Times a daylight
/// saving change skips are taken at the next time that exists; a time it repeats, the first.
package struct DigestSchedule: Sendable, Hashable, CustomStringConvertible {
    package enum Period: Sendable, Hashable {
        case hourly(minute: Int)
        case daily(hour: Int, minute: Int)
        /// `weekday` as Foundation counts: 1 is Sunday.
        case weekly(weekday: Int, hour: Int, minute: Int)
    }

    package var period: Period
    package var timeZone: TimeZone
    /// The schedule as the config writes it.
    package var description: String

    static let weekdays = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    static let weekdayNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    /// - Throws: a reason naming what is not a schedule.
    package init(_ text: String, timeZone: TimeZone) throws {
        self.timeZone = timeZone
        description = text
        let lowered = text.lowercased().trimmingCharacters(in: .whitespaces)
        let (kind, at) = lowered.firstIndex(of: "@").map { (String(lowered[..<$0]), String(lowered[lowered.index(after: $0)...])) } ?? (lowered, nil)
        switch kind {
        case "hourly":
            guard let at else {
                period = .hourly(minute: 0)
                return
            }
            guard at.hasPrefix(":"), let minute = Int(at.dropFirst()), at.count == 3, (0..<60).contains(minute) else {
                throw ValueError("'hourly@\(at)': the minute is written hourly@:MM, such as hourly@:30")
            }
            period = .hourly(minute: minute)
        case "daily":
            let (hour, minute) = try at.map { try Self.time($0) } ?? (0, 0)
            period = .daily(hour: hour, minute: minute)
        case "weekly":
            let parts = (at ?? "").split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let day = parts.first, let weekday = Self.weekdays.firstIndex(of: day) ?? Self.weekdayNames.firstIndex(of: day), parts.count <= 2 else {
                throw ValueError("'\(text)': a weekly digest names its day and time, such as weekly@mon 08:00")
            }
            let (hour, minute) = try parts.count == 2 ? Self.time(parts[1]) : (0, 0)
            period = .weekly(weekday: weekday + 1, hour: hour, minute: minute)
        default:
            throw ValueError("'\(text)' is not a digest schedule: use true, hourly, daily@HH:MM or weekly@DAY HH:MM")
        }
    }

    /// `HH:MM`, 24-hour.
    private static func time(_ text: String) throws -> (Int, Int) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].count == 2, (1...2).contains(parts[0].count),
              let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute) else {
            throw ValueError("'\(text)' is not a time of day: write HH:MM, 00:00 to 23:59")
        }
        return (hour, minute)
    }

    /// The first time of the schedule strictly after `date`.
    package func next(after date: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        var components = DateComponents(second: 0)
        switch period {
        case .hourly(let minute):
            components.minute = minute
        case .daily(let hour, let minute):
            (components.hour, components.minute) = (hour, minute)
        case .weekly(let weekday, let hour, let minute):
            (components.weekday, components.hour, components.minute) = (weekday, hour, minute)
        }
        // Within a week and a day of any date there is always a match; the fallback only keeps
        // an impossible answer from holding the deliveries for ever.
        return calendar.nextDate(after: date, matching: components, matchingPolicy: .nextTime, repeatedTimePolicy: .first, direction: .forward)
            ?? date.addingTimeInterval(3600)
    }
}
