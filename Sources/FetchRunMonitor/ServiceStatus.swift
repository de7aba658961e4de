import FetchRunKit
import Synchronization

/// What systemd's `STATUS=` says of a watch or worker, and when its notifications are due.
///
/// Every notification goes through here and is sent while the state is held, so systemd hears
/// them in the order they were decided, and hears nothing after `STOPPING=1` — a loop that turns
/// once more while the command stops must not ping the watchdog of a unit that is going away.
package final class ServiceStatus: Sendable {
    private struct State {
        var sources: Int
        var failing: Set<String> = []
        var fetches = 0
        var pending: Int?
        var readySent = false
        var lastPing: ContinuousClock.Instant?
        var stopped = false

        /// `N sources, F failing, P pending deliveries, X fetches`.
        var summary: String {
            "\(sources) sources, \(failing.count) failing" + (pending.map { ", \($0) pending deliveries" } ?? "") + ", \(fetches) fetches"
        }
    }
    private let state: Mutex<State>
    /// The time of the watchdog's pings.
    private let clock: any FetchClock

    package init(sources: Int, clock: any FetchClock = SystemClock()) {
        state = Mutex(State(sources: sources))
        self.clock = clock
    }

    /// A fetch ended: its source is failing or not.
    package func fetched(_ name: String, failed: Bool) {
        state.withLock { state in
            state.fetches += 1
            if failed { state.failing.insert(name) } else { state.failing.remove(name) }
        }
    }

    /// The config now names `count` sources (after a reload).
    package func sourcesChanged(to count: Int) {
        state.withLock { $0.sources = count }
    }

    /// The outbox holds `count` deliveries not yet made nor given up.
    package func outboxPending(_ count: Int) {
        state.withLock { $0.pending = count }
    }

    /// Sends the message `compose` makes of the summary, unless `STOPPING=1` has gone; with
    /// `last`, nothing is sent after this one.
    package func notify(_ notifier: SystemdNotifier, last: Bool = false, _ compose: (String) -> String) {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = last
            // Sending never blocks (a non-blocking datagram), so holding the state is brief.
            notifier.send(compose(state.summary))
        }
    }

    /// What a turn of the loop owes systemd, sent: `READY=1` at the first, then `WATCHDOG=1`
    /// (when the watchdog watches) with the status at most every half turn interval — a loop that
    /// turns at least once per interval pings at least once per one and a half.
    package func turned(every interval: Duration, notifying notifier: SystemdNotifier) {
        let now = clock.now
        state.withLock { state in
            guard !state.stopped else { return }
            if !state.readySent {
                state.readySent = true
                state.lastPing = now
                notifier.send("READY=1\nSTATUS=" + state.summary)
                return
            }
            guard let last = state.lastPing, now - last >= interval / 2 else { return }
            state.lastPing = now
            notifier.send((notifier.watchdogInterval != nil ? "WATCHDOG=1\n" : "") + "STATUS=" + state.summary)
        }
    }
}
