import Foundation
import Testing
@testable import FetchRunKit

/// `ignore:` presets take whole tokens only; user patterns see lines; a runaway pattern stops
/// at its budget.
@Suite struct UserPatternTests {
    /// Realistic lines, and what each preset leaves of them (the README shows the same table).
    static let presetTable: [(line: String, dates: String, times: String, numbers: String)] = [
        ("Updated 2026-03-05 10:32", "Updated", "Updated 2026-03-05", "Updated 2026-03-05 10:32"),
        ("Last run 2026-03-05T10:32:07Z", "Last run", "Last run 2026-03-05T", "Last run 2026-03-05T10:32:07Z"),
        ("Meeting at 9:30 PM UTC", "Meeting at 9:30 PM UTC", "Meeting at", "Meeting at 9:30 PM UTC"),
        ("Posted 05.03.2026 by Ana", "Posted by Ana", "Posted 05.03.2026 by Ana", "Posted 05.03.2026 by Ana"),
        ("Posted Mar 5, 2026 · 5 March 2026", "Posted ·", "Posted Mar 5, 2026 · 5 March 2026", "Posted Mar , · March"),
        ("Price € 1.299,00 (was 1,499.00)", "Price € 1.299,00 (was 1,499.00)", "Price € 1.299,00 (was 1,499.00)", "Price € (was )"),
        ("42 viewers, -3 since 10'000", "42 viewers, -3 since 10'000", "42 viewers, -3 since 10'000", "viewers, since"),
        ("http://127.0.0.1:18777/n/1 at 10:30", "http://127.0.0.1:18777/n/1 at 10:30", "http://127.0.0.1:18777/n/1 at", "http://127.0.0.1:18777/n/1 at 10:30"),
        ("see https://example.org/2026-03-05/report?id=12", "see https://example.org/2026-03-05/report?id=12", "see https://example.org/2026-03-05/report?id=12", "see https://example.org/2026-03-05/report?id=12"),
        ("Server 10.0.0.1:8080 answered", "Server 10.0.0.1:8080 answered", "Server 10.0.0.1:8080 answered", "Server 10.0.0.1:8080 answered"),
        ("Release 1.2.3 of v2.10.4", "Release 1.2.3 of v2.10.4", "Release 1.2.3 of v2.10.4", "Release 1.2.3 of v2.10.4"),
        ("Mail ops42@example.com or db.example.com:5432", "Mail ops42@example.com or db.example.com:5432", "Mail ops42@example.com or db.example.com:5432", "Mail ops42@example.com or db.example.com:5432"),
        ("Build 20260305123456 took 12:30", "Build 20260305123456 took 12:30", "Build 20260305123456 took", "Build took 12:30"),
        ("Order A1234 and ticket #5678", "Order A1234 and ticket #5678", "Order A1234 and ticket #5678", "Order A1234 and ticket #"),
        ("在庫 12 点 · 更新 10:45", "在庫 12 点 · 更新 10:45", "在庫 12 点 · 更新", "在庫 点 · 更新 10:45"),
    ]

    @Test func presetsTakeWholeTokensOnly() throws {
        for (line, dates, times, numbers) in Self.presetTable {
            for (preset, expected) in [("dates", dates), ("times", times), ("numbers", numbers)] {
                let tracker = ChangeTracker(ignore: [try #require(UserPattern(preset: preset))])
                #expect(try tracker.normalizedLines(of: line) == (expected.isEmpty ? [] : [expected]), "\(preset) on '\(line)'")
            }
        }
    }

    @Test func patternsAnchorAtEveryLine() throws {
        let tracker = ChangeTracker(ignore: [try UserPattern("^Updated.*$"), try UserPattern("\\(\\d+ views\\)$")])
        #expect(try tracker.normalizedLines(of: "Price 5\nUpdated 10:32\nNot Updated\nStory (12 views)") == ["Price 5", "Not Updated", "Story"])
        // include/exclude see the lines of a field too.
        let filter = ItemFilter(exclude: [try .init(field: "summary", pattern: "^Sponsored")])
        #expect(try !filter.passes(Item(id: "1", title: "t", summary: "A story\nSponsored by X")))
        #expect(try filter.passes(Item(id: "2", title: "t", summary: "A story\nNot Sponsored")))
    }

    @Test func aRunawayPatternStopsWhenItsBudgetIsSpent() throws {
        let runaway = try UserPattern("(a+)+$")
        let text = String(repeating: "a", count: 64) + "!"
        let start = ContinuousClock.now
        #expect(throws: UserPattern.Stopped.self) {
            _ = try runaway.removingMatches(from: text, budget: .init(deadline: .now + .milliseconds(200)))
        }
        #expect(throws: UserPattern.Stopped.self) {
            _ = try runaway.matches(text, budget: .init(deadline: .now + .milliseconds(200)))
        }
        // Unbounded, this match would outlive the test run by years: both stopped near their
        // deadline (a loaded machine gets a wide margin).
        #expect(ContinuousClock.now - start < .seconds(10))
        // A cancellation flag stops it as well.
        let flag = CancellationFlag()
        flag.cancel()
        #expect(throws: UserPattern.Stopped.self) { _ = try runaway.matches(text, budget: .init(cancellation: flag)) }
    }

    @Test func aRunawayFilterFailsItsSourceAtTheDeadline() async throws {
        let filter = ItemFilter(include: [try .init(field: "title", pattern: "(x+x+)+y")])
        let items = [Item(id: "1", title: String(repeating: "x", count: 40))]
        await #expect(throws: UserPattern.Stopped.self) {
            _ = try await filter.passing(items, until: .now + .milliseconds(200), on: SystemClock())
        }
    }
}
