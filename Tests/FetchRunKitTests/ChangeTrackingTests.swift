import Foundation
import Testing
@testable import FetchRunKit

/// The unified diff and what a watched selection counts as a change.
@Suite struct ChangeTrackingTests {
    /// The old and new texts an edit script stands for, rebuilt from it.
    func sides(_ script: [TextDiff.Operation]) -> (old: [String], new: [String]) {
        var old: [String] = [], new: [String] = []
        for operation in script {
            switch operation {
            case .same(let line): old.append(line); new.append(line)
            case .removed(let line): old.append(line)
            case .added(let line): new.append(line)
            }
        }
        return (old, new)
    }

    @Test func aUnifiedDiffHasThreeLinesOfContextAndDiffsLineNumbers() throws {
        let old = (1...20).map { "line \($0)" }
        var new = old
        new[4] = "line five"
        new.insert("inserted", at: 15)
        let diff = try #require(TextDiff.unified(from: old, to: new))
        #expect(diff == """
            @@ -2,7 +2,7 @@
             line 2
             line 3
             line 4
            -line 5
            +line five
             line 6
             line 7
             line 8
            @@ -13,6 +13,7 @@
             line 13
             line 14
             line 15
            +inserted
             line 16
             line 17
             line 18
            """)
        #expect(TextDiff.unified(from: old, to: old) == nil)
        // An empty side is named by the line before it, as diff -u does.
        #expect(TextDiff.unified(from: [], to: ["a"]) == "@@ -0,0 +1 @@\n+a")
        #expect(TextDiff.unified(from: ["a", "b"], to: ["a"]) == "@@ -1,2 +1 @@\n a\n-b")
    }

    @Test func theEditScriptIsShortestAndRebuildsBothSides() {
        let old = "a b c a b b a".split(separator: " ").map(String.init)
        let new = "c b a b a c".split(separator: " ").map(String.init)
        let script = TextDiff.operations(from: old, to: new)
        #expect(sides(script).old == old && sides(script).new == new)
        // Myers' own example: five edits is the least.
        #expect(script.filter { if case .same = $0 { false } else { true } }.count == 5)
    }

    @Test func aHostileNumberOfEditsGivesAWholeReplacementNotAStall() {
        // 5,000 lines each different on both sides: far past the edit limit.
        let old = (0..<5_000).map { "old \($0)" }, new = (0..<5_000).map { "new \($0)" }
        let script = TextDiff.operations(from: old, to: new)
        #expect(sides(script).old == old && sides(script).new == new)
        #expect(script.count == 10_000)
    }

    func observe(_ tracker: ChangeTracker, _ texts: [String]) throws -> [ChangeTracker.Observation] {
        var state: JSONValue?
        var items: [Item] = []
        var seen: [ChangeTracker.Observation] = []
        for text in texts {
            let observation = try tracker.observe(text, previousState: state, previousItems: items, link: "https://example.test/", at: Date())
            state = observation.state
            if let item = observation.item, !items.contains(item) { items.insert(item, at: 0) }
            seen.append(observation)
        }
        return seen
    }

    @Test func whitespaceAndIgnoredPartsNeverMakeAChangeOnTheirOwn() throws {
        let tracker = ChangeTracker(ignore: [try ChangeTracker.ignorePattern("dates"), try ChangeTracker.ignorePattern("times"), try ChangeTracker.ignorePattern(#"\(\d+ views\)"#)])
        let seen = try observe(tracker, [
            "Price: 19.99 EUR\nUpdated 2026-11-24T10:00:00Z (12 views)",
            "  Price:\u{00A0}19.99\u{2003}EUR  \n\n\tUpdated 2026-11-25T11:30:00Z (13 views)\n",
            "Price: 17.99 EUR\nUpdated 2026-11-25 (14 views)",
        ])
        #expect(seen.map { $0.item?.id } == ["change-1", "change-1", "change-2"])
        let change = try #require(seen[2].item)
        #expect(change.title == "Price: 17.99 EUR")
        #expect(change.diff == "@@ -1,2 +1,2 @@\n-Price: 19.99 EUR\n+Price: 17.99 EUR\n Updated")
        #expect(change.summary == "Price: 17.99 EUR\nUpdated")
        #expect(seen[0].item?.diff == nil)
    }

    @Test func sortedListsIgnoreOrderAndOnlyAdditionsCanBeReported() throws {
        let tracker = ChangeTracker(sorted: true, reportsOnlyAdditions: true)
        let seen = try observe(tracker, ["b\na\nc", "c\nb\na", "a\nb", "a\nb\nd", "a\nb\nd"])
        // A reorder is nothing; a removal is recorded but not reported; the addition after it
        // is diffed against the list as it was after the removal.
        #expect(seen.map { $0.item?.id } == ["change-1", "change-1", "change-1", "change-2", "change-2"])
        #expect(seen[3].item?.diff == "@@ -1,2 +1,3 @@\n a\n b\n+d")
        #expect(seen[3].item?.title == "d")
    }

    @Test func aValueThatChangesBackIsStillAChange() throws {
        let seen = try observe(ChangeTracker(), ["open", "closed", "open"])
        #expect(seen.map { $0.item?.id } == ["change-1", "change-2", "change-3"])
        #expect(seen[2].item?.title == "open")
        let removal = try observe(ChangeTracker(), ["a\nb", "a"])
        #expect(removal[1].item?.title == "removed: b")
    }

    @Test func aStateFromTheFolderThatIsNotOursIsNothingSeenYet() throws {
        for hostile: JSONValue in [
            .string("x"), .object(["text": .number(1), "change": .number(2)]),
            .object(["text": .string("a"), "change": .number(-1)]), .object(["text": .string("a"), "change": .number(1e300)]),
            .object(["text": .string("a"), "change": .number(.infinity)]), .object(["text": .string("a"), "change": .number(2.5)]),
        ] {
            let observation = try ChangeTracker().observe("a", previousState: hostile, previousItems: [], link: nil, at: Date())
            #expect(observation.item?.id == "change-1", "\(hostile)")
        }
    }

    @Test func badIgnorePatternsSayWhy() throws {
        #expect(throws: ValueError.self) { try ChangeTracker.ignorePattern("(unclosed") }
        // Swift's Regex has no lookbehind: refused when the config loads, not at a fetch.
        // ICU's syntax: lookbehind is fine.
        #expect(throws: Never.self) { try ChangeTracker.ignorePattern("(?<=x)y") }
        #expect(try ChangeTracker.ignorePattern("numbers") == UserPattern(preset: "numbers"))
    }

    @Test func aSelectionPastItsLimitIsCutAndSaysSo() throws {
        let line = String(repeating: "x", count: 1000)
        let text = Array(repeating: line, count: 2_000).enumerated().map { "\($0.offset) \($0.element)" }.joined(separator: "\n")
        let observation = try ChangeTracker().observe(text, previousState: nil, previousItems: [], link: nil, at: Date())
        let note = try #require(observation.note)
        #expect(note.contains("longer than 1024 KiB"))
        guard case .object(let state) = observation.state, case .string(let kept)? = state["text"] else { Issue.record("no text kept"); return }
        #expect(kept.utf8.count <= ChangeTracker.maximumTextBytes)
        #expect((observation.item?.summary?.utf8.count ?? .max) <= ItemLimits.standard.summary)
    }

    @Test func aFirstLineLongerThanTheLimitIsCutInsideAndItsChangesStillSeen() throws {
        // One paragraph of 1.5 MiB, in a script of three bytes a character.
        let long = String(repeating: "漢字かな", count: 1_572_864 / 12)
        let first = try ChangeTracker().observe(long, previousState: nil, previousItems: [], link: nil, at: Date())
        #expect(first.note?.contains("cut inside line 1") == true, "\(first.note ?? "no note")")
        guard case .object(let state) = first.state, case .string(let kept)? = state["text"] else { Issue.record("no text kept"); return }
        #expect(kept.utf8.count <= ChangeTracker.maximumTextBytes && kept.utf8.count > ChangeTracker.maximumTextBytes - 16)
        #expect(long.hasPrefix(kept))
        // A change in the first MiB is a change; one past it is not seen, as the note said.
        var edited = long
        edited.replaceSubrange(edited.index(edited.startIndex, offsetBy: 1000)..<edited.index(edited.startIndex, offsetBy: 1001), with: "X")
        let changed = try ChangeTracker().observe(edited, previousState: first.state, previousItems: first.item.map { [$0] } ?? [], link: nil, at: Date())
        #expect(changed.item?.id == "change-2")
        let unchanged = try ChangeTracker().observe(long + "tail", previousState: first.state, previousItems: first.item.map { [$0] } ?? [], link: nil, at: Date())
        #expect(unchanged.item?.id == "change-1")
    }
}
