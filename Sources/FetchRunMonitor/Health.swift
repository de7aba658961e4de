import FetchRunKit
import Synchronization

/// Whether a `watch` or `worker` is alive and ready, as `/healthz`, `/readyz` and systemd's
/// watchdog hear it.
///
/// Alive means the schedule loop turns: it calls ``loopTurned()`` at least every
/// ``turnInterval`` (the watcher wakes that often even with nothing due). Seen from outside, a
/// loop that has not turned for two intervals is stalled — a timer elsewhere that keeps
/// ticking proves nothing about the loop, so nothing else counts.
package final class Health: Sendable {
    /// How often the loop turns at least.
    package let turnInterval: Duration
    private struct State {
        var lastTurn: ContinuousClock.Instant?
        var notReady: String? = "the config is not loaded yet"
    }
    private let state = Mutex(State())
    private let clock: any FetchClock

    package init(turnInterval: Duration, clock: any FetchClock = SystemClock()) {
        self.turnInterval = turnInterval
        self.clock = clock
    }

    /// The loop turned now.
    package func loopTurned() {
        let now = clock.now
        state.withLock { $0.lastTurn = now }
    }

    /// Ready (`nil`), or why not: before the config is loaded, during a failed reload.
    package func setNotReady(_ reason: String?) {
        state.withLock { $0.notReady = reason }
    }

    /// `nil` while the loop turns; otherwise why it is not alive, in one line.
    package var stalled: String? {
        let lastTurn = state.withLock { $0.lastTurn }
        guard let lastTurn else { return "the schedule loop has not started" }
        let since = clock.now - lastTurn
        guard since > turnInterval * 2 else { return nil }
        return "the schedule loop has not turned for \(Int(since.components.seconds)) s (expected every \(Int(turnInterval.components.seconds)) s)"
    }

    /// Why the process is not ready, as last set; `nil` when it is.
    package var notReady: String? {
        state.withLock { $0.notReady }
    }
}
