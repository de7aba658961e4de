import FetchRunKit
import Foundation
import Synchronization
import Testing

/// The fetch pipeline's rules — what is new, what is sent, health, backoff, the next due time —
/// checked the same way over `state.db` and over PostgreSQL. A rule added later gets its test
/// here, once, and both stores must pass it.
@Suite struct PipelineContractTests {
    /// `log` hears of new items; `pager` of a source failing twice in a row, and recovering.
    static func outputs() throws -> [OutputConfig] {
        try configured("""
            outputs:
              - { name: log, type: command, command: [/bin/cat] }
              - { name: pager, type: command, command: [/bin/cat], events: [failures], alert_after: 2 }
            sources:
              - { name: unused, type: traffic }
            """).outputs
    }

    /// A source whose next answer each test sets.
    final class Script: Sendable {
        let next = Mutex<@Sendable (FetchContext) throws -> FetchOutput>({ _ in FetchOutput(items: []) })

        func answer(_ behaviour: @escaping @Sendable (FetchContext) throws -> FetchOutput) {
            next.withLock { $0 = behaviour }
        }

        func items(_ items: [Item]) {
            answer { _ in FetchOutput(items: items) }
        }

        func source(_ name: String = "s", type: String = "scripted", readsSnapshot: Bool = true) -> SourceConfig {
            FetchRunKitContract.source(name, type: type, readsSnapshot: readsSnapshot) { [self] context in try next.withLock { $0 }(context) }
        }
    }

    func outbox(_ stores: Stores) async throws -> [String] {
        try await stores.store.pendingDeliveries().map { "\($0.output) \($0.delivery.id)" }
    }

