import FetchRunKit
import Foundation
import Testing

/// What ``SourceStateStore`` promises, checked the same way against `state.db` and PostgreSQL:
/// leases and their tokens, the schedule, commits, reading back, forgetting, the outbox.
@Suite struct StoreContractTests {
    @Test(arguments: StoreKind.allCases) func aLeaseIsOneHoldersUntilItRunsOut(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let first = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            guard case .held(let holder) = try await stores.other.lease("s", until: inSeconds(60)) else {
                Issue.record("another holder took a live lease")
                return
            }
            #expect(!holder.isEmpty)
            try await stores.store.release(first)
            let second = try stores.taken(try await stores.other.lease("s", until: stores.inSeconds(0.3)))
            #expect(second.token > first.token)
            // Once it has run out, it is anyone's.
            try await stores.letTimePass(.milliseconds(600))
            let third = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            #expect(third.token > second.token)
        }
    }

    @Test(arguments: StoreKind.allCases) func aCommitUnderALostLeaseChangesNothing(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let stale = try stores.taken(try await stores.store.lease("s", until: stores.inSeconds(0.3)))
            try await stores.letTimePass(.milliseconds(600))
            let current = try stores.taken(try await stores.other.lease("s", until: inSeconds(60)))
            var newer = current.state
            newer.itemCount = 7
            newer.lastOutcome = "noData"
            let snapshot = Snapshot(source: "s", type: "scripted", updatedAt: Date(), items: [item("new")])
            #expect(try await stores.other.commit(FetchCommit(lease: current, state: newer, snapshot: snapshot, deliveries: [])))
            // The holder whose lease ran out comes back late: nothing it says is written.
            var older = stale.state
            older.itemCount = 1
            let late = QueuedDelivery(output: "log", delivery: .item(item("old"), source: "s", sourceTitle: nil))
            let lateSnapshot = Snapshot(source: "s", type: "scripted", updatedAt: Date(), items: [item("old")])
            #expect(try await stores.store.commit(FetchCommit(lease: stale, state: older, snapshot: lateSnapshot, deliveries: [late])) == false)
            #expect(try await stores.state("s").itemCount == 7)
            #expect(await stores.snapshot("s")?.items.map(\.id) == ["new"])
            #expect(try await stores.store.pendingDeliveries().isEmpty)
            // A commit gives the lease back: another may take it at once.
            _ = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
        }
    }

    @Test(arguments: StoreKind.allCases) func aLeaseWhoseHolderIsGoneIsFree(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            // Only `state.db` knows its holders' processes; PostgreSQL's leases lapse with time (above).
            guard let gone = stores.gone else { return }
            _ = try stores.taken(try await gone.lease("s", until: inSeconds(600)))
            _ = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
        }
    }

    @Test(arguments: StoreKind.allCases) func everyFieldOfAStateIsReadBackAsCommitted(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let lease = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            var state = lease.state
            let at = Date(timeIntervalSince1970: 1_800_000_000.125)
            state.lastFetch = at
            state.lastOutcome = "failed"
            state.lastSuccess = at.addingTimeInterval(-60)
            state.consecutiveFailures = 3
            state.failingSince = at.addingTimeInterval(-30)
            state.lastError = .init(kind: .httpStatus, message: "HTTP 503 \u{0} from\nthere", at: at)
            state.nextDue = at.addingTimeInterval(120)
            state.currentInterval = .milliseconds(90_500)
            state.itemCount = 42
            state.validators = HTTPValidators(etag: "\"v1\"", lastModified: "Wed, 21 Oct 2026 07:28:00 GMT")
            state.bodyHash = "0123456789abcdef"
            state.movedTo = "https://example.org/new"
            state.movedCount = 2
            state.type = "rss"
            #expect(try await stores.store.commit(FetchCommit(lease: lease, state: state, snapshot: nil, deliveries: [])))
            #expect(try await stores.state("s") == state)
            // Validators a response said to drop (no-store) are kept as "none", not as "unknown".
            let again = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            state.validators = HTTPValidators()
            #expect(try await stores.store.commit(FetchCommit(lease: again, state: state, snapshot: nil, deliveries: [])))
            #expect(try await stores.state("s").validators == HTTPValidators())
        }
    }

    @Test(arguments: StoreKind.allCases) func aForgottenSourceHasNoStateAndNoSnapshot(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let lease = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            var state = lease.state
            state.lastFetch = Date()
            state.itemCount = 1
            let snapshot = Snapshot(source: "s", type: "scripted", updatedAt: Date(), items: [item("a")])
            #expect(try await stores.store.commit(FetchCommit(lease: lease, state: state, snapshot: snapshot, deliveries: [])))
            #expect(try await stores.store.forget("s") != nil)
            #expect(try await stores.state("s").health == .neverFetched)
            #expect(await stores.snapshot("s") == nil)
            #expect(try await stores.store.forget("s") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases) func theOutboxClaimsSendsMarksRetriesAndPrunes(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            let deliveries = (1...3).map { Delivery.item(item("\($0)"), source: "s", sourceTitle: nil) }
            let queued = ["log", "chat"].flatMap { output in deliveries.map { QueuedDelivery(output: output, delivery: $0) } }
            let lease = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            #expect(try await stores.store.commit(FetchCommit(lease: lease, state: lease.state, snapshot: nil, deliveries: queued)))
            // The same again is ignored: a crash between outbox and snapshot repeats nothing.
            let again = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
            #expect(try await stores.store.commit(FetchCommit(lease: again, state: again.state, snapshot: nil, deliveries: queued)))
            #expect(try await stores.store.pendingDeliveries().count == 6)

            let now = Date()
            let claimed = try await stores.store.claimDue(for: "log", limit: 2, at: now, dueBy: nil, after: 0)
            #expect(claimed.map(\.delivery.id) == ["s/1", "s/2"])
            // Claimed rows are another's while the claim holds.
            #expect(try await stores.other.claimDue(for: "log", limit: 10, at: now, dueBy: nil, after: 0).map(\.delivery.id) == ["s/3"])
            try await stores.store.markDelivered(claimed.map(\.row), at: now)
            let rest = try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: nil, after: 0)
            #expect(rest.count == 3)
            try await stores.store.markFailed(rest.map { ($0.row, now.addingTimeInterval(30)) }, error: "HTTP 503", at: now)
            #expect(try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: nil, after: 0).isEmpty)
            let soonest = try #require(try await stores.store.nextDeliveryDue(for: ["chat"]))
            #expect(abs(soonest.timeIntervalSince(now.addingTimeInterval(30))) < 1)
            let retried = try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: now.addingTimeInterval(31), after: 0)
            #expect(retried.count == 3 && retried.allSatisfy { $0.attempts == 1 && $0.lastError == "HTTP 503" })
            try await stores.store.markFailed(retried.map { ($0.row, now.addingTimeInterval(3600)) }, error: "HTTP 503", at: now)
            #expect(try await stores.store.retryNow(output: "chat", givenUp: false, at: now) == 3)
            #expect(try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: nil, after: 0).count == 3)
            #expect(try await stores.store.deliveredCounts() == ["log": 2])

            // Sent rows are remembered (a repeat stays a repeat) until pruned, never pending ones.
            #expect(try await stores.store.pruneDelivered(before: now.addingTimeInterval(-60)) == 0)
            #expect(try await stores.store.pruneDelivered(before: now.addingTimeInterval(1)) == 2)
            #expect(try await stores.store.deliveredCounts().isEmpty)
            #expect(try await stores.store.pendingDeliveries().count == 4)
        }
    }
}
