import Foundation
import Logging

/// Sends what waits in the outbox through the configured outputs, and marks what was sent.
///
/// Per output, batch by batch: claim the due rows (so that a `run` and a `watch` on one state
/// directory never send one row at once), send them, mark them sent — or failed, to be tried
/// again after a backoff. An output whose batch failed is left alone until its next due time;
/// the other outputs go on. Nothing here fails a fetch: delivery is not the fetch.
package struct OutboxDelivery: Sendable {
    /// What one pass did for one output.
    package struct Result: Sendable, Hashable {
        package var output: String
        package var delivered: Int
        package var failed: Int
        /// Why the last attempt failed, if it did.
        package var error: String?
    }

    package var outputs: [OutputConfig]
    package var database: any OutboxStore
    package var http: CurlHTTPClient
    package var logger: Logger

    /// A sent delivery is remembered this long, so that an item seen again (after the snapshot
    /// let go of it) is not sent twice.
    package static let deliveredRetention: TimeInterval = 30 * 86_400

    package init(outputs: [OutputConfig], database: any OutboxStore, http: CurlHTTPClient, logger: Logger = Logger(label: "fetchrun.outputs")) {
        self.outputs = outputs
        self.database = database
        self.http = http
        self.logger = logger
    }

    /// Sends every due delivery of every output (only `name` when given), outputs side by side.
    /// - Parameter ignoringBackoff: send what failed before without waiting for its retry time:
    ///   a one-shot `run` is itself the next occasion (watch mode keeps the backoff).
    /// - Returns: a result per output that had something to send.
    /// - Cancellation: sending stops; what was not marked sent stays pending.
    package func deliverDue(only name: String? = nil, ignoringBackoff: Bool = false, now: @escaping @Sendable () -> Date = { Date() }) async -> [Result] {
        await withTaskGroup(of: Result?.self) { group in
            for output in outputs where name == nil || output.name == name {
                group.addTask { await deliver(output, ignoringBackoff: ignoringBackoff, now: now) }
            }
            var results: [Result] = []
            for await result in group { if let result { results.append(result) } }
            return results.sorted { $0.output < $1.output }
        }
    }

    private func deliver(_ config: OutputConfig, ignoringBackoff: Bool, now: @Sendable () -> Date) async -> Result? {
        let output = config.output
        var result = Result(output: config.name, delivered: 0, failed: 0)
        var logger = logger
        logger[metadataKey: "output"] = "\(config.name)"
        while !Task.isCancelled {
            let batch: [PendingDelivery]
            do {
                // A failed batch ends the pass for this output, so ignoring the backoff never
                // sends one row twice in a pass.
                batch = try await database.claimDue(for: config.name, limit: output.batchSize, at: now(), dueBy: ignoringBackoff ? .distantFuture : nil)
            } catch {
                logger.error("\(error)")
                result.error = "\(error)"
                break
            }
            guard !batch.isEmpty else { break }
            do {
                try await output.send(batch.map(\.delivery), through: http)
                try await database.markDelivered(batch.map(\.row), at: now())
                result.delivered += batch.count
                logger.info("sent \(batch.count) deliver\(batch.count == 1 ? "y" : "ies")")
            } catch is CancellationError {
                // Claims lapse by themselves; the rows stay pending.
                break
            } catch {
                let message = "\(error)"
                logger.warning("not sent: \(message)")
                let failedAt = now()
                try? await database.markFailed(batch.map { ($0.row, failedAt.addingTimeInterval(Self.retryDelay(afterAttempts: $0.attempts + 1))) }, error: message, at: failedAt)
                result.failed += batch.count
                result.error = message
                break
            }
        }
        if result.delivered > 0 {
            do {
                try await database.pruneDelivered(before: now().addingTimeInterval(-Self.deliveredRetention))
            } catch {
                logger.warning("sent deliveries not pruned: \(error)")
            }
        }
        return result.delivered + result.failed > 0 || result.error != nil ? result : nil
    }

    /// When a row that failed is tried again: 30 s after the first failure, doubling, at most an hour.
    package static func retryDelay(afterAttempts attempts: Int) -> TimeInterval {
        min(30 * pow(2, Double(min(max(attempts, 1), 12) - 1)), 3600)
    }
}
