import FetchRunCore
/// fetchrun's own per-host queue: which request may start now, for each host.
///
/// curl can limit connections per host too, but a transfer queued inside curl is already
/// running against its deadline, and nothing outside curl can see that it waits. Here the wait
/// happens before the request exists: the caller learns how long it waited (and moves the
/// fetch's deadline by as much, see ``FetchDeadline``), and the wait has a bound of its own.
///
/// Per host (scheme, name and port), a request may start when:
/// - fewer than `perHost` requests are in flight — or `perHost × streamsPerConnection` once
///   the host has answered over HTTP/2, whose connections carry many requests at once;
/// - `minDelay` has passed since the previous request to the host started;
/// - the host is not backing off: a 429 or 503 with `Retry-After` holds back every request to
///   that host until then, not only the one that got it.
///
/// Requests start in the order they asked. A request that would wait longer than
/// `queueTimeout` fails instead (at once when the host's back-off alone outlasts it).
///
/// A circuit breaker per host: after ``Breaker/threshold`` requests in a row that got nothing
/// from the host (refused, or no byte of an answer before their deadline) while nothing else
/// was heard from it since they were sent, the host is *open*: every request waiting for it,
/// and every new one, fails at once (``Refusal/unreachable(host:failures:skipped:)``) rather
/// than wait out a deadline each. From the first silent request on, no new one starts while
/// others are out (*suspect*), so the round that opens the breaker is the only one that waits.
/// After ``Breaker/openFor(trips:first:)`` one request is let through to try it (*half-open*): an
/// answer closes the breaker, silence opens it again for twice as long.
///
/// A URL that went silent while its host answered others hangs on its own, and is remembered
/// as such (``Breaker/hangingURLs`` per host) until it answers: its silence no longer counts,
/// so it can neither open the breaker — not even while the host is suspect, when requests go
/// one at a time and no other answer can come to clear it — nor fail a half-open try.
actor HostScheduler {
    /// The breaker's rules, documented in the README.
    enum Breaker {
        /// Requests in a row that got nothing from the host before it is skipped.
        static let threshold = 3
        /// How many URLs known to hang on their own a host remembers; past that, the silence
        /// of others counts again (a host where everything hangs is the breaker's business).
        static let hangingURLs = 64

        /// How long the host is skipped after its `trips`-th opening in a row: `first` (30 s),
        /// doubling, at most 10 minutes.
        static func openFor(trips: Int, first: Duration = .seconds(30)) -> Duration {
            min(first * (1 << min(max(trips, 1) - 1, 5)), .seconds(600))
        }
    }

    /// What a released request learned about its host, for the breaker.
    enum Answer: Sendable {
        /// Some answer came (any status, even an error): the host is there.
        case answered
        /// Refused, or nothing at all before the deadline.
        case silent
        /// Ended for a reason that says nothing about the host (cancelled, a local error).
        case unknown
    }
    struct Limits: Sendable {
        var perHost: Int
        var streamsPerConnection: Int
        var minDelay: Duration
        var queueTimeout: Duration
        /// How long the breaker's first opening lasts (``Breaker/openFor(trips:first:)``).
        var breakerOpening: Duration = .seconds(30)
    }

    /// Why a request was not let through.
    enum Refusal: Error, Sendable {
        /// It waited `queueTimeout` for a slot.
        case queueTimeout(host: String, waited: Duration)
        /// The host asked every client to wait (`Retry-After`) until past the queue's bound.
        case backingOff(host: String, remaining: Duration, status: Int)
        /// The host's breaker is open: `failures` requests in a row got nothing from it, and
        /// `skipped` requests (this one among them) were failed without being sent.
        case unreachable(host: String, failures: Int, skipped: Int)
    }

    /// A slot held by one request; give it back with ``release(_:multiplexed:retryAfter:status:)``.
    struct Permit: Sendable {
        let host: String
        /// How long the request waited for the slot.
        let waited: Duration
        /// When the slot was given: an answer from the host after it clears this request's
        /// silence of blame (see ``release(_:multiplexed:retryAfter:status:answer:)``).
        let granted: ContinuousClock.Instant
        /// The request's URL, for remembering the ones that hang on their own; `nil` when the
        /// caller does not say.
        var url: String?
    }

    private struct Waiter {
        let id: UInt64
        let asked: ContinuousClock.Instant
        let url: String?
        let continuation: CheckedContinuation<Permit, any Error>
    }

    private struct Host {
        var inFlight = 0
        var multiplexes = false
        var lastStart: ContinuousClock.Instant?
        var backoffUntil: ContinuousClock.Instant?
        var backoffStatus = 0
        var waiters: [Waiter] = []
        /// When a wake-up is already scheduled for this host's queue.
        var wakeAt: ContinuousClock.Instant?
        /// Requests in a row that got nothing from the host.
        var silentInARow = 0
        /// When a request last got an answer from the host.
        var lastAnswer: ContinuousClock.Instant?
        /// URLs that went silent while the host answered others (at most
        /// ``Breaker/hangingURLs``), until they answer.
        var hangingURLs: Set<String> = []
        /// The breaker: open until then (skip every request); `nil` when closed.
        var openUntil: ContinuousClock.Instant?
        /// Openings since the host last answered.
        var trips = 0
        /// Requests failed without being sent since the breaker last opened.
        var skipped = 0
        /// A half-open try is in flight: the others wait for its outcome.
        var probing = false

        func isOpen(at now: ContinuousClock.Instant) -> Bool {
            openUntil.map { now < $0 } ?? false
        }
    }

    let limits: Limits
    /// Every rule here is about time on this clock: spacing, back-off, queue bounds, the breaker.
    let clock: any FetchClock
    private var hosts: [String: Host] = [:]
    private var nextID: UInt64 = 0

    init(limits: Limits, clock: any FetchClock) {
        self.limits = limits
        self.clock = clock
    }

    /// Waits for a slot on `host`.
    /// - Parameters:
    ///   - url: the request's URL, which the breaker remembers if it hangs on its own.
    ///   - multiplexes: the caller knows the host speaks HTTP/2 (prior knowledge).
    /// - Throws: ``Refusal`` past the queue's bound or the host's back-off;
    ///   `CancellationError` when the calling task is cancelled while waiting (the place in
    ///   the queue is given up at once).
    func acquire(host key: String, url: String? = nil, multiplexes: Bool = false) async throws -> Permit {
        try Task.checkCancellation()
        let now = clock.now
        var host = hosts[key] ?? Host()
        if multiplexes { host.multiplexes = true }
        if let until = host.backoffUntil, until - now > limits.queueTimeout {
            hosts[key] = host
            throw Refusal.backingOff(host: key, remaining: until - now, status: host.backoffStatus)
        }
        if host.isOpen(at: now) {
            host.skipped += 1
            hosts[key] = host
            throw Refusal.unreachable(host: key, failures: host.silentInARow, skipped: host.skipped)
        }
        if host.waiters.isEmpty, blockedUntil(host, now: now) == nil, host.inFlight < capacity(host) {
            host.inFlight += 1
            host.lastStart = now
            if host.trips > 0 { host.probing = true }
            hosts[key] = host
            return Permit(host: key, waited: .zero, granted: now, url: url)
        }
        hosts[key] = host
        let id = nextID
        nextID += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                hosts[key, default: Host()].waiters.append(Waiter(id: id, asked: now, url: url, continuation: continuation))
                pump(key)
            }
        } onCancel: {
            Task { await self.cancel(id, host: key) }
        }
    }

    /// Gives a slot back. What the response showed teaches the queue about the host: that it
    /// multiplexes (HTTP/2), that it asked to be left alone for `retryAfter`, or (`answer`)
    /// whether it answered at all, for its breaker.
    func release(_ permit: Permit, multiplexed: Bool, retryAfter: Duration?, status: Int, answer: Answer = .answered) {
        guard var host = hosts[permit.host] else { return }
        host.inFlight -= 1
        let now = clock.now
        var answer = answer
        if answer == .silent {
            if let answered = host.lastAnswer, answered > permit.granted {
                // A host that answered another request after this one was sent is there: this
                // one's silence is its URL's (an endpoint that hangs), not the host's. Without
                // this, a few hanging URLs ending together would cut off a host that answers
                // everything else.
                answer = .unknown
                if let url = permit.url, host.hangingURLs.count < Breaker.hangingURLs { host.hangingURLs.insert(url) }
            } else if let url = permit.url, host.hangingURLs.contains(url) {
                // Known to hang: the same, though nothing else could answer meanwhile (while
                // suspect, or as the half-open try).
                answer = .unknown
            }
        }
        switch answer {
        case .answered:
            if let url = permit.url { host.hangingURLs.remove(url) }
            host.lastAnswer = now
            host.silentInARow = 0
            host.trips = 0
            host.openUntil = nil
            host.probing = false
        case .silent:
            host.silentInARow += 1
            // A failed try reopens at once; otherwise the threshold opens it.
            if host.probing || (host.silentInARow >= Breaker.threshold && !host.isOpen(at: now)) {
                host.trips += 1
                host.openUntil = now + Breaker.openFor(trips: host.trips, first: limits.breakerOpening)
                host.skipped = 0
                host.probing = false
            }
        case .unknown:
            if host.probing { host.probing = false }
        }
        if multiplexed { host.multiplexes = true }
        if let retryAfter, retryAfter > .zero {
            let until = now + retryAfter
            if host.backoffUntil.map({ until > $0 }) ?? true {
                host.backoffUntil = until
                host.backoffStatus = status
            }
        }
        hosts[permit.host] = host
        pump(permit.host)
    }

    /// Requests waiting for a slot on `key`.
    func waiting(on key: String) -> Int {
        hosts[key]?.waiters.count ?? 0
    }

    /// The host's connections carry several requests at once (seen before any response).
    func learnedMultiplexing(on key: String) {
        guard hosts[key]?.multiplexes != true else { return }
        hosts[key, default: Host()].multiplexes = true
        pump(key)
    }

    private func capacity(_ host: Host) -> Int {
        // Half-open: one try at a time, until it says whether the host is back.
        if host.trips > 0 { return host.probing ? 0 : 1 }
        // Suspect (a request got nothing): no new request while others are out — they will
        // answer, or open the breaker —, so a dead host costs one round of deadlines, not two.
        if host.silentInARow > 0 { return 1 }
        return host.multiplexes ? limits.perHost * limits.streamsPerConnection : limits.perHost
    }

    /// When the host may next start a request for reasons of time (spacing, back-off); `nil` now.
    private func blockedUntil(_ host: Host, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var until: ContinuousClock.Instant?
        if limits.minDelay > .zero, let last = host.lastStart, last + limits.minDelay > now { until = last + limits.minDelay }
        if let backoff = host.backoffUntil, backoff > now { until = max(until ?? backoff, backoff) }
        return until
    }

    /// Lets waiters through while the host allows, fails those past their bound, and schedules
    /// the next look when time (spacing, back-off, a waiter's bound) is what holds the queue.
    private func pump(_ key: String) {
        guard var host = hosts[key] else { return }
        let now = clock.now
        var resumed: [(CheckedContinuation<Permit, any Error>, Result<Permit, any Error>)] = []
        if host.isOpen(at: now), !host.waiters.isEmpty {
            // Everything queued for a host that does not answer fails now, all together.
            host.skipped += host.waiters.count
            let refusal = Refusal.unreachable(host: key, failures: host.silentInARow, skipped: host.skipped)
            resumed += host.waiters.map { ($0.continuation, .failure(refusal)) }
            host.waiters.removeAll()
        }
        while let first = host.waiters.first {
            let giveUp = first.asked + limits.queueTimeout
            if let backoff = host.backoffUntil, backoff > giveUp {
                host.waiters.removeFirst()
                resumed.append((first.continuation, .failure(Refusal.backingOff(host: key, remaining: backoff - now, status: host.backoffStatus))))
                continue
            }
            if giveUp <= now {
                host.waiters.removeFirst()
                resumed.append((first.continuation, .failure(Refusal.queueTimeout(host: key, waited: now - first.asked))))
                continue
            }
            guard blockedUntil(host, now: now) == nil, host.inFlight < capacity(host) else { break }
            host.waiters.removeFirst()
            host.inFlight += 1
            host.lastStart = now
            if host.trips > 0 { host.probing = true }
            resumed.append((first.continuation, .success(Permit(host: key, waited: now - first.asked, granted: now, url: first.url))))
        }
        if let first = host.waiters.first {
            var wake = first.asked + limits.queueTimeout
            if let until = blockedUntil(host, now: now) { wake = min(wake, until) }
            if host.wakeAt.map({ wake < $0 }) ?? true {
                host.wakeAt = wake
                let clock = clock
                Task {
                    try? await clock.sleep(until: wake)
                    self.woke(key, at: wake)
                }
            }
        }
        if host.waiters.isEmpty, host.inFlight == 0, blockedUntil(host, now: now) == nil, !host.multiplexes, host.trips == 0, host.silentInARow == 0, host.hangingURLs.isEmpty {
            // Nothing worth remembering: a watch over many hosts keeps no entry per idle host.
            hosts[key] = nil
        } else {
            hosts[key] = host
        }
        for (continuation, result) in resumed { continuation.resume(with: result) }
    }

    private func woke(_ key: String, at instant: ContinuousClock.Instant) {
        if hosts[key]?.wakeAt == instant { hosts[key]?.wakeAt = nil }
        pump(key)
    }

    private func cancel(_ id: UInt64, host key: String) {
        guard let index = hosts[key]?.waiters.firstIndex(where: { $0.id == id }),
              let waiter = hosts[key]?.waiters.remove(at: index) else { return }
        waiter.continuation.resume(throwing: CancellationError())
        pump(key)
    }
}
