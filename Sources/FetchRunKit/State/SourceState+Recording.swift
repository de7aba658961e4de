import Foundation

extension SourceState {
    /// Records a fetch that ended at `now` — the one rule for every store and every command:
    /// health (failures in a row, since when, the last error), what the next fetch sends back
    /// (validators, body hash), the permanent redirect seen, and when the source is due again,
    /// as ``FetchSchedule`` says: back to `interval` after new data, stretched after none,
    /// backed off after failures (Retry-After and Cache-Control honoured).
    ///
    /// A successful fetch's `validators` replace the recorded ones (`nil` keeps them: the
    /// adapter sent none back; empty ones clear them: `no-store`), and its `bodyHash` replaces
    /// the recorded one (an adapter without one clears it). A cancelled fetch — a stop, not the
    /// source's fault — is never recorded: the caller gives its lease back instead.
    ///
    /// - Parameters:
    ///   - jitter: a number in -1...1 (random in a watch) that spreads a backoff by up to ±20 %.
    /// - Returns: the wait until the next fetch; `nil` for `interval: never`.
    package mutating func record(
        _ report: SourceReport, validators: HTTPValidators?, bodyHash: String?, type: String,
        settings: SourceSettings, at now: Date, jitter: Double
    ) -> Duration? {
        var delay: Duration?
        if case .every(let interval) = settings.interval {
            var schedule = FetchSchedule(
                interval: interval, maxInterval: settings.maxInterval, maxBackoff: settings.maxBackoff,
                resuming: currentInterval, consecutiveFailures: consecutiveFailures
            )
            delay = schedule.delay(after: report.outcome, jitter: jitter, freshFor: report.freshFor)
            currentInterval = schedule.currentInterval
        }
        lastFetch = now
        lastOutcome = report.outcome.name
        appendRecent(RecentFetch(at: now, milliseconds: Int(clamping: report.duration.milliseconds), outcome: report.outcome.ordinal))
        if report.outcome.ordinal == 0, !report.isBaseline { lastChange = now }
        nextDue = delay.map { now.addingTimeInterval(Double($0.milliseconds) / 1000) }
        if let failure = report.outcome.failure {
            consecutiveFailures = min(consecutiveFailures, Int.max - 1) + 1
            failingSince = failingSince ?? now
            lastError = RecordedError(kind: failure.kind, message: failure.message, at: now)
        } else {
            consecutiveFailures = 0
            failingSince = nil
            lastSuccess = now
            itemCount = report.totalItems
            self.validators = validators ?? self.validators
            self.bodyHash = bodyHash
            self.type = type
            if let moved = report.movedTo {
                movedCount = movedTo == moved ? min(movedCount, Int.max - 1) + 1 : 1
                movedTo = moved
            } else {
                movedTo = nil
                movedCount = 0
            }
        }
        return delay
    }
}
