import Foundation

/// Download events and the queue as text lines, NDJSON `download` events, and a live
/// progress board.
package struct DownloadReport: Sendable {
    package var style: TerminalStyle

    /// Lines coloured with ANSI escapes when `colored`.
    public init(colored: Bool = false) {
        self.init(style: TerminalStyle(colored: colored))
    }

    package init(style: TerminalStyle) {
        self.style = style
    }

    // MARK: Text

    /// The line an event leaves in the output, if any (progress has none: it is drawn live).
    public func line(for event: DownloadEvent) -> String? {
        switch event {
        case .done(let entry):
            return "\(style.paint("downloaded", .green)) \(entry.file ?? entry.partName)  \(ByteSizeText.format(entry.size ?? entry.received))  \(style.paint(entry.source, .dim))"
        case .failed(let entry):
            let retry = entry.retryable && entry.attempts < Downloader.maxAttempts ? " (tried again at the next run)" : ""
            return "\(style.paint("download failed", .red)) \(TerminalText.safe(entry.url)): \(TerminalText.safe(entry.failure ?? "unknown reason"))\(retry)"
        case .removed(let entry):
            return style.paint("removed \(entry.file ?? entry.partName) (keep)", .dim)
        case .queued, .started, .progress:
            return nil
        }
    }

    /// After a run: how many files, how many bytes, how many failed.
    public func summary(_ tally: DownloadTally, duration: Duration) -> String {
        var text = "downloads: \(tally.done) done (\(ByteSizeText.format(tally.bytes)))"
        if tally.failed > 0 { text += ", \(style.paint("\(tally.failed) failed", .red))" }
        return text + ", in \(TextReport.seconds(duration))"
    }

    /// `fetchrun downloads`: one line per entry, queue order. `partSize` gives the bytes on
    /// disk of a download in progress; `transferRunning` whether a process is on them (else
    /// one left `downloading` is shown as stopped).
    public func lines(forQueue entries: [DownloadEntry], transferRunning: Bool, partSize: (DownloadEntry) -> Int64) -> [String] {
        entries.map { entry in
            let state: String
            var detail: String
            switch entry.state {
            case .done:
                state = style.paint("done", .green)
                detail = "\(ByteSizeText.format(entry.size ?? entry.received))  \(entry.file ?? "")"
            case .queued, .downloading:
                let bytes = partSize(entry)
                let percent = entry.size.flatMap { $0 > 0 ? Int(bytes * 100 / $0) : nil }
                if entry.state == .downloading && transferRunning {
                    state = style.paint(percent.map { "\($0)%".leftPadded(4) } ?? "…", .yellow)
                } else {
                    state = bytes > 0 ? "stopped" + (percent.map { " \($0)%" } ?? "") : "queued"
                }
                detail = bytes > 0 ? "\(ByteSizeText.format(bytes))" + (entry.size.map { " of \(ByteSizeText.format($0))" } ?? "") + "  \(entry.partPath)" : entry.url
            case .failed:
                state = style.paint("failed", .red)
                detail = "\(entry.url): \(entry.failure ?? "")"
            case .removed:
                state = style.paint("removed", .dim)
                detail = entry.file ?? entry.partName
            }
            return "\(state.column(max(state.count, style.colored ? 20 : 11)))  \(style.paint(entry.source, .bold))  \(detail)"
        }
    }

    // MARK: Live board

    /// A bar per running download and a total line, in columns, `width` columns at most.
    public func board(_ progress: [DownloadProgress], width: Int) -> [String] {
        guard !progress.isEmpty else { return [] }
        var rows = progress.map { (name: $0.name, received: $0.received, size: $0.size, rate: $0.bytesPerSecond) }
        if progress.count > 1 {
            let sized = progress.allSatisfy { $0.size != nil }
            rows.append((
                // Sizes are what servers announced: summed without trapping on absurd ones.
                name: "total (\(progress.count))", received: progress.reduce(0) { Self.saturatingSum($0, $1.received) },
                size: sized ? progress.reduce(0) { Self.saturatingSum($0, $1.size ?? 0) } : nil,
                rate: progress.reduce(0) { $0 + $1.bytesPerSecond }
            ))
        }
        // A narrower bar on narrow terminals; then bar + percent, amounts, rate, ETA and the gaps.
        let barWidth = width >= 100 ? 20 : 10
        let fixed = 2 + 2 + (barWidth + 7) + 2 + 21 + 2 + 11 + 2 + 9
        let nameWidth = max(8, min(rows.map(\.name.count).max() ?? 8, width - 1 - fixed))
        return rows.map { row in
            let percent = row.size.flatMap { $0 > 0 ? min(100, Int(row.received * 100 / $0)) : nil }
            let filled = (percent ?? 0) * barWidth / 100
            let bar = percent == nil
                ? "[" + String(repeating: "?", count: barWidth) + "]     "
                : "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "] " + "\(percent!)%".leftPadded(4)
            let amounts = "\(ByteSizeText.format(row.received))\(row.size.map { " / \(ByteSizeText.format($0))" } ?? "")"
            let rate = "\(ByteSizeText.format(Int64(row.rate)))/s"
            let eta = row.size.flatMap { size in row.rate > 0 ? "ETA " + Self.clock(Double(max(0, size - row.received)) / row.rate) : nil } ?? ""
            let name = row.name.count > nameWidth ? String(row.name.prefix(nameWidth - 1)) + "…" : row.name.column(nameWidth)
            let line = "  \(name)  \(bar)  \(amounts.leftPadded(21))  \(rate.leftPadded(11))  \(eta)"
            return String(line.prefix(max(20, width - 1)))
        }
    }

    static func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }

    /// `42s`, `3m05s`, `1h02m`.
    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m" + String(format: "%02ds", total % 60) }
        return "\(total / 3600)h" + String(format: "%02dm", total % 3600 / 60)
    }

    // MARK: NDJSON

    /// The `download` event for an event, if it has one (`progress` gives one per download).
    public static func jsonLines(for event: DownloadEvent) -> [String] {
        switch event {
        case .queued(let entry): return [json(entry, state: "queued")]
        case .started(let entry, let offset): return [json(entry, state: "started") { $0.field("resume_from", offset) }]
        case .done(let entry): return [json(entry, state: "done")]
        case .failed(let entry): return [json(entry, state: "failed")]
        case .removed(let entry): return [json(entry, state: "removed")]
        case .progress(let list):
            return list.map { progress in
                JSONEvents.event("download") { json in
                    json.field("state", "progress")
                    json.field("source", progress.source)
                    json.field("url", progress.url)
                    json.field("name", progress.name)
                    json.field("bytes", progress.received)
                    json.field("size", progress.size)
                    json.field("percent", progress.percent)
                    json.field("bytes_per_second", Int64(progress.bytesPerSecond))
                }
            }
        }
    }

    /// `fetchrun downloads --format json`: the entry as it stands.
    public static func jsonLine(forQueued entry: DownloadEntry, partSize: Int64) -> String {
        json(entry, state: entry.state.rawValue) { json in
            if entry.state == .queued || entry.state == .downloading {
                json.field("bytes", partSize)
                json.field("percent", entry.size.flatMap { $0 > 0 ? Int(partSize * 100 / $0) : nil })
                // Whether a validator is saved: a stopped download then resumes from its part.
                json.field("resumable", entry.validator != nil)
            }
        }
    }

    private static func json(_ entry: DownloadEntry, state: String, extra: (inout JSONWriter) -> Void = { _ in }) -> String {
        JSONEvents.event("download") { json in
            json.field("state", state)
            json.field("source", entry.source)
            json.field("item", entry.itemID)
            json.field("url", entry.url)
            json.field("name", entry.suggestedName ?? entry.partName)
            json.field("file", entry.file)
            if entry.state == .done { json.field("bytes", entry.received) }
            json.field("size", entry.size)
            json.field("reason", entry.failure)
            if entry.state == .failed { json.field("retry", entry.retryable && entry.attempts < Downloader.maxAttempts) }
            extra(&json)
        }
    }
}
