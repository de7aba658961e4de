import Foundation
import Testing
import TestSupport
@testable import FetchRunKit

/// What a fetch adds to the history (``ChangeRecorder``), what `history:` says, and how a
/// record is shown: the rules, without a store (the stores' part is in the contract tests).
@Suite struct HistoryRuleTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func report(_ outcome: SourceOutcome, baseline: Bool = false) -> SourceReport {
        SourceReport(name: "s", type: "rss", outcome: outcome, totalItems: 0, duration: .zero, isBaseline: baseline)
    }

    func records(_ report: SourceReport, before: SourceState = SourceState(name: "s"), after: SourceState? = nil, retention: HistoryRetention = .standard) -> [ChangeRecord] {
        ChangeRecorder.records(for: report, before: before, after: after ?? before, retention: retention, at: now)
    }

    @Test func newItemsAreRecordedButNotABaselineOrWithHistoryOff() {
        let title = "Ünïcödé — 速報 👩‍👩‍👧‍👦🏽 שלום עולם e\u{301}"
        let items = [Item(id: "a", title: title, link: "https://example.com/a", summary: String(repeating: "ж", count: 5_000))]
        let found = records(report(.newData(items)))
        #expect(found.map(\.id) == ["s/item/a"])
        #expect(found.first?.title == title)
        // Bounded, between two characters.
        #expect((found.first?.summary?.utf8.count ?? 0) <= ChangeRecorder.maximumSummaryBytes)
        #expect(found.first?.summary?.hasSuffix("…") == true)
        #expect(records(report(.newData(items), baseline: true)).isEmpty)
        #expect(records(report(.newData(items)), retention: .off).isEmpty)
        #expect(records(report(.noData)).isEmpty)
    }

    @Test func onlyWebLinksAreKept() {
        for link in ["javascript:alert(1)", "data:text/html,<script>", "/relative", "JaVaScRiPt:x", "ftp://example.com/f", "http:evil"] {
            #expect(ChangeRecorder.webLink(link) == nil, "\(link)")
        }
        #expect(ChangeRecorder.webLink(" HTTPS://example.com/x ") == "HTTPS://example.com/x")
        let found = records(report(.newData([Item(id: "x", title: "x", link: "javascript:alert(document.cookie)")])))
        #expect(found.first?.link == nil)
    }

    @Test func aChangeKeepsItsDiffWithAnIdOfItsOwnAndANoteWhenCut() {
        var small = Item(id: "change-2", title: "1 299 ₽")
        small.diff = "@@ -1 +1 @@\n-1 399 ₽\n+1 299 ₽"
        var again = small
        again.diff = "@@ -1 +1 @@\n-1 299 ₽\n+1 399 ₽"
        let first = records(report(.newData([small]))), second = records(report(.newData([again])))
        #expect(first.first?.kind == .change && first.first?.diff == small.diff && first.first?.notes == [])
        // The same change number with another diff (numbers start again after a reset) is
        // another record.
        #expect(first.first?.id != second.first?.id)

        var huge = Item(id: "change-3", title: "long")
        huge.diff = (0..<20_000).map { "+line \($0) — строка" }.joined(separator: "\n")
        let cut = try! #require(records(report(.newData([huge]))).first)
        #expect((cut.diff?.utf8.count ?? .max) <= DiffBound.maximumBytes)
        #expect(cut.diff?.hasSuffix("KiB, the first 64 KiB kept") == true)
        #expect(cut.notes.count == 1 && cut.notes[0].hasPrefix("diff cut:"), "\(cut.notes)")
    }

    @Test func failingOnceWhenItStartsAndRecoveredOnceWhenItEnds() {
        let failure = FetchFailure(.httpStatus, "HTTP 500")
        var failing = SourceState(name: "s")
        failing.consecutiveFailures = 1
        failing.failingSince = now
        let first = records(report(.failed(failure)), after: failing)
        #expect(first.map(\.kind) == [.failing] && first.first?.error == "HTTP 500" && first.first?.errorKind == "httpStatus")
        #expect(first.first?.id == "s/failing/\(SourceState.milliseconds(now))")
        var stillFailing = failing
        stillFailing.consecutiveFailures = 2
        #expect(records(report(.failed(failure)), before: failing, after: stillFailing).isEmpty)
        stillFailing.lastError = SourceState.RecordedError(kind: .httpStatus, message: "HTTP 500", at: now)
        let back = records(report(.noData), before: stillFailing, after: SourceState(name: "s"))
        #expect(back.map(\.kind) == [.recovered] && back.first?.title == "recovered after 2 failures")
        #expect(back.first?.id == "s/recovered/\(SourceState.milliseconds(now))")
    }

    @Test func aMoveIsRecordedWhenItIsFirstWorthAHint() {
        var before = SourceState(name: "s"), after = SourceState(name: "s")
        before.movedTo = "https://new.example/feed"
        before.movedCount = SourceState.movedHintAfter - 1
        after.movedTo = before.movedTo
        after.movedCount = SourceState.movedHintAfter
        let moved = records(report(.noData), before: before, after: after)
        #expect(moved.map(\.kind) == [.moved] && moved.first?.movedTo == "https://new.example/feed")
        var later = after
        later.movedCount += 1
        #expect(records(report(.noData), before: after, after: later).isEmpty)
    }

    @Test func aStoredRecordReadsBackAndARowThatIsNotOneThrows() throws {
        var record = ChangeRecord(id: "s/item/a", source: "s", kind: .item, at: now)
        record.title = "\"quoted\" \\ and \u{0} NUL, 🚀"
        record.notes = ["a note"]
        #expect(try ChangeRecord(json: record.json) == record)
        for broken in ["", "[]", "{\"id\":\"x\"}", "{\"id\":\"x\",\"source\":\"s\",\"kind\":\"item\",\"at\":\"yesterday\"}", String(repeating: "[", count: 10_000)] {
            #expect(throws: JSONReader.Failure.self) { try ChangeRecord(json: broken) }
        }
    }

    @Test func historyIsOffOrBoundedInDefaultsAndPerSource() throws {
        let config = try ConfigLoader(environment: [:]).load(text: """
            defaults: { history: { keep: 50, max_age: 7d } }
            sources:
              - { name: a, type: traffic }
              - { name: b, type: traffic, history: off }
              - { name: c, type: traffic, history: { keep: 5 } }
            """, file: "sources.yaml", directory: "/")
        let settings = Dictionary(uniqueKeysWithValues: config.sources.map { ($0.name, $0.settings.history) })
        #expect(settings["a"] == HistoryRetention(isEnabled: true, keep: 50, maxAge: .seconds(7 * 86_400)))
        #expect(settings["b"]?.isEnabled == false)
        #expect(settings["c"] == HistoryRetention(isEnabled: true, keep: 5, maxAge: .seconds(7 * 86_400)))
        #expect(try ConfigLoader(environment: [:]).load(text: "sources:\n  - { name: a, type: traffic }\n", file: "s.yaml", directory: "/").sources[0].settings.history == .standard)

        for (yaml, problem) in [
            ("history: forever", "'history' must be off, or a mapping"),
            ("history: { keep: 0 }", "keep"),
            ("history: { max_age: soon }", "max_age"),
            ("history: { keep: 5, kept: 6 }", "kept"),
        ] {
            do {
                _ = try ConfigLoader(environment: [:]).load(text: "sources:\n  - { name: a, type: traffic, \(yaml) }\n", file: "sources.yaml", directory: "/")
                Issue.record("\(yaml) was accepted")
            } catch {
                #expect("\(error)".contains(problem) && "\(error)".contains("sources.yaml:2"), "\(error)")
            }
        }
    }

    @Test func aSourcesOlderRecordsArePrunedAtItsFirstWriteThenEveryTenthOfKeep() {
        var keep = HistoryKeep()
        var pruned: [Bool] = []
        for _ in 0..<101 { pruned.append(keep.wrote(1, for: "a", keep: 1000)) }
        // The first write, then the 100th after it.
        #expect(pruned.indices.filter { pruned[$0] } == [0, 100])
        // Each source counts for itself; a small keep prunes at every write.
        let first = keep.wrote(5, for: "b", keep: 1000)
        let small = [keep.wrote(1, for: "c", keep: 3), keep.wrote(1, for: "c", keep: 3)]
        let many = [keep.wrote(99, for: "a", keep: 1000), keep.wrote(1, for: "a", keep: 1000)]
        #expect(first && small == [true, true] && many == [false, true])
    }

    @Test func expiredRecordsArePrunedAtTheFirstCommitThenHourly() {
        let clock = TestClock()
        let pruning = HistoryPruning()
        let start = clock.now
        #expect(pruning.claim(at: start))
        #expect(!pruning.claim(at: start))
        clock.advance(by: HistoryPruning.interval - .seconds(1))
        #expect(!pruning.claim(at: clock.now))
        clock.advance(by: .seconds(1))
        #expect(pruning.claim(at: clock.now))
        #expect(!pruning.claim(at: clock.now))
    }

    @Test func theTerminalSeesSafeTextAndAColouredDiff() {
        var record = ChangeRecord(id: "p/change/1", source: "p\u{1B}[2J", kind: .change, at: now)
        record.title = "evil\u{1B}]0;owned\u{07} title"
        record.diff = "@@ -1 +1 @@\n-old\n+new \u{1B}[31mred"
        let plain = HistoryReport(style: TerminalStyle(colored: false)).lines(for: [record]).joined(separator: "\n")
        #expect(!plain.contains("\u{1B}"), "\(plain)")
        #expect(plain.contains("-old") && plain.contains("+new"))
        let colored = HistoryReport(style: TerminalStyle(colored: true)).lines(for: [record]).joined(separator: "\n")
        #expect(colored.contains("\u{1B}[32m+new") && colored.contains("\u{1B}[31m-old"))
        let json = String(decoding: HistoryReport.jsonLines(for: [record]), as: UTF8.self)
        #expect(json.hasPrefix("{\"event\":\"change\",\"id\":\"p/change/1\"") && json.hasSuffix("}\n"))
    }
}
