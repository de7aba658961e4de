import Foundation

/// Where fetchrun reads the time and waits for it.
///
/// A rule about time — a fetch's deadline and its pauses, per-host spacing and `Retry-After`,
/// the circuit breaker, the outbox's backoff, leases and schedules — asks the clock it was
/// given, never `ContinuousClock.now` or `Date()` itself. ``SystemClock`` is the one fetchrun
/// runs on; a test hands in a clock that moves only when the test says so, and a rule about
/// an hour is checked in microseconds.
///
/// The contract:
/// - ``now`` never goes back. ``date`` is the calendar time at ``now``: what is recorded or
///   shown reads it (a set system clock may move it; nothing measures with it).
/// - ``sleep(until:)`` returns once ``now`` has reached `deadline`, or throws
///   `CancellationError` as soon as the calling task is cancelled, leaving nothing behind.
/// - An alarm (``schedule(at:_:)``) calls `fire`, with its number, once ``now`` has reached
///   its time, unless ``cancel(_:)`` comes first. `fire` runs on a thread of the clock's and
///   must return at once. Once called the alarm stays armed until cancelled, so that `fire`
///   may ``reschedule(_:at:)`` it.
package protocol FetchClock: Sendable {
    var now: ContinuousClock.Instant { get }
    var date: Date { get }
    func sleep(until deadline: ContinuousClock.Instant) async throws
    func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable (_ alarm: Int) -> Void) -> Int
    func reschedule(_ alarm: Int, at deadline: ContinuousClock.Instant)
    func cancel(_ alarm: Int)
}

extension FetchClock {
    /// Returns after `duration` on this clock (see ``sleep(until:)``).
    package func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }

    /// The calendar time `duration` from now on this clock.
    package func date(after duration: Duration) -> Date {
        date.addingTimeInterval(duration.seconds)
    }
}

/// The system's time: `ContinuousClock` and `Date`, with sleeps and alarms on
/// ``DeadlineTimer/shared`` (one thread for every deadline of the process).
package struct SystemClock: FetchClock {
    package init() {}

    package var now: ContinuousClock.Instant { .now }
    package var date: Date { Date() }

    package func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await DeadlineTimer.shared.sleep(until: deadline)
    }

    package func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable (_ alarm: Int) -> Void) -> Int {
        DeadlineTimer.shared.schedule(at: deadline, fire)
    }

    package func reschedule(_ alarm: Int, at deadline: ContinuousClock.Instant) {
        DeadlineTimer.shared.reschedule(alarm, at: deadline)
    }

    package func cancel(_ alarm: Int) {
        DeadlineTimer.shared.cancel(alarm)
    }
}
