import FetchRunKit
import FixtureServer
import Foundation
import Testing
import TestSupport

/// The outbox's rules for what fails, on both stores: each row has its own attempts and
/// backoff, a row the receiver refuses does not hold the others, and a row that keeps failing
/// is given up — kept, listed, and taken back only when asked.
@Suite struct OutboxContractTests {
    /// Queues one item delivery per id for `output`, through a commit as a fetch would.
    func queue(_ ids: [String], for output: String, in stores: Stores) async throws {
        let deliveries = ids.map { QueuedDelivery(output: output, delivery: .item(item($0, title: "Story \($0)"), source: "s", sourceTitle: nil)) }
        let lease = try stores.taken(try await stores.store.lease("s", until: inSeconds(60)))
        #expect(try await stores.store.commit(FetchCommit(lease: lease, state: lease.state, snapshot: nil, deliveries: deliveries)))
    }

    func pending(_ stores: Stores) async throws -> [String: PendingDelivery] {
        Dictionary(uniqueKeysWithValues: try await stores.store.pendingDeliveries().map { ($0.delivery.id, $0) })
    }

    @Test(arguments: StoreKind.allCases) func aGivenUpRowIsKeptListedAndTakenBackOnlyWhenAsked(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            try await queue(["1", "2", "3"], for: "chat", in: stores)
            let now = Date()
            let claimed = try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: nil, after: 0)
            #expect(claimed.count == 3)
            // The cursor: a pass that has tried row 1 asks only for what comes after it.
            #expect(try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: nil, after: claimed[0].row).map(\.delivery.id) == ["s/2", "s/3"])
            try await stores.store.markFailed([(claimed[0].row, nil), (claimed[1].row, now.addingTimeInterval(30))], error: "HTTP 422", at: now)
            try await stores.store.markDelivered([claimed[2].row], at: now)

            var rows = try await pending(stores)
            #expect(rows.count == 2)
            #expect(rows["s/1"]?.givenUpAt != nil && rows["s/1"]?.attempts == 1 && rows["s/1"]?.lastError == "HTTP 422")
            #expect(rows["s/2"]?.givenUpAt == nil)
            // Never claimed again, not even ignoring the backoff, and no wake-up is due for it.
            #expect(try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: .distantFuture, after: 0).map(\.delivery.id) == ["s/2"])
            try await stores.store.markFailed([(rows["s/2"]!.row, now.addingTimeInterval(30))], error: "HTTP 503", at: now)
            let due = try #require(try await stores.store.nextDeliveryDue(for: ["chat"]))
            #expect(due > now.addingTimeInterval(25))
            // Pruning sent rows never touches a given-up one.
            #expect(try await stores.store.pruneDelivered(before: now.addingTimeInterval(86_400)) == 1)

