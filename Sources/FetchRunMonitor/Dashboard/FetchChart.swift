import FetchRunKit
import Foundation

/// A source's last fetches as the bars of a small SVG: one bar per fetch, oldest on the left,
/// its height the fetch's duration (on a square-root scale, so that one slow fetch does not
/// flatten the rest), its class its outcome. Numbers only: the template draws them.
struct FetchChart: Sendable, Equatable {
    struct Bar: Sendable, Equatable {
        var x: Int
        var y: Int
        var height: Int
        var outcome: String
        /// "2026-11-29 12:00:00 UTC: noData in 120 ms"
        var label: String
    }

    static let barWidth = 10
    static let gap = 2
    static let height = 48

    let bars: [Bar]
    let width: Int
    /// One line for screen readers and the caption.
    let summary: String

    /// `nil` when nothing was fetched yet.
    init?(_ fetches: [SourceState.RecentFetch]) {
        guard !fetches.isEmpty else { return nil }
        let longest = Double(fetches.map(\.milliseconds).max() ?? 1)
        let usable = Double(Self.height - 2)
        bars = fetches.enumerated().map { index, fetch in
            let share = longest > 0 ? (Double(fetch.milliseconds) / longest).squareRoot() : 0
            let height = max(2, Int((share * usable).rounded()))
            return Bar(
                x: index * (Self.barWidth + Self.gap), y: Self.height - height, height: height, outcome: fetch.outcomeName,
                label: "\(DashboardText.absolute(fetch.at)): \(fetch.outcomeName) in \(DurationText.format(.milliseconds(fetch.milliseconds)))"
            )
        }
        width = fetches.count * (Self.barWidth + Self.gap) - Self.gap
        let failed = fetches.filter { $0.outcome == 2 }.count
        let sorted = fetches.map(\.milliseconds).sorted()
        let median = sorted[sorted.count / 2]
        summary = "\(fetches.count) fetch\(fetches.count == 1 ? "" : "es"), \(failed) failed, median \(DurationText.format(.milliseconds(median))), longest \(DurationText.format(.milliseconds(Int(longest))))"
    }

    /// The template's values.
    var context: [String: Any] {
        [
            "width": width, "height": Self.height, "summary": summary,
            "bars": bars.map { ["x": $0.x, "y": $0.y, "barWidth": Self.barWidth, "barHeight": $0.height, "class": $0.outcome, "label": $0.label] as [String: Any] },
        ]
    }
}