    /// `notify_when:`: a source's news is sent as its condition becomes true, once; again only
    /// after it was false. Everything found is still recorded; the state keeps the condition.
    @Test(arguments: StoreKind.allCases) func newsIsSentWhenTheConditionBecomesTrueOnce(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            var source = script.source()
            source.routing.notifyWhen = .appears("In stock")
            var sent: [String] = []
            for (round, items) in [
                [item("a", title: "In stock")],                                  // a baseline: sets the state only
                [item("b", title: "Sold out"), item("a", title: "In stock")],     // still there: nothing sent
                [item("c", title: "Sold out")],                                   // gone: false
                [item("d", title: "In stock"), item("c", title: "Sold out")],     // true again: d is sent
                [item("e", title: "In stock, 2 left"), item("d", title: "In stock")], // still true: nothing
            ].enumerated() {
                script.items(items)
                let fetched = await pipeline.fetch(source)
                #expect(fetched.report.outcome.failure == nil, "round \(round)")
                sent = try await outbox(stores)
            }
            #expect(sent == ["log s/d"])
            let state = try await stores.state("s")
            #expect(state.condition == NotifyCondition.State(isMet: true, reference: nil))
            // Recorded whatever the condition said: the items not sent are in the snapshot too.
            let kept = await stores.snapshot("s")?.items.map(\.id) ?? []
            #expect(Set(["b", "c", "d", "e"]).isSubset(of: Set(kept)), "\(kept)")
        }
    }

    /// What the dashboard reads: the last fetches (when, how long, what came of it) and the
    /// last fetch that found something new — a baseline is not a change.
    @Test(arguments: StoreKind.allCases) func theLastFetchesAndTheLastChangeAreRecorded(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline()
            let script = Script()
            let source = script.source()
            script.items([item("a")])
            _ = await pipeline.fetch(source)
            var state = try await stores.state("s")
            #expect(state.lastChange == nil)
            #expect(state.recentFetches.map(\.outcomeName) == ["newData"])
            script.items([item("b"), item("a")])
            _ = await pipeline.fetch(source)
            script.items([item("b"), item("a")])
            _ = await pipeline.fetch(source)
            state = try await stores.state("s")
            #expect(state.recentFetches.map(\.outcomeName) == ["newData", "newData", "noData"])
            let lastChange = try #require(state.lastChange)
            #expect(abs(lastChange.timeIntervalSince(state.recentFetches[1].at)) < 0.01)
            // Stored to the millisecond: each within a second of now.
            #expect(state.recentFetches.allSatisfy { abs($0.at.timeIntervalSinceNow) < 1 + 60 })
        }
    }

    @Test(arguments: StoreKind.allCases) func newItemsAreReportedAndSentAndABaselineIsNot(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            var source = script.source()
            source.reportsUpdates = true

            script.items([item("a")])
            let first = await pipeline.fetch(source)
            #expect(first.report.outcome == .newData([item("a")]) && first.report.isBaseline)
            #expect(first.nextFetch == .seconds(60))
            #expect(try await outbox(stores).isEmpty)
            #expect(await stores.snapshot("s")?.items.map(\.id) == ["a"])

            script.items([item("b"), item("a")])
            let second = await pipeline.fetch(source)
            #expect(second.report.outcome == .newData([item("b")]) && !second.report.isBaseline)
            #expect(second.report.totalItems == 2)
            #expect(try await outbox(stores) == ["log s/b"])

            script.items([item("b"), item("a", title: "Corrected")])
            let third = await pipeline.fetch(source)
            #expect(third.report.outcome == .noData)
            #expect(third.report.updatedItems == [item("a", title: "Corrected")])
            #expect(try await outbox(stores) == ["log s/b"])
            let state = try await stores.state("s")
            #expect(state.health == .ok && state.itemCount == 2 && state.type == "scripted")
            // Nothing new last time: the interval stretched ×1.5.
            #expect(abs((state.nextDue ?? .distantPast).timeIntervalSinceNow - 90) < 5)
        }
    }

    @Test(arguments: StoreKind.allCases) func unchangedAnswersNeedNoSnapshotAndKeepTheirValidators(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline()
            let script = Script()
            let source = script.source(readsSnapshot: false)
            let validators = HTTPValidators(etag: "\"v1\"", lastModified: nil)
            script.answer { _ in FetchOutput(items: [item("a"), item("b")], validators: validators, bodyHash: "h1") }
            _ = await pipeline.fetch(source)

            script.answer { context in
                // What the last fetch left, without its snapshot: a 304 or the same body needs no more.
                #expect(context.validators == validators && context.lastBodyHash == "h1" && context.previous == nil)
                return .unchanged(validators: validators, bodyHash: "h1")
            }
            let unchanged = await pipeline.fetch(source)
            #expect(unchanged.report.outcome == .noData && unchanged.report.totalItems == 2)
            #expect(try await stores.state("s").bodyHash == "h1")

            script.answer { _ in FetchOutput(items: [item("c"), item("a"), item("b")], validators: HTTPValidators(etag: "\"v2\""), bodyHash: "h2") }
            let changed = await pipeline.fetch(source)
            #expect(changed.report.outcome == .newData([item("c")]))
            let state = try await stores.state("s")
            #expect(state.validators?.etag == "\"v2\"" && state.bodyHash == "h2" && state.itemCount == 3)
            #expect(await stores.snapshot("s")?.validators?.etag == "\"v2\"")
        }
    }

    @Test(arguments: StoreKind.allCases) func failuresBackOffAlertOnceAndRecoveryIsSaid(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            let source = script.source()
            script.items([item("a")])
            _ = await pipeline.fetch(source)

            script.answer { _ in throw FetchFailure(.network, "connection refused") }
            var waits: [Duration?] = []
            let started = Date()
            for _ in 0..<3 { waits.append(await pipeline.fetch(source).nextFetch) }
            // 60 s, doubling (no jitter here).
            #expect(waits == [.seconds(60), .seconds(120), .seconds(240)])
            var state = try await stores.state("s")
            #expect(state.consecutiveFailures == 3 && state.health == .failing)
            #expect(state.lastError?.kind == .network && state.lastError?.message == "connection refused")
            #expect(abs((state.failingSince ?? .distantPast).timeIntervalSince(started)) < 5)
            #expect(state.itemCount == 1)
            // One alert when the failures in a row reach alert_after (2), not one per failure.
            #expect(try await outbox(stores).filter { $0.hasPrefix("pager") }.count == 1)

            script.items([item("a")])
            let recovered = await pipeline.fetch(source)
            #expect(recovered.report.outcome == .noData && recovered.nextFetch == .seconds(90))
            state = try await stores.state("s")
            #expect(state.consecutiveFailures == 0 && state.failingSince == nil && state.health == .ok)
            let pager = try await stores.store.pendingDeliveries().filter { $0.output == "pager" }.map(\.delivery)
            #expect(pager.map(\.kind) == [.failing, .recovered])
            #expect(pager[0].fields["failures"] == "2" && pager[0].fields["error"] == "connection refused")
        }
    }

    @Test(arguments: StoreKind.allCases) func retryAfterIsHonouredWhenItAsksForLonger(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline()
            let script = Script()
            script.answer { _ in throw FetchFailure(.httpStatus, "HTTP 429", status: 429, retryAfter: .seconds(7200)) }
            let fetched = await pipeline.fetch(script.source())
            #expect(fetched.nextFetch == .seconds(7200))
            let due = try #require(try await stores.state("s").nextDue)
            #expect(abs(due.timeIntervalSinceNow - 7200) < 5)
        }
    }

    @Test(arguments: StoreKind.allCases) func aPermanentRedirectIsHintedAfterThreeFetchesInARow(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline()
            let script = Script()
            let source = script.source()
            script.answer { _ in
                var output = FetchOutput(items: [item("a")])
                output.movedTo = "https://new.example/feed"
                return output
            }
            var notes: [[String]] = []
            for _ in 0..<3 { notes.append(await pipeline.fetch(source).report.notes) }
            #expect(notes[0].isEmpty && notes[1].isEmpty)
            #expect(notes[2] == ["moved permanently to https://new.example/feed (3 fetches in a row): update its 'url' in the config"])
            #expect(try await stores.state("s").movedCount == 3)
            script.items([item("a")])
            #expect(await pipeline.fetch(source).report.notes.isEmpty)
            let state = try await stores.state("s")
            #expect(state.movedTo == nil && state.movedCount == 0)
        }
    }

    @Test(arguments: StoreKind.allCases) func filteredItemsAreNeverNewButKept(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            var source = script.source()
            source.routing.filter = ItemFilter(include: [], exclude: [try .init(field: "title", pattern: "(?i)sponsored")])
            script.items([item("a")])
            _ = await pipeline.fetch(source)
            script.items([item("ad", title: "Sponsored: buy"), item("b"), item("a")])
            #expect(await pipeline.fetch(source).report.outcome == .newData([item("b")]))
            #expect(try await outbox(stores) == ["log s/b"])
            #expect(await stores.snapshot("s")?.items.map(\.id) == ["ad", "b", "a"])
            #expect(await pipeline.fetch(source).report.outcome == .noData)
        }
    }

    @Test(arguments: StoreKind.allCases) func aFeedLongerThanKeepThatGainsOneItemHasOneNewItemAndOneDelivery(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            let source = script.source()
            #expect(source.settings.keep == 200)
            let feed = (0..<500).reversed().map { item("i\($0)") }
            script.items(feed)
            #expect(await pipeline.fetch(source).report.isBaseline)
            #expect(await stores.snapshot("s")?.items.count == 200)

            script.items([item("i500")] + feed)
            let second = await pipeline.fetch(source)
            #expect(second.report.outcome == .newData([item("i500")]))
            #expect(second.report.newCount == 1 && second.report.totalItems == 501)
            #expect(try await outbox(stores) == ["log s/i500"])
            #expect(try await stores.state("s").itemCount == 501)

            // Reordered, and the oldest 300 gone and back: nothing new, nothing sent.
            script.items(Array(feed.suffix(300)) + [item("i500")])
            #expect(await pipeline.fetch(source).report.outcome == .noData)
            script.items(([item("i500")] + feed).shuffled())
            #expect(await pipeline.fetch(source).report.outcome == .noData)
            #expect(try await outbox(stores) == ["log s/i500"])

            // A reset forgets the seen ids with the snapshot: the next fetch is a baseline.
            try await stores.store.forget("s")
            #expect(await pipeline.fetch(source).report.isBaseline)
            #expect(try await outbox(stores) == ["log s/i500"])
        }
    }

    @Test(arguments: StoreKind.allCases) func theFirstFetchAfterTheUpgradeToSeenSetsDoesNotFlood(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            let source = script.source()
            let feed = (0..<500).reversed().map { item("i\($0)") }
            script.items(feed)
            _ = await pipeline.fetch(source)
            // The snapshot as an older fetchrun left it: the newest 200 items, no seen set.
            var old = try #require(await stores.snapshot("s"))
            #expect(old.seen != nil)
            old.seen = nil
            let lease = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            #expect(try await stores.store.commit(FetchCommit(lease: lease, state: lease.state, snapshot: old, deliveries: [])))
            #expect(await stores.snapshot("s")?.seen == nil)

            script.items([item("i500")] + feed)
            #expect(await pipeline.fetch(source).report.outcome == .newData([item("i500")]))
            #expect(try await outbox(stores) == ["log s/i500"])
            #expect(await stores.snapshot("s")?.seen != nil)
        }
    }

    @Test(arguments: StoreKind.allCases) func aSourceWhoseIdentityChangedStartsFromANewBaseline(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            // One guid on every item: by link they are three.
            let items = (1...3).map { Item(id: "same", title: "T\($0)", link: "https://example.test/\($0)") }
            script.items(items)
            var source = script.source()
            _ = await pipeline.fetch(source)
            #expect(await stores.snapshot("s")?.items.count == 3)
            source.settings.identity = .link
            let changed = await pipeline.fetch(source)
            #expect(changed.report.isBaseline)
            #expect(changed.report.notes.contains { $0.contains("identity changed from guid to link") })
            #expect(try await outbox(stores).isEmpty)
            script.items([Item(id: "same", title: "T4", link: "https://example.test/4")] + items)
            #expect(await pipeline.fetch(source).report.outcome.newItems.map(\.id) == ["https://example.test/4"])
            #expect(try await outbox(stores) == ["log s/https://example.test/4"])
        }
    }

    @Test(arguments: StoreKind.allCases) func aSourceWhoseTypeChangedStartsFromANewBaseline(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            script.items([item("a"), item("b")])
            _ = await pipeline.fetch(script.source(type: "first"))
            script.items([item("x")])
            let changed = await pipeline.fetch(script.source(type: "second"))
            // Another adapter's items are not news: a baseline, sent nowhere, the old items gone.
            #expect(changed.report.isBaseline && changed.report.outcome == .newData([item("x")]))
            #expect(changed.report.notes.contains { $0.contains("type changed from first to second") })
            #expect(try await outbox(stores).isEmpty)
            let snapshot = await stores.snapshot("s")
            #expect(snapshot?.type == "second" && snapshot?.items.map(\.id) == ["x"])
            #expect(try await stores.state("s").type == "second")
        }
    }

    @Test(arguments: StoreKind.allCases) func aCancelledFetchIsNotRecordedAndGivesItsLeaseBack(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline()
            let (started, startedSink) = AsyncStream<Void>.makeStream()
            let stuck = source("s") { context in
                startedSink.yield()
                try await context.sleep(for: .seconds(3600))
                return FetchOutput(items: [])
            }
            let fetching = Task { await pipeline.fetch(stuck) }
            for await _ in started { break }
            fetching.cancel()
            let fetched = await fetching.value
            #expect(fetched.report.outcome.failure?.kind == .cancelled && fetched.nextFetch == nil)
            #expect(try await stores.state("s").health == .neverFetched)
            _ = try stores.taken(try await stores.other.lease("s", until: inSeconds(60)))
        }
    }

    @Test(arguments: StoreKind.allCases) func aFetchWhoseLeaseRanOutRecordsNothing(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline(outputs: try Self.outputs())
            let script = Script()
            script.items([item("a")])
            _ = await pipeline.fetch(script.source())
            let stale = try stores.taken(try await stores.store.lease("s", until: stores.inSeconds(0.3)))
            try await stores.letTimePass(.milliseconds(600))
            let current = try stores.taken(try await stores.other.lease("s", until: inSeconds(60)))
            script.items([item("b"), item("a")])
            let late = await pipeline.fetch(script.source(), lease: stale)
            #expect(late.report.outcome.failure?.kind == .state)
            #expect(try await outbox(stores).isEmpty)
            #expect(await stores.snapshot("s")?.items.map(\.id) == ["a"])
            try await stores.other.release(current)
        }
    }

    /// A stop that comes as a fetch ends keeps what the fetch found: its record is written
    /// (within a grace of two seconds), not dropped as "cancelled before it was written".
    @Test(arguments: StoreKind.allCases) func aFetchThatEndedIsRecordedEvenWhenTheStopComesAsItEnds(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline()
            let script = Script()
            // The stop arrives as the adapter returns: the fetching task is cancelled from then on.
            let fetching = Mutex<Task<FetchPipeline.Fetched, Never>?>(nil)
            script.answer { _ in
                fetching.withLock { $0?.cancel() }
                return FetchOutput(items: [item("a"), item("b")])
            }
            let (start, go) = AsyncStream<Void>.makeStream()
            let task = Task {
                for await _ in start { break }
                return await pipeline.fetch(script.source())
            }
            fetching.withLock { $0 = task }
            go.yield()
            let fetched = await task.value
            #expect(fetched.report.outcome.failure == nil, "\(fetched.report)")
            let state = try await stores.state("s")
            #expect(state.itemCount == 2 && state.lastSuccess != nil, "\(state)")
            #expect(await stores.snapshot("s")?.items.map(\.id) == ["a", "b"])
        }
    }

    /// A watched selection (a `json` source's `select:`, as a `page` source's `css:`) keeps its
    /// text and change count in the store: a change is one item with its diff, sent once; with
    /// `report: added` a change that only removes lines is recorded but not sent, and the next
    /// change is told against it.
    @Test(arguments: StoreKind.allCases) func aWatchedSelectionIsOneChangeItemWithItsDiffAndRemovalsAreRecordedNotSent(_ kind: StoreKind) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-watched-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let document = folder.appendingPathComponent("api.json")
        let config = try configured("""
            outputs:
              - { name: log, type: command, command: [/bin/cat] }
            sources:
              - { name: tags, type: json, url: "\(document.absoluteString)", select: "$.tags", report: added }
            """)
        let source = try #require(config.sources.first)
        try await Stores.with(kind) { stores in
            let client = CurlHTTPClient()
            try await withRunning(client) {
                var pipeline = FetchPipeline(store: stores.store, http: client)
                pipeline.outputs = config.outputs
                pipeline.jitter = { 0 }
                func fetch(_ tags: [String]) async throws -> FetchPipeline.Fetched {
                    try Data(#"{"tags": [\#(tags.map { "\"\($0)\"" }.joined(separator: ", "))], "served": "\#(UUID())"}"#.utf8).write(to: document)
                    return await pipeline.fetch(source)
                }
                func pending() async throws -> [PendingDelivery] { try await stores.store.pendingDeliveries() }

                let baseline = try await fetch(["a", "b"])
                if case .failed(let failure) = baseline.report.outcome { Issue.record("\(failure)") }
                #expect(baseline.report.isBaseline, "\(baseline.report)")
                #expect(try await pending().isEmpty)
                // What is outside the selection (`served`) changes on every fetch: no change.
                #expect(try await fetch(["a", "b"]).report.outcome == .noData)

                let added = try await fetch(["a", "b", "c"])
                guard case .newData(let changed) = added.report.outcome else { Issue.record("\(added.report)"); return }
                #expect(changed.map(\.id) == ["change-2"])  // the baseline was change-1
                #expect(changed.first?.diff?.contains(#"+  "c""#) == true, "\(changed)")
                let sent = try await pending()
                #expect(sent.map(\.delivery.id) == ["tags/change-2"])
                #expect(sent.first?.delivery.payload.contains(#"+  \"c\""#) == true, "\(sent)")

                // Only removed: recorded, not reported, not sent.
                #expect(try await fetch(["a", "c"]).report.outcome == .noData)
                #expect(try await pending().count == 1)

                // The next change is against the recorded removal: `b` is not in its diff.
                let again = try await fetch(["a", "c", "d"])
                guard case .newData(let next) = again.report.outcome, let diff = next.first?.diff else { Issue.record("\(again.report)"); return }
                #expect(diff.contains(#"+  "d""#) && !diff.contains(#""b""#), "\(diff)")
                #expect(try await pending().count == 2)
            }
        }
    }
}

/// The module's free functions, for names a nested type shadows.
enum FetchRunKitContract {
    static func source(_ name: String, type: String, readsSnapshot: Bool, _ behaviour: @escaping @Sendable (FetchContext) async throws -> FetchOutput) -> SourceConfig {
        StateStoreContractTests.source(name, type: type, readsSnapshot: readsSnapshot, behaviour)
    }
}
