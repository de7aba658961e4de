import Foundation

/// Formats run reports and snapshots as lines for people.
package struct TextReport: Sendable {
    /// New items listed under a source before the rest are summed up.
    public static let itemsListedPerSource = 10

    package var style: TerminalStyle
    /// Every new item is listed, a first fetch's too, rather than the first
    /// ``itemsListedPerSource`` and a baseline line.
    public var listsAll = false

    /// Lines coloured with ANSI escapes when `colored`.
    public init(colored: Bool = false, listsAll: Bool = false) {
        self.init(style: TerminalStyle(colored: colored), listsAll: listsAll)
    }

    package init(style: TerminalStyle, listsAll: Bool = false) {
        self.style = style
        self.listsAll = listsAll
    }

    /// Per source: outcome, new and total items, duration, reason; its new items; then the
    /// run's result with the total of new items and the run's duration.
    public func lines(for report: RunReport) -> [String] {
        let nameWidth = min(32, report.sources.map(\.name.count).max() ?? 0)
        var lines: [String] = []
        for source in report.sources {
            let name = source.name.column(max(nameWidth, source.name.count))
            var line = "\(style.paint(name, .bold))  \(outcome(source.outcome))"
            line += "  \(String(source.newCount).leftPadded(4)) new  \(String(source.totalItems).leftPadded(5)) total  \(Self.seconds(source.duration).leftPadded(7))"
            if source.updatedCount > 0 { line += "  \(source.updatedCount) updated" }
            if source.queueWait >= Self.queueWaitShown, let host = source.queueHost {
                line += style.paint("  (waited \(Self.seconds(source.queueWait)) for \(TerminalText.safe(host)))", .dim)
            }
            if let failure = source.outcome.failure {
                line += "  \(style.paint(TerminalText.safe(failure.message), .red))"
            }
            lines.append(line)
            let items = source.outcome.newItems
            if source.isBaseline, !listsAll, source.newCount > 0 {
                // A first fetch finds everything the source has: news to nobody.
                lines.append("    " + style.paint("baseline: \(source.newCount) item\(source.newCount == 1 ? "" : "s"), not listed; `fetchrun show \(source.name)` lists them", .dim))
            } else {
                let listed = listsAll ? items.count : min(items.count, Self.itemsListedPerSource)
                for item in items.prefix(listed) {
                    lines.append("    + " + TerminalText.safe(item.title) + (item.link.map { "  " + style.paint(TerminalText.safe($0), .dim) } ?? ""))
                    if let diff = item.diff { lines += diffLines(diff) }
                }
                if source.newCount > listed {
                    lines.append("    … and \(source.newCount - listed) more (`--list-all` lists every one)")
                }
            }
            let updated = listsAll ? source.updatedItems : Array(source.updatedItems.prefix(Self.itemsListedPerSource))
            for item in updated {
                lines.append("    ~ " + TerminalText.safe(item.title) + (item.link.map { "  " + style.paint(TerminalText.safe($0), .dim) } ?? "") + style.paint("  (updated)", .dim))
            }
            if source.updatedCount > updated.count {
                lines.append("    … and \(source.updatedCount - updated.count) more updated")
            }
            for note in source.notes {
                lines.append("    " + style.paint("! " + TerminalText.safe(note), .yellow))
            }
        }
        if !report.sources.isEmpty { lines.append("") }
        lines.append(summary(for: report))
        return lines
    }

    /// The most lines of a diff a report shows unless it lists all.
    public static let diffLinesListed = 40

    /// A watched selection's diff under its item: added lines green, removed red, hunk heads dim.
    func diffLines(_ diff: String) -> [String] {
        let all = diff.split(separator: "\n", omittingEmptySubsequences: false)
        let shown = listsAll ? all[...] : all.prefix(Self.diffLinesListed)
        var lines = shown.map { line -> String in
            let text = "      " + TerminalText.safe(String(line))
            switch line.first {
            case "+": return style.paint(text, .green)
            case "-": return style.paint(text, .red)
            case "@": return style.paint(text, .dim)
            default: return text
            }
        }
        if all.count > shown.count { lines.append("      … and \(all.count - shown.count) more lines of diff (`--list-all` shows them)") }
        return lines
    }

    /// The last line, in the colour of the exit status: green only when every source succeeded
    /// (exit 0), yellow when some failed (exit 2, the result word followed by how many), red
    /// when all did (exit 3) or the run was interrupted.
    func summary(for report: RunReport) -> String {
        let plural = report.newItemCount == 1 ? "item" : "items"
        let counts = "\(report.newItemCount) new \(plural) from \(report.sources.count) source\(report.sources.count == 1 ? "" : "s")"
        let failed = report.failedCount
        let interrupted = report.sources.contains { $0.outcome.failure?.kind == .cancelled }
        let head: String
        let color: TerminalStyle.Color?
        switch (interrupted, failed) {
        case (true, _):
            head = "interrupted (\(report.result.rawValue)): \(counts), \(failed) failed"
            color = .red
        case (false, 0):
            head = "\(report.result.rawValue): \(counts)"
            color = report.result == .newData ? .green : nil
        case (false, report.sources.count):
            head = "\(report.result.rawValue): \(counts), \(failed) failed"
            color = .red
        default:
            head = "\(report.result.rawValue), \(failed) of \(report.sources.count) failed: \(counts)"
            color = .yellow
        }
        let line = head + ", in \(Self.seconds(report.duration))"
        return color.map { style.paint(line, $0) } ?? line
    }

    /// A snapshot's items, newest first: date, title, link.
    public func lines(for snapshot: Snapshot) -> [String] {
        let title = snapshot.title.map { "  " + TerminalText.safe($0) } ?? ""
        var lines = [style.paint(snapshot.source, .bold) + title + style.paint("  \(snapshot.type), \(snapshot.items.count) item\(snapshot.items.count == 1 ? "" : "s"), updated \(Self.timestamp(snapshot.updatedAt))", .dim)]
        for item in snapshot.items.newestFirst() {
            let date = (item.published ?? item.updated).map(Self.timestamp) ?? "".column(16)
            lines.append("  \(style.paint(date, .dim))  \(TerminalText.safe(item.title))")
            if let link = item.link {
                lines.append("  \(String(repeating: " ", count: 16))  \(style.paint(TerminalText.safe(link), .dim))")
            }
            if !item.tags.isEmpty {
                lines.append("  \(String(repeating: " ", count: 16))  \(style.paint("# " + item.tags.map { TerminalText.safe($0) }.joined(separator: ", "), .dim))")
            }
            for enclosure in item.enclosures {
                if let file = enclosure.file {
                    lines.append("  \(String(repeating: " ", count: 16))  ↓ \(TerminalText.safe(file))")
                }
            }
        }
        return lines
    }

    /// `fetchrun test-source`: a watched selection's text as it is compared, or every item.
    package func lines(forTest source: String, type: String, items: [Item], watched: Bool, notes: [String]) -> [String] {
        var lines: [String] = []
        if watched, let item = items.first {
            lines.append(style.paint("\(source) (\(type)): the selection as it is compared", .dim))
            lines += (item.summary ?? "").split(separator: "\n", omittingEmptySubsequences: false).map { "  " + TerminalText.safe(String($0)) }
        } else {
            lines.append(style.paint("\(source) (\(type)): \(items.count) item\(items.count == 1 ? "" : "s")", .dim))
            for item in items {
                let date = (item.published ?? item.updated).map(Self.timestamp) ?? String(repeating: " ", count: 16)
                lines.append("  \(style.paint(date, .dim))  \(TerminalText.safe(item.title))")
                if let link = item.link { lines.append("  \(String(repeating: " ", count: 16))  \(style.paint(TerminalText.safe(link), .dim))") }
                if item.id != item.link { lines.append("  \(String(repeating: " ", count: 16))  \(style.paint("id " + TerminalText.safe(item.id), .dim))") }
            }
        }
        for note in notes { lines.append(style.paint("! " + TerminalText.safe(note), .yellow)) }
        return lines
    }

    /// `fetchrun probe`: status, size, time and format, then every item in document order.
    package func lines(forProbe feed: Feed, response: HTTPResponse, location: String) -> [String] {
        let status = response.status == 0 ? "file" : "HTTP \(response.status)"
        var lines = [style.paint(TerminalText.safe(location), .bold)]
        lines.append(style.paint("\(status), \(response.body.count) bytes in \(Self.seconds(response.duration)), \(feed.format.rawValue), \(feed.items.count) item\(feed.items.count == 1 ? "" : "s")" + (feed.title.map { ": \(TerminalText.safe($0))" } ?? ""), .dim))
        for item in feed.items {
            let date = (item.published ?? item.updated).map(Self.timestamp) ?? String(repeating: " ", count: 16)
            lines.append("  \(style.paint(date, .dim))  \(TerminalText.safe(item.title))")
            if let link = item.link { lines.append("  \(String(repeating: " ", count: 16))  \(style.paint(TerminalText.safe(link), .dim))") }
        }
        for warning in feed.warnings { lines.append(style.paint("! " + TerminalText.safe(warning), .yellow)) }
        return lines
    }

    /// `fetchrun probe` of a web page or a JSON document: what it is, the feeds a page links
    /// to, the source suggested for it (YAML lines), and a preview of what that source watches.
    package func lines(forProbe reading: SourceSuggestion.Reading, response: HTTPResponse, location: String, suggested: [String]) -> [String] {
        let status = response.status == 0 ? "file" : "HTTP \(response.status)"
        var lines = [style.paint(TerminalText.safe(location), .bold)]
        let size = "\(status), \(response.body.count) bytes in \(Self.seconds(response.duration))"
        var preview: (heading: String, lines: [String]) = ("", [])
        switch reading {
        case .feed:
            return lines
        case .page(let page):
            lines.append(style.paint(size + ", a web page" + (page.title.map { ": " + TerminalText.safe($0) } ?? ""), .dim))
            if !page.feeds.isEmpty {
                lines.append("it links to \(page.feeds.count) feed\(page.feeds.count == 1 ? "" : "s") (a feed is the better source):")
                for feed in page.feeds {
                    lines.append("  \(TerminalText.safe(feed.url))" + style.paint("  \(feed.type)" + (feed.title.map { ": " + TerminalText.safe($0) } ?? ""), .dim))
                }
            } else {
                let textLines = page.text.split(separator: "\n").map(String.init)
                preview = (page.css.map { "the text of its main content (\($0))" } ?? "no main content stood out; the text of the whole page", textLines)
            }
        case .json(let document):
            if let each = document.items.first?.value {
                lines.append(style.paint(size + ", a JSON document: \(document.entries) entr\(document.entries == 1 ? "y" : "ies") at \(each)", .dim))
                preview = ("the entries' \(document.previewKey ?? "id")", document.preview)
            } else {
                lines.append(style.paint(size + ", a JSON document with no array of entries", .dim))
                preview = ("the document", document.preview)
            }
        }
        lines.append("suggested source:")
        lines += suggested.map { TerminalText.safe($0) }
        if !preview.lines.isEmpty {
            let shown = preview.lines.prefix(20)
            lines.append(preview.heading + (shown.count < preview.lines.count ? " (the first \(shown.count) lines):" : ":"))
            lines += shown.map { "  " + TerminalText.safe($0) }
        }
        return lines
    }

    private func outcome(_ outcome: SourceOutcome) -> String {
        let padded = outcome.name.column(7)
        switch outcome {
        case .newData: return style.paint(padded, .green)
        case .noData: return style.paint(padded, .dim)
        case .failed: return style.paint(padded, .red)
        }
    }


    /// Shorter waits for a host's slot are not worth a word on the line (JSON has them all).
    static let queueWaitShown: Duration = .milliseconds(100)

    /// `1.25s`: to the hundredth, rounded half away from zero. Counted in integers — a run's
    /// report writes one per source, and `String(format:)` costs more than the rest of the line.
    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        // Beyond any real duration, where hundredths would not fit in an Int64.
        guard whole.magnitude < 1 << 50 else { return "\(whole)s" }
        let half: Int64 = attoseconds < 0 ? -5_000_000_000_000_000 : 5_000_000_000_000_000
        let hundredths = whole * 100 + (attoseconds + half) / 10_000_000_000_000_000
        let fraction = hundredths.magnitude % 100
        return "\(hundredths < 0 ? "-" : "")\(hundredths.magnitude / 100).\(fraction < 10 ? "0" : "")\(fraction)s"
    }

    /// Local time, to the minute: what someone reading a terminal wants. One style, built once:
    /// `show` formats a date per item, and a DateFormatter per call costs more than the rest.
    package static func timestamp(_ date: Date) -> String {
        date.formatted(minuteStyle)
    }

    private static let minuteStyle = Date.VerbatimFormatStyle(
        format: "\(year: .defaultDigits)-\(month: .twoDigits)-\(day: .twoDigits) \(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits)",
        timeZone: .current, calendar: Calendar(identifier: .gregorian)
    )
}
