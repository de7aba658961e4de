import Foundation
import Logging

/// Sends what waits in the outbox through the configured outputs, and marks what was sent.
///
/// Per output, batch by batch: claim the due rows (so that a `run` and a `watch` on one state
/// directory never send one row at once), send them, mark them sent — or failed, each row to be
/// tried again after its own backoff, and given up after its output's ``OutputConfig/GiveUp``.
/// A destination that does not answer ends the output's pass (its rows wait for it); one that
/// refuses particular rows does not hold the others. The other outputs go on either way. An
/// output with a ``DigestSchedule`` sends nothing until its schedule's first time after the
/// oldest delivery waiting for it, then everything due at once.
/// Nothing here fails a fetch: delivery is not the fetch.
package struct OutboxDelivery: Sendable {
    /// What one pass did for one output.
    package struct Result: Sendable, Hashable {
        package var output: String
        package var delivered: Int
        package var failed: Int
        /// Of the failed ones, how many were given up.
        package var givenUp = 0
        /// Why the last attempt failed, if it did.
        package var error: String?
        /// The output's service asked for nothing before this (HTTP 429 or 503 with a wait):
        /// its deliveries wait until then, this pass's included.
        package var heldUntil: Date?
        /// The output collects for a digest (``DigestSchedule``): what waits goes at this time.
        package var digestAt: Date?
    }

    package var outputs: [OutputConfig]
    package var database: any OutboxStore
    package var http: any HTTPExchange
    /// Where the deliveries' outcomes are counted.
    package var metrics: FetchMetrics
    /// The time of retries, backoffs, holds and give-up ages.
    package var clock: any FetchClock
    package var logger: Logger

    /// A sent delivery is remembered this long, so that an item seen again (after the snapshot
    /// let go of it) is not sent twice.
    package static let deliveredRetention: TimeInterval = 30 * 86_400

    package init(
        outputs: [OutputConfig], database: any OutboxStore, http: any HTTPExchange, metrics: FetchMetrics = .none, clock: any FetchClock = SystemClock(),
        logger: Logger = Logger(label: "fetchrun.outputs")
    ) {
        self.outputs = outputs
        self.database = database
        self.http = http
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }

    /// Sends every due delivery of every output (only `name` when given), outputs side by side.
    /// - Parameters:
    ///   - ignoringBackoff: send what failed before without waiting for its retry time: a
    ///     one-shot `run` is itself the next occasion (watch mode keeps the backoff).
    ///   - sendingDigestsNow: send what an output collects for its digest without waiting for
    ///     the digest's time (`outputs --retry --force`).
    /// - Returns: a result per output that had something to send.
    /// - Cancellation: sending stops; what was not marked sent stays pending.
    ///   A service's own request to wait (``OutputHold``) is kept all the same.
    package func deliverDue(only name: String? = nil, ignoringBackoff: Bool = false, sendingDigestsNow: Bool = false) async -> [Result] {
        let clock = clock
        let now: @Sendable () -> Date = { clock.date }
        let holds: [String: OutputHold]
        do {
            holds = try await database.outputHolds()
        } catch {
            logger.error("the outputs' holds could not be read: \(error)")
            holds = [:]
        }
        return await withTaskGroup(of: Result?.self) { group in
            for output in outputs where name == nil || output.name == name {
                let hold = holds[output.name].flatMap { $0.notBefore > now() ? $0 : nil }
                group.addTask { await deliver(output, held: hold, ignoringBackoff: ignoringBackoff, digest: sendingDigestsNow ? nil : output.digest, now: now) }
            }
            var results: [Result] = []
            for await result in group { if let result { results.append(result) } }
            return results.sorted { $0.output < $1.output }
        }
    }

    /// - Parameter digest: the schedule the output's deliveries wait for; `nil` sends them now.
    private func deliver(_ config: OutputConfig, held hold: OutputHold?, ignoringBackoff: Bool, digest: DigestSchedule?, now: @Sendable () -> Date) async -> Result? {
        var result = Result(output: config.name, delivered: 0, failed: 0)
        var logger = logger
        logger[metadataKey: "output"] = "\(config.name)"
        if let hold {
            // Said only when something waits for it.
            guard (try? await database.nextDeliveryDue(for: [config.name])) ?? nil != nil else { return nil }
            result.heldUntil = hold.notBefore
            result.error = hold.reason
            return result
        }
        if let digest {
            // Collected until the schedule's first time after the oldest delivery that waits.
            do {
                guard let oldest = try await database.oldestUndelivered(for: config.name) else { return nil }
                let at = digest.next(after: oldest)
                guard now() >= at else {
                    result.digestAt = at
                    return result
                }
            } catch {
                logger.error("\(error)")
                result.error = "\(error)"
                return result
            }
        }
        // The pass walks the queue once, oldest first: rows it tried are behind the cursor, so
        // ignoring the backoff never sends one row twice in a pass.
        var cursor: Int64 = 0
        while !Task.isCancelled {
            let batch: [PendingDelivery]
            do {
                batch = try await database.claimDue(for: config.name, limit: config.output.batchSize, at: now(), dueBy: ignoringBackoff ? .distantFuture : nil, after: cursor)
            } catch {
                logger.error("\(error)")
                result.error = "\(error)"
                break
            }
            guard let last = batch.last else { break }
            cursor = last.row
            guard await send(batch, through: config, result: &result, logger: logger, now: now) else { break }
        }
        if result.delivered > 0 {
            do {
                try await database.pruneDelivered(before: now().addingTimeInterval(-Self.deliveredRetention))
            } catch {
                logger.warning("sent deliveries not pruned: \(error)")
            }
        }
        for (outcome, count) in [("delivered", result.delivered), ("failed", result.failed - result.givenUp), ("given_up", result.givenUp)] where count > 0 {
            metrics.recordDeliveries(count, output: config.name, outcome: outcome)
        }
        return result.delivered + result.failed > 0 || result.error != nil ? result : nil
    }

    /// Sends one claimed batch and marks each row. A batch the destination refused for what it
    /// carries is sent again one row at a time, so the rows it can take go through and only the
    /// ones it refuses wait.
    /// - Returns: whether the pass goes on (the destination is answering).
    private func send(_ batch: [PendingDelivery], through config: OutputConfig, result: inout Result, logger: Logger, now: @Sendable () -> Date) async -> Bool {
        do {
            if let file = config.output as? any HistoryOutput {
                try await write(file, of: config, at: now())
            } else {
                try await config.output.send(batch.map(\.delivery), through: http)
            }
            try await database.markDelivered(batch.map(\.row), at: now())
            result.delivered += batch.count
            logger.info("sent \(batch.count) deliver\(batch.count == 1 ? "y" : "ies")")
            return true
        } catch is CancellationError {
            // Claims lapse by themselves; the rows stay pending.
            return false
        } catch let error as OutputError where error.scope == .deliveries && batch.count > 1 {
            logger.info("batch of \(batch.count) refused (\(error)); sending them one at a time")
            for (index, row) in batch.enumerated() {
                guard await send([row], through: config, result: &result, logger: logger, now: now) else {
                    // The destination stopped answering: the rows not tried yet wait with it.
                    await markFailed(Array(batch[(index + 1)...]), of: config, error: result.error ?? "\(error)", retryAfter: error.retryAfter, result: &result, logger: logger, now: now)
                    return false
                }
            }
            return true
        } catch {
            let message = "\(error)"
            logger.warning("not sent: \(message)")
            await markFailed(batch, of: config, error: message, retryAfter: (error as? OutputError)?.retryAfter, result: &result, logger: logger, now: now)
            return (error as? OutputError)?.scope == .deliveries
        }
    }

    /// Writes an output that holds the history's newest records of its sources, of the kinds
    /// its events ask for: the deliveries due for it are what says it changed.
    private func write(_ file: any HistoryOutput, of config: OutputConfig, at now: Date) async throws {
        guard let history = database as? any HistoryStore else {
            throw OutputError("this state store keeps no history to write \(config.name) from")
        }
        var kinds: Set<ChangeRecord.Kind> = []
        if config.events.contains(.items) { kinds.formUnion([.item, .change, .moved]) }
        if config.events.contains(.failures) { kinds.formUnion([.failing, .recovered]) }
        let sources = config.historySources
        // No source sends to it: nothing to list (an empty list would ask for every source).
        let records = sources == [] ? [] : try await history.history(HistoryQuery(sources: sources ?? [], kinds: kinds, limit: file.entries))
        try file.write(records, at: now)
    }

    /// Records a failed attempt for `rows`: each due again after its own backoff (or the
    /// destination's `retryAfter`, when longer), or given up once it passed its output's
    /// attempts and age.
    private func markFailed(_ rows: [PendingDelivery], of config: OutputConfig, error message: String, retryAfter: Duration? = nil, result: inout Result, logger: Logger, now: @Sendable () -> Date) async {
        guard !rows.isEmpty else { return }
        let failedAt = now()
        let marks = rows.map { row -> (row: Int64, retryAt: Date?) in
            let attempts = row.attempts + 1
            if config.giveUp.givesUp(attempts: attempts, createdAt: row.createdAt, at: failedAt) {
                logger.error("gave up on \(row.delivery.id) after \(attempts) attempts since \(row.createdAt): \(message); `fetchrun outputs --retry --given-up` sends it again")
                return (row.row, nil)
            }
            let asked = retryAfter.map { Double(min($0, HTTPResponse.longestRetryAfter).components.seconds) } ?? 0
            return (row.row, failedAt.addingTimeInterval(max(Self.retryDelay(afterAttempts: attempts), asked)))
        }
        do {
            try await database.markFailed(marks, error: message, at: failedAt)
            if let retryAfter {
                // Every row behind these waits too, in this process and the next.
                let until = failedAt.addingTimeInterval(Double(min(retryAfter, HTTPResponse.longestRetryAfter).components.seconds))
                try await database.holdOutput(config.name, until: until, reason: message)
                result.heldUntil = until
            }
        } catch {
            logger.error("failed attempt not recorded: \(error)")
        }
        result.failed += rows.count
        result.givenUp += marks.count(where: { $0.retryAt == nil })
        result.error = message
    }

    /// When the next delivery of any output is due: its soonest waiting row's time, or its
    /// service's hold or its digest's time when that is later; `nil` when nothing waits.
    package func nextDue() async throws -> Date? {
        let holds = try await database.outputHolds()
        var soonest: Date?
        for output in outputs {
            guard var due = try await database.nextDeliveryDue(for: [output.name]) else { continue }
            if let digest = output.digest, let oldest = try await database.oldestUndelivered(for: output.name) {
                due = max(due, digest.next(after: oldest))
            }
            let at = max(due, holds[output.name]?.notBefore ?? due)
            soonest = min(soonest ?? at, at)
        }
        return soonest
    }

    /// When a row that failed is tried again: 30 s after the first failure, doubling, at most an hour.
    package static func retryDelay(afterAttempts attempts: Int) -> TimeInterval {
        min(30 * pow(2, Double(min(max(attempts, 1), 12) - 1)), 3600)
    }
}
