import FetchRunKit

/// A recorded unified diff as the dashboard shows it: line by line with additions and removals
/// marked (inline), or removals beside the additions that replaced them (side by side).
/// Only the lines' kinds are read from the diff; their text is shown as it is, escaped.
struct DiffView: Sendable {
    typealias Kind = TextDiff.LineKind
    typealias Line = TextDiff.Line

    /// A row of the side-by-side view: a hunk's header across both sides, or a line before
    /// and after (either may be missing).
    struct Pair: Sendable, Equatable {
        var hunk: String?
        var before: Line?
        var after: Line?
    }

    let lines: [Line]

    init(_ diff: String) {
        lines = TextDiff.lines(of: diff)
    }

    /// The lines side by side: each run of removals is paired, line by line, with the run of
    /// additions after it; context stands on both sides.
    var pairs: [Pair] {
        var pairs: [Pair] = []
        var removed: [Line] = [], added: [Line] = []
        func flush() {
            for index in 0..<max(removed.count, added.count) {
                pairs.append(Pair(before: index < removed.count ? removed[index] : nil, after: index < added.count ? added[index] : nil))
            }
            removed.removeAll()
            added.removeAll()
        }
        for line in lines {
            switch line.kind {
            case .removed:
                if !added.isEmpty { flush() }
                removed.append(line)
            case .added:
                added.append(line)
            case .context:
                flush()
                pairs.append(Pair(before: line, after: line))
            case .hunk, .header:
                flush()
                if line.kind == .hunk { pairs.append(Pair(hunk: line.text)) }
            }
        }
        flush()
        return pairs
    }
}
