import Foundation
import FixtureServer
import Testing
import TestSupport
@testable import FetchRunKit
@testable import FetchRunTransport

/// The curl loop's wait: woken by a command however long it would sleep, bounded while
/// transfers run, and curl's timer spent once.
@Suite struct CurlSocketWatchTests {
    @Test func aWakeUpBeforeTheWaitEndsItAtOnce() {
        let watch = CurlSocketWatch()
        var ready: [CurlSocketWatch.Ready] = []
        // A command that arrives while the loop is busy must not be lost until the next socket
        // event: the idle wait would otherwise last an hour.
        watch.wake()
        let started = ContinuousClock.now
        watch.wait(idle: true, into: &ready)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(ready.isEmpty)
    }

    @Test func aWakeUpFromAnotherThreadEndsAWaitUnderWay() async throws {
        let watch = CurlSocketWatch()
        let ended = Locked(false)
        // "/proc/<pid>/task/<tid>", the waiting thread's own entry.
        let thread = Locked<String?>(nil)
        let waiter = Thread {
            thread.withLock { $0 = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") }
            var ready: [CurlSocketWatch.Ready] = []
            watch.wait(idle: true, into: &ready)
            ended.withLock { $0 = true }
        }
        waiter.start()
        // Inside its wait, the thread sleeps in the kernel: its state in /proc turns to S.
        try await waitUntil("the thread inside its wait") {
            guard let entry = thread.withLock({ $0 }),
                  let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(after: close)...].split(separator: " ").first == "S"
        }
        watch.wake()
        try await waitUntil("the wait's end", timeout: .seconds(10)) { ended.withLock { $0 } }
        #expect(ended.withLock { $0 }, "the wait outlived its wake-up")
    }

    @Test func aWaitWithTransfersRunningLastsASecondAtMost() async {
        let watch = CurlSocketWatch()
        // On a thread of its own, as the loop's: a second's block of one of the pool's few
        // threads would hold up the tests running beside this one.
        let waited = await withCheckedContinuation { (done: CheckedContinuation<Duration, Never>) in
            Thread {
                var ready: [CurlSocketWatch.Ready] = []
                let started = ContinuousClock.now
                watch.wait(idle: false, into: &ready)
                done.resume(returning: ContinuousClock.now - started)
            }.start()
        }
        // Not at once (nothing woke it: no spinning), and not for the idle hour.
        #expect(waited >= .milliseconds(500) && waited < .seconds(5))
        #expect(!watch.takeDueTimer(), "no timer was asked for")
    }

    @Test func aLoopDrivesManyTransfersAtOnceToTheirEnds() async throws {
        // Sixty transfers to one host at once, over its six connections: sockets are opened,
        // watched, reused and closed many times in one run of the loop.
        let server = try FixtureServer()
        let client = CurlHTTPClient.started()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<60 {
                group.addTask {
                    let request = HTTPRequest(url: server.url("/feed/\(index).xml"), deadline: .now + .seconds(30))
                    return try await client.execute(request).status
                }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(server.requests(to: "/feed/59.xml").count == 1)
    }
}
