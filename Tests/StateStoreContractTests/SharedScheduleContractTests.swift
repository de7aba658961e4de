import FetchRunKit
import Foundation
import Testing

/// What ``SharedSchedule`` promises — the schedule workers share, which PostgreSQL keeps:
/// what is scheduled, due sources leased in batches, leases renewed and given back.
@Suite struct SharedScheduleContractTests {
    @Test func theScheduleAddsChangesAndRetires() async throws {
        try await Stores.withSharedSchedule { stores in
            let quick = Duration.milliseconds(50)
            let a = source("a", interval: quick) { _ in FetchOutput(items: []) }
            let b = source("b", interval: quick) { _ in FetchOutput(items: []) }
            var never = source("never") { _ in FetchOutput(items: []) }
            never.settings.interval = .never
            var change = try await stores.store.schedule([a, b, never], now: Date())
            #expect(change == ScheduleChange(added: ["a", "b"], changed: [], retired: []))
            #expect(try await stores.store.schedule([a, b, never], now: Date()) == ScheduleChange())
            var changedA = a
            changedA.fingerprint += "|changed"
            let c = source("c", interval: quick) { _ in FetchOutput(items: []) }
            change = try await stores.store.schedule([changedA, c], now: Date())
            #expect(change == ScheduleChange(added: ["c"], changed: ["a"], retired: ["b"]))
            // A new source is due within its interval (at most 10 s): here within 50 ms.
            try await letPostgreSQLTimePass(.milliseconds(100))
            let leased = try await stores.store.leaseDue(limit: 10, until: inSeconds(60))
            #expect(Set(leased.map(\.name)) == ["a", "c"])
            #expect(try await stores.store.leaseDue(limit: 10, until: inSeconds(60)).isEmpty)
            #expect(try await stores.other.leaseDue(limit: 10, until: inSeconds(60)).isEmpty)
        }
    }

    /// "Check now" on any worker's dashboard: the source is due at once for whichever worker
    /// leases next; a retired one stays retired.
    @Test func aSourceMadeDueIsLeasedAtOnce() async throws {
        try await Stores.withSharedSchedule { stores in
            let a = source("a", interval: .seconds(3_600)) { _ in FetchOutput(items: []) }
            try await stores.store.schedule([a], now: Date())
            // Fetched once by name: its next fetch is an hour away.
            let lease = try stores.taken(try await stores.store.lease("a", until: inSeconds(60)))
            var pipeline = FetchPipeline(store: stores.store, http: CurlHTTPClient())
            pipeline.jitter = { 0 }
            _ = await pipeline.fetch(a, lease: lease)
            #expect(try await stores.store.leaseDue(limit: 10, until: inSeconds(60)).isEmpty)
            try await stores.other.makeDue("a")
            #expect(try await stores.store.leaseDue(limit: 10, until: inSeconds(60)).map(\.name) == ["a"])
            try await stores.store.schedule([], now: Date())
            try await stores.store.makeDue("a")
            #expect(try await stores.other.leaseDue(limit: 10, until: inSeconds(60)).isEmpty)
        }
    }

    @Test func dueSourcesAreLeasedSoonestFirstInBatches() async throws {
        try await Stores.withSharedSchedule { stores in
            let sources = (0..<5).map { index in source("s\(index)", interval: .milliseconds(1)) { _ in FetchOutput(items: []) } }
            try await stores.store.schedule(sources, now: Date())
            try await letPostgreSQLTimePass(.milliseconds(50))
            let first = try await stores.store.leaseDue(limit: 3, until: inSeconds(60))
            let second = try await stores.other.leaseDue(limit: 3, until: inSeconds(60))
            #expect(first.count == 3 && second.count == 2)
            #expect(Set(first.map(\.name) + second.map(\.name)).count == 5)
            // Committed with due times half an hour and an hour away: not due.
            for lease in first {
                var state = lease.state
                state.nextDue = inSeconds(3600)
                #expect(try await stores.store.commit(FetchCommit(lease: lease, state: state, snapshot: nil, deliveries: [])))
            }
            for lease in second {
                var state = lease.state
                state.nextDue = inSeconds(1800)
                #expect(try await stores.other.commit(FetchCommit(lease: lease, state: state, snapshot: nil, deliveries: [])))
            }
            #expect(try await stores.store.leaseDue(limit: 10, until: inSeconds(60)).isEmpty)
            #expect(try await stores.store.states().values.allSatisfy { ($0.nextDue ?? .distantPast) > inSeconds(1700) })
        }
    }

    @Test func renewedLeasesHoldAndReleasedOnesAreFree() async throws {
        try await Stores.withSharedSchedule { stores in
            // Two seconds to renew them in, however loaded the machine: a lease that ran out
            // before the renewal is rightly not renewed, and that is not what this asks.
            _ = try stores.taken(try await stores.store.lease("a", until: inSeconds(2)))
            _ = try stores.taken(try await stores.store.lease("b", until: inSeconds(2)))
            try await stores.store.renewLeases(until: inSeconds(60))
            // Past the first leases' end.
            try await letPostgreSQLTimePass(.milliseconds(2300))
            guard case .held = try await stores.other.lease("a", until: inSeconds(60)) else {
                Issue.record("a renewed lease lapsed")
                return
            }
            try await stores.store.releaseAll()
            _ = try stores.taken(try await stores.other.lease("a", until: inSeconds(60)))
            _ = try stores.taken(try await stores.other.lease("b", until: inSeconds(60)))
        }
    }
}