            // A plain retry leaves it given up; --given-up takes it back, attempts from zero.
            #expect(try await stores.store.retryNow(output: "chat", givenUp: false, at: now) == 1)
            #expect(try await pending(stores)["s/1"]?.givenUpAt != nil)
            #expect(try await stores.store.retryNow(output: nil, givenUp: true, at: now) == 2)
            rows = try await pending(stores)
            #expect(rows["s/1"]?.givenUpAt == nil && rows["s/1"]?.attempts == 0 && rows["s/2"]?.attempts == 2)
            #expect(try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: nil, after: 0).map(\.delivery.id) == ["s/1", "s/2"])
        }
    }

    @Test(arguments: StoreKind.allCases) func pendingCountsAreWhatEachOutputStillHasToSend(_ kind: StoreKind) async throws {
        try await Stores.with(kind) { stores in
            #expect(try await stores.store.pendingCounts().isEmpty)
            try await queue(["1", "2", "3", "4"], for: "chat", in: stores)
            try await queue(["5"], for: "pager", in: stores)
            #expect(try await stores.store.pendingCounts() == ["chat": 4, "pager": 1])
            let now = Date()
            let claimed = try await stores.store.claimDue(for: "chat", limit: 10, at: now, dueBy: nil, after: 0)
            // Claimed is still to send; sent and given up are not; failed and due later is.
            #expect(try await stores.store.pendingCounts() == ["chat": 4, "pager": 1])
            try await stores.store.markDelivered([claimed[0].row], at: now)
            try await stores.store.markFailed([(claimed[1].row, nil), (claimed[2].row, now.addingTimeInterval(60))], error: "HTTP 503", at: now)
            #expect(try await stores.store.pendingCounts() == ["chat": 2, "pager": 1])
            // What `outputs` lists counts the given-up row too; the gauge does not.
            #expect(try await stores.store.pendingDeliveries().count == 4)
            #expect(try await stores.store.retryNow(output: "chat", givenUp: true, at: now) == 3)
            #expect(try await stores.store.pendingCounts() == ["chat": 3, "pager": 1])
        }
    }

    @Test(arguments: StoreKind.allCases) func aRefusedRowDoesNotHoldTheOthersAndIsGivenUpAfterItsLimits(_ kind: StoreKind) async throws {
        let server = try FixtureServer()
        let config = try configured("""
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/picky-receiver/Story-bad"))", batch: 3, give_up_attempts: 2, give_up_after: 1h }
            sources:
              - { name: unused, type: traffic }
            """)
        let http = CurlHTTPClient()
        try await withRunning(http) {
            try await Stores.with(kind) { stores in
                try await queue(["1", "2", "Story-bad", "3", "4", "5"], for: "chat", in: stores)
                let clock = TestClock()
                let sender = OutboxDelivery(outputs: config.outputs, database: stores.store, http: http, clock: clock)
                // A one-shot run ignores the backoff: still, the refused row is tried once per
                // pass, and everything behind it goes through.
                var results = await sender.deliverDue(ignoringBackoff: true)
                #expect(results.first?.delivered == 5 && results.first?.failed == 1 && results.first?.givenUp == 0, "\(results)")
                var rows = try await pending(stores)
                #expect(rows.keys.sorted() == ["s/Story-bad"])
                #expect(rows["s/Story-bad"]?.attempts == 1 && rows["s/Story-bad"]?.lastError?.contains("HTTP 422") == true)
                // The batch of three was refused, then its rows were sent one at a time.
                let posts = server.requests.filter { $0.method == "POST" }
                #expect(posts.count == 2 + 3, "\(posts.count) POSTs")

                // Its second failure is within the hour: it waits again; past the hour, the
                // next failure gives it up.
                clock.advance(by: .seconds(60))
                results = await sender.deliverDue(ignoringBackoff: true)
                #expect(results.first?.failed == 1 && results.first?.givenUp == 0, "\(results)")
                clock.advance(by: .seconds(7200 - 60))
                results = await sender.deliverDue(ignoringBackoff: true)
                #expect(results.first?.failed == 1 && results.first?.givenUp == 1, "\(results)")
                rows = try await pending(stores)
                #expect(rows["s/Story-bad"]?.givenUpAt != nil && rows["s/Story-bad"]?.attempts == 3)
                // Given up: a later pass has nothing to send.
                clock.advance(by: .seconds(1800))
                #expect(await sender.deliverDue(ignoringBackoff: true).isEmpty)
                #expect(try await stores.store.deliveredCounts() == ["chat": 5])
            }
        }
    }

    @Test(arguments: StoreKind.allCases) func aReceiverThatIsDownEndsThePassAndRowsNotTriedKeepTheirAttempts(_ kind: StoreKind) async throws {
        let server = try FixtureServer()
        server.respond(to: "/hook", status: 503)
        let config = try configured("""
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))", give_up_attempts: 1, give_up_after: 1h }
            sources:
              - { name: unused, type: traffic }
            """)
        let http = CurlHTTPClient()
        try await withRunning(http) {
            try await Stores.with(kind) { stores in
                try await queue(["1", "2", "3"], for: "chat", in: stores)
                let sender = OutboxDelivery(outputs: config.outputs, database: stores.store, http: http)
                let results = await sender.deliverDue(ignoringBackoff: true)
                // One POST: a 503 says the receiver is down, not that this row is bad.
                #expect(results.first?.failed == 1, "\(results)")
                #expect(server.requests(to: "/hook").count == 1)
                let rows = try await pending(stores)
                #expect(rows["s/1"]?.attempts == 1 && rows["s/2"]?.attempts == 0 && rows["s/3"]?.attempts == 0)
                // Younger than its give_up_after: a failure past the attempts alone gives nothing up.
                #expect(rows.values.allSatisfy { $0.givenUpAt == nil })
            }
        }
    }

    @Test(arguments: StoreKind.allCases) func aServiceThatAsksToWaitHoldsItsWholeOutputForEveryProcess(_ kind: StoreKind) async throws {
        let server = try FixtureServer(), otherServer = try FixtureServer()
        server.respond(to: "/hook", status: 429, headers: [("Retry-After", "120")])
        // Another host: the HTTP client holds back every request to a host that asked to wait.
        let config = try configured("""
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))" }
              - { name: other, type: webhook, url: "\(otherServer.url("/other"))" }
            sources:
              - { name: unused, type: traffic }
            """)
        let http = CurlHTTPClient(), nextHTTP = CurlHTTPClient()
        try await withRunning(http) { try await withRunning(nextHTTP) {
            try await Stores.with(kind) { stores in
                try await queue(["1", "2", "3"], for: "chat", in: stores)
                try await queue(["4"], for: "other", in: stores)
                let clock = TestClock()
                let start = clock.date
                let sender = OutboxDelivery(outputs: config.outputs, database: stores.store, http: http, clock: clock)
                var results = await sender.deliverDue(ignoringBackoff: true)
                let chat = try #require(results.first { $0.output == "chat" })
                #expect(chat.failed == 1 && chat.heldUntil != nil, "\(results)")
                #expect(results.first { $0.output == "other" }?.delivered == 1)
                #expect(server.requests(to: "/hook").count == 1)
                let hold = try #require(try await stores.store.outputHolds()["chat"])
                #expect(abs(hold.notBefore.timeIntervalSince(start) - 120) < 0.001 && hold.reason.contains("HTTP 429"))

                // Another process (a watch started next, a worker, a run ignoring the backoff)
                // sends nothing to it before then: not the row that was refused, nor those behind it.
                // (With an HTTP client of its own, as another process has: this one keeps the
                // host's Retry-After itself.)
                let next = OutboxDelivery(outputs: config.outputs, database: stores.other, http: nextHTTP, clock: clock)
                clock.advance(by: .seconds(60))
                results = await next.deliverDue(ignoringBackoff: true)
                #expect(results.map(\.output) == ["chat"] && results.first?.heldUntil == hold.notBefore && results.first?.failed == 0, "\(results)")
                #expect(server.requests(to: "/hook").count == 1)
                // A watch sleeps until then.
                let due = try #require(try await next.nextDue())
                #expect(due >= hold.notBefore.addingTimeInterval(-0.001))
                // A shorter wait asked later does not shorten it.
                try await stores.other.holdOutput("chat", until: start.addingTimeInterval(10), reason: "HTTP 429")
                #expect(try await stores.store.outputHolds()["chat"]?.notBefore == hold.notBefore)

                // Once it has passed, everything goes.
                server.respond(to: "/hook", status: nil)
                clock.advance(by: .seconds(61))
                results = await next.deliverDue(ignoringBackoff: true)
                #expect(results.first?.delivered == 3, "\(results)")

                // --force forgets a hold.
                try await stores.store.holdOutput("chat", until: start.addingTimeInterval(3600), reason: "HTTP 503")
                try await stores.store.releaseHolds(output: "chat")
                #expect(try await stores.store.outputHolds()["chat"] == nil)
            }
        } }
    }

    /// `digest: SCHEDULE`: nothing goes before the schedule's first time after the oldest
    /// delivery waiting, then everything due goes in one mail; what comes after waits for the
    /// next time. Told by a test clock moved across the hours, not by waiting.
    @Test(arguments: StoreKind.allCases) func aDigestCollectsUntilItsTimeAndSendsEverythingInOneMail(_ kind: StoreKind) async throws {
        let smtp = try SMTPFixture()
        defer { smtp.stop() }
        let config = try configured("""
            timezone: Asia/Tokyo
            outputs:
              - { name: mail, type: email, url: "\(smtp.url)", starttls: off, from: f@example.org, to: [me@example.org], digest: "daily@08:00" }
            sources:
              - { name: unused, type: traffic }
            """)
        let digest = try #require(config.outputs.first?.digest)
        let http = CurlHTTPClient()
        try await withRunning(http) {
            try await Stores.with(kind) { stores in
                try await queue(["1", "2", "3"], for: "mail", in: stores)
                let queuedBy = Date()
                let clock = TestClock()
                let sender = OutboxDelivery(outputs: config.outputs, database: stores.store, http: http, clock: clock)
                // Even a one-shot run, which ignores retries' backoff, keeps to the schedule, and
                // says when it sends.
                let collected = await sender.deliverDue(ignoringBackoff: true)
                #expect(smtp.messages.isEmpty)
                #expect(collected.count == 1 && collected.first?.delivered == 0 && collected.first?.failed == 0, "\(collected)")
                // The next 08:00 in Tokyo, whatever the machine's zone: a watch sleeps until then.
                let due = try #require(try await sender.nextDue())
                #expect(collected.first?.digestAt == due)
                var tokyo = Calendar(identifier: .gregorian)
                tokyo.timeZone = try #require(TimeZone(identifier: "Asia/Tokyo"))
                #expect(tokyo.component(.hour, from: due) == 8 && tokyo.component(.minute, from: due) == 0)
                #expect(due > queuedBy.addingTimeInterval(-1) && due <= queuedBy.addingTimeInterval(86_400), "\(due)")
                #expect(due == digest.next(after: try #require(try await stores.store.oldestUndelivered(for: "mail"))))

                clock.advance(by: .seconds(due.timeIntervalSince(clock.date) - 1))
                #expect(await sender.deliverDue().first?.delivered == 0)
                #expect(smtp.messages.isEmpty)
                clock.advance(by: .seconds(2))
                let results = await sender.deliverDue()
                #expect(results.first?.delivered == 3, "\(results)")
                #expect(smtp.messages.count == 1)
                #expect(smtp.messages.first?.header("X-Fetchrun-Delivery-Ids") == "s/1 s/2 s/3")
                #expect(try await stores.store.oldestUndelivered(for: "mail") == nil)

                // Asked to go now (`outputs --retry --force`), a digest does not wait for its time.
                try await queue(["4"], for: "mail", in: stores)
                let now = OutboxDelivery(outputs: config.outputs, database: stores.store, http: http, clock: TestClock())
                let waiting = await now.deliverDue()
                #expect(waiting.first?.delivered == 0 && waiting.first?.digestAt != nil, "\(waiting)")
                #expect(await now.deliverDue(sendingDigestsNow: true).first?.delivered == 1)
                #expect(smtp.messages.count == 2)
            }
        }
    }

    /// A watch's sender with a digest: it says once when the digest goes, says nothing more at
    /// the passes that find it still waiting, sleeps until its time and then sends it — on a
    /// test clock moved past that time.
    @Test(arguments: StoreKind.allCases) func aWatchsSenderSaysADigestOnceAndSendsItAtItsTime(_ kind: StoreKind) async throws {
        let smtp = try SMTPFixture()
        defer { smtp.stop() }
        let config = try configured("""
            timezone: UTC
            outputs:
              - { name: mail, type: email, url: "\(smtp.url)", starttls: off, from: f@example.org, to: [me@example.org], digest: hourly }
            sources:
              - { name: unused, type: traffic }
            """)
        let http = CurlHTTPClient()
        try await withRunning(http) {
            try await Stores.with(kind) { stores in
                try await queue(["1", "2"], for: "mail", in: stores)
                let clock = TestClock()
                let service = DeliveryService(delivery: OutboxDelivery(outputs: config.outputs, database: stores.store, http: http, clock: clock))
                try await withRunning(service) {
                    var passes = service.results.makeAsyncIterator()
                    let first = try #require(await passes.next())
                    let due = try #require(first.first?.digestAt)
                    #expect(first.map(\.delivered) == [0] && due > clock.date && due <= clock.date.addingTimeInterval(3600), "\(first)")
                    // Two more passes (a fetch queued news), each ending in a sleep: nothing said.
                    for sleeps in 1...2 {
                        #expect(try await waitUntil("the sender asleep", timeout: .seconds(10)) { clock.sleepCalls >= sleeps })
                        service.wake()
                    }
                    #expect(try await waitUntil("the sender asleep again", timeout: .seconds(10)) { clock.sleepCalls >= 3 })
                    #expect(smtp.messages.isEmpty)
                    clock.advance(by: .milliseconds(Int64(due.timeIntervalSince(clock.date) * 1000) + 1))
                    let sent = try #require(await passes.next())
                    #expect(sent.map(\.delivered) == [2], "\(sent)")
                    #expect(smtp.messages.count == 1)
                }
            }
        }
    }
}

