import FetchRunMonitor
import Testing
import TestSupport

/// What a watch or worker tells systemd (``ServiceStatus``), read back from a real notify socket.
@Suite struct ServiceStatusTests {
    @Test func readyThenWatchdogPingsThenStoppingAndNothingAfter() async throws {
        let receiver = try NotifyReceiver()
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.path, "WATCHDOG_USEC": "800000"]))
        let clock = TestClock()
        let status = ServiceStatus(sources: 2, clock: clock)
        let interval = try #require(notifier.watchdogInterval)
        #expect(interval == .milliseconds(400))
        status.turned(every: interval, notifying: notifier)
        // Turns closer than half the interval owe nothing.
        clock.advance(by: interval / 2 - .milliseconds(1))
        status.turned(every: interval, notifying: notifier)
        clock.advance(by: .milliseconds(1))
        status.fetched("a", failed: true)
        status.turned(every: interval, notifying: notifier)
        status.notify(notifier, last: true) { _ in "STOPPING=1\nSTATUS=stopping" }
        // The loop turns once more while the command stops, and a reload's verdict comes late.
        clock.advance(by: interval / 2)
        status.turned(every: interval, notifying: notifier)
        status.notify(notifier) { "READY=1\nSTATUS=" + $0 }
        let messages = receiver.messages()
        #expect(NotifyReceiver.kinds(messages) == ["READY=1", "WATCHDOG=1", "STOPPING=1"], "\(messages)")
        #expect(messages.first == "READY=1\nSTATUS=2 sources, 0 failing, 0 fetches")
        #expect(messages.dropFirst().first == "WATCHDOG=1\nSTATUS=2 sources, 1 failing, 1 fetches")
    }

    @Test func withoutTheWatchdogTurnsStillUpdateTheStatus() async throws {
        let receiver = try NotifyReceiver()
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.path]))
        #expect(notifier.watchdogInterval == nil)
        let clock = TestClock()
        let status = ServiceStatus(sources: 1, clock: clock)
        status.outboxPending(3)
        status.turned(every: .milliseconds(10), notifying: notifier)
        clock.advance(by: .milliseconds(5))
        status.turned(every: .milliseconds(10), notifying: notifier)
        #expect(receiver.messages() == ["READY=1\nSTATUS=1 sources, 0 failing, 3 pending deliveries, 0 fetches", "STATUS=1 sources, 0 failing, 3 pending deliveries, 0 fetches"])
    }
}
