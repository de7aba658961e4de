import Foundation

/// `fetchrun history`: what sources reported, newest first — as text (a diff coloured on a
/// terminal) or NDJSON, one `change` object per record.
package struct HistoryReport: Sendable {
    package var style: TerminalStyle

    package init(style: TerminalStyle) {
        self.style = style
    }

    /// A heading line per record (time, source, kind, title), then its link, its summary's first
    /// line, its error or its diff, and its screenshot's file, indented. Everything from a
    /// source is made safe for a terminal first.
    package func lines(for records: [ChangeRecord]) -> [String] {
        var lines: [String] = []
        for record in records {
            let kind: String
            switch record.kind {
            case .item: kind = style.paint("item", .green)
            case .change: kind = style.paint("change", .yellow)
            case .failing: kind = style.paint("failing", .red)
            case .recovered: kind = style.paint("recovered", .green)
            case .moved: kind = style.paint("moved", .yellow)
            }
            let title = record.title.map { "  " + TerminalText.safe($0) } ?? ""
            lines.append("\(TextReport.timestamp(record.at))  \(TerminalText.safe(record.source))  \(kind)\(title)")
            if let link = record.link { lines.append("    " + style.paint(TerminalText.safe(link), .dim)) }
            if let error = record.error, record.kind == .failing { lines.append("    " + TerminalText.safe(error)) }
            if let diff = record.diff {
                lines += diffLines(diff).map { "    " + $0 }
            } else if let summary = record.summary, let first = summary.split(whereSeparator: \.isNewline).first {
                lines.append("    " + TerminalText.safe(String(first), maximumLength: 200))
            }
            for note in record.notes { lines.append("    (" + TerminalText.safe(note) + ")") }
            if let screenshot = record.screenshot {
                lines.append("    " + style.paint("screenshot: screenshots/" + TerminalText.safe(screenshot) + " in the state folder", .dim))
            }
        }
        return lines
    }

    /// A unified diff's lines, additions green and removals red; hunk headers dimmed.
    private func diffLines(_ diff: String) -> [String] {
        diff.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            let text = TerminalText.safe(String(line), maximumLength: 1_000)
            if line.hasPrefix("@@") { return style.paint(text, .dim) }
            if line.hasPrefix("+") { return style.paint(text, .green) }
            if line.hasPrefix("-") { return style.paint(text, .red) }
            return text
        }
    }

    /// One NDJSON line per record: `{"event":"change","id":…,"source":…,"kind":…,"at":…}`.
    package static func jsonLines(for records: [ChangeRecord]) -> [UInt8] {
        var json = JSONWriter(capacity: 512 * records.count)
        for record in records {
            record.writeObject(into: &json, event: "change")
            json.endLine()
        }
        return json.bytes
    }
}
