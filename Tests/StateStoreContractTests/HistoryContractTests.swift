import FetchRunKit
import Foundation
import Testing

/// What ``HistoryStore`` promises, and the rule of what a fetch records (``ChangeRecorder``),
/// checked the same way against `state.db` and PostgreSQL.
@Suite struct HistoryContractTests {
    @Test(arguments: StoreKind.allCases) func aFetchRecordsItsNewItemsFailuresAndRecoveryNewestFirst(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline()
            let script = PipelineContractTests.Script()
            let source = script.source("новости")
            script.items([item("a", title: "Первая")])
            _ = await pipeline.fetch(source)
            // A baseline is no change.
            #expect(try await stores.store.history(HistoryQuery()).isEmpty)

            script.items([item("b", title: "東京の天気"), item("a", title: "Первая")])
            _ = await pipeline.fetch(source)
            script.answer { _ in throw FetchFailure(.httpStatus, "HTTP 503 — نفد") }
            _ = await pipeline.fetch(source)
            // The second failure in a row is no new change.
            _ = await pipeline.fetch(source)
            script.items([item("b"), item("a")])
            _ = await pipeline.fetch(source)

            let records = try await stores.store.history(HistoryQuery())
            #expect(records.map(\.kind) == [.recovered, .failing, .item], "\(records)")
            let failing = try #require(records.first { $0.kind == .failing })
            #expect(failing.error == "HTTP 503 — نفد" && failing.errorKind == "httpStatus")
            #expect(records.first?.title == "recovered after 2 failures")
            let added = try #require(records.last)
            #expect(added.source == "новости" && added.title == "東京の天気" && added.id == "новости/item/b")
            // Filters: by kind, by source, by time, and a limit that keeps the newest.
            #expect(try await stores.store.history(HistoryQuery(kinds: [.failing, .recovered])).map(\.kind) == [.recovered, .failing])
            #expect(try await stores.store.history(HistoryQuery(sources: ["other"])).isEmpty)
            #expect(try await stores.store.history(HistoryQuery(since: Date().addingTimeInterval(3600))).isEmpty)
            #expect(try await stores.store.history(HistoryQuery(limit: 1)).map(\.kind) == [.recovered])
        }
    }

    @Test(arguments: StoreKind.allCases) func aSourceWithHistoryOffRecordsNothing(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let pipeline = stores.pipeline()
            let script = PipelineContractTests.Script()
            var source = script.source()
            source.settings.history = .off
            script.items([item("a")])
            _ = await pipeline.fetch(source)
            script.items([item("b"), item("a")])
            _ = await pipeline.fetch(source)
            let records = try await stores.store.history(HistoryQuery())
            #expect(records.isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases) func aCommitUnderALostLeaseRecordsNothingAndARepeatIsRecordedOnce(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let stale = try stores.taken(try await stores.store.lease("s", until: stores.inSeconds(0.3)))
            try await stores.letTimePass(.milliseconds(600))
            let current = try stores.taken(try await stores.other.lease("s", until: inSeconds(60)))
            let late = Self.write([Self.record("s/item/late", "s")])
            #expect(try await stores.store.commit(FetchCommit(lease: stale, state: stale.state, snapshot: nil, deliveries: [], history: late)) == false)
            #expect(try await stores.store.history(HistoryQuery()).isEmpty)

            let found = Self.write([Self.record("s/item/x", "s")])
            #expect(try await stores.other.commit(FetchCommit(lease: current, state: current.state, snapshot: nil, deliveries: [], history: found)))
            // The same change again (a fetch done again after a crash): one record.
            let again = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            #expect(try await stores.store.commit(FetchCommit(lease: again, state: again.state, snapshot: nil, deliveries: [], history: found)))
            #expect(try await stores.store.history(HistoryQuery()).map(\.id) == ["s/item/x"])
        }
    }

    @Test(arguments: StoreKind.allCases) func eachSourceKeepsItsNewestAndExpiredOnesArePruned(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            // Five commits of "a", two of "b", each a record; "a" keeps three.
            for index in 0..<5 {
                let lease = try stores.taken(try await stores.store.lease("a", until: inSeconds(60)))
                let record = Self.record("a/item/\(index)", "a", at: start.addingTimeInterval(Double(index)))
                #expect(try await stores.store.commit(FetchCommit(lease: lease, state: lease.state, snapshot: nil, deliveries: [], history: Self.write([record], keep: 3, expiresAt: start.addingTimeInterval(1000)))))
            }
            for index in 0..<2 {
                let lease = try stores.taken(try await stores.store.lease("b", until: inSeconds(60)))
                let record = Self.record("b/item/\(index)", "b", at: start.addingTimeInterval(Double(index)))
                #expect(try await stores.store.commit(FetchCommit(lease: lease, state: lease.state, snapshot: nil, deliveries: [], history: Self.write([record], keep: 3, expiresAt: start.addingTimeInterval(Double(100 * (index + 1)))))))
            }
            #expect(try await stores.store.history(HistoryQuery(sources: ["a"])).map(\.id) == ["a/item/4", "a/item/3", "a/item/2"])
            // Expired by then: b's first (100 s), not its second (200 s) nor a's (1,000 s).
            #expect(try await stores.store.pruneHistory(expiredBy: start.addingTimeInterval(150)) == 1)
            #expect(try await stores.store.history(HistoryQuery(sources: ["b"])).map(\.id) == ["b/item/1"])
            #expect(try await stores.store.history(HistoryQuery()).count == 4)
        }
    }

    @Test(arguments: StoreKind.allCases) func aRecordReadsBackAsWrittenWithItsDiffAndNotes(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            var record = Self.record("p/change/change-2/0123", "p")
            record.kind = .change
            record.title = "Цена: 1 299 ₽ <b>\u{0}"
            record.link = "https://example.com/товар?a=1&b=2"
            record.summary = "строка 1\nstroke 2"
            record.diff = "@@ -1 +1 @@\n-1 399 ₽\n+1 299 ₽"
            record.notes = ["diff cut: 300 KiB, the first 64 KiB kept"]
            record.published = Date(timeIntervalSince1970: 1_800_000_000)
            let lease = try stores.taken(try await stores.store.lease("p", until: inSeconds(60)))
            #expect(try await stores.store.commit(FetchCommit(lease: lease, state: lease.state, snapshot: nil, deliveries: [], history: Self.write([record]))))
            #expect(try await stores.store.history(HistoryQuery()) == [record])
        }
    }

    static func record(_ id: String, _ source: String, at: Date = Date(timeIntervalSince1970: 1_800_000_000)) -> ChangeRecord {
        var record = ChangeRecord(id: id, source: source, kind: .item, at: at)
        record.title = id
        return record
    }

    static func write(_ records: [ChangeRecord], keep: Int = 1000, expiresAt: Date = .distantFuture) -> HistoryWrite {
        HistoryWrite(records: records, keep: keep, expiresAt: expiresAt)
    }
}
