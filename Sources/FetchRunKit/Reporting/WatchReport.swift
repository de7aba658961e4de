import Foundation

/// The output of `watch` and `worker`: each new item the moment its fetch ends, a line per
/// fetch with `-v`, and a summary at the end — as text, or as the NDJSON events `run` prints.
package struct WatchReport: Sendable {
    public var format: OutputFormat
    package var style: TerminalStyle
    /// A text line for every fetch, not only those with new items.
    public var verbose: Bool
    /// Print every item of a source's first fetch instead of one `baseline` line (text; NDJSON
    /// always lists them, as `run` does).
    public var printBaseline: Bool

    /// Lines coloured with ANSI escapes when `colored` (text format).
    public init(format: OutputFormat, colored: Bool = false, verbose: Bool = false, printBaseline: Bool = false) {
        self.init(format: format, style: TerminalStyle(colored: colored), verbose: verbose, printBaseline: printBaseline)
    }

    package init(format: OutputFormat, style: TerminalStyle, verbose: Bool, printBaseline: Bool) {
        self.format = format
        self.style = style
        self.verbose = verbose
        self.printBaseline = printBaseline
    }

    /// What to print when a fetch ends at `time`; `nextFetch` is when the source is due again.
    public func lines(for report: SourceReport, at time: Date, nextFetch: Date?) -> [String] {
        let newItems = report.outcome.newItems
        let baseline = report.isBaseline && !printBaseline && !newItems.isEmpty
        switch format {
        case .text:
            let clock = Self.clockTime(time)
            var lines: [String] = []
            if verbose {
                var line = "\(style.paint(clock, .dim))  \(report.name)  \(report.outcome.name), \(newItems.count) new, \(TextReport.seconds(report.duration))"
                if let failure = report.outcome.failure { line += ": " + style.paint(TerminalText.safe(failure.message), .red) }
                if let nextFetch { line += style.paint(", next \(Self.clockTime(nextFetch))", .dim) }
                lines.append(line)
            }
            if baseline {
                lines.append("\(style.paint(clock, .dim))  \(report.name): baseline, \(newItems.count) item\(newItems.count == 1 ? "" : "s")")
            } else {
                for item in newItems {
                    lines.append("\(style.paint(clock, .dim))  \(report.name)  \(style.paint("+", .green)) \(TerminalText.safe(item.title))" + (item.link.map { "  — " + style.paint(TerminalText.safe($0), .dim) } ?? ""))
                    if let diff = item.diff { lines += TextReport(style: style).diffLines(diff) }
                }
            }
            return lines
        case .json:
            // The events `run` prints for a source, whichever command fetched it: its items
            // (a first fetch's too), its updated items, then its `source` event.
            var lines = JSONEvents.itemLines(for: report)
            lines.append(JSONEvents.source(report, nextFetch: nextFetch))
            return lines
        }
    }

    /// Fetches, new items and failures per source, sources sorted by name.
    public func summary(_ tallies: [String: WatchTally], duration: Duration) -> [String] {
        let sorted = tallies.sorted { $0.key < $1.key }
        switch format {
        case .text:
            let width = sorted.map(\.key.count).max() ?? 0
            var lines = ["", "watched for \(TextReport.seconds(duration)):"]
            for (name, tally) in sorted {
                lines.append("  \(name.column(width))  \(tally.fetches) fetch\(tally.fetches == 1 ? "" : "es"), \(tally.newItems) new, \(tally.failures) failed")
            }
            return lines
        case .json:
            return [JSONEvents.event("summary") { json in
                json.field("duration_ms", duration.milliseconds)
                json.key("sources")
                json.beginObject()
                for (name, tally) in sorted {
                    json.key(name)
                    json.beginObject()
                    json.field("fetches", tally.fetches)
                    json.field("new", tally.newItems)
                    json.field("failed", tally.failures)
                    json.endObject()
                }
                json.endObject()
            }]
        }
    }

    /// Local time of day, `12:04:31`, for every line a watch prints.
    static func clockTime(_ date: Date) -> String {
        date.formatted(secondStyle)
    }

    private static let secondStyle = Date.VerbatimFormatStyle(
        format: "\(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits):\(second: .twoDigits)",
        timeZone: .current, calendar: Calendar(identifier: .gregorian)
    )
}
