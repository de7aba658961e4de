import Foundation
import Logging
import ServiceLifecycle

/// Watch mode's sender: delivers the outbox when a fetch has put something in it (``wake()``)
/// and when a failed delivery's retry comes due; sleeps otherwise — no polling.
package actor DeliveryService: Service {
    private var delivery: OutboxDelivery
    private var waiter: CheckedContinuation<Void, Never>?
    /// True at the start too: rows an earlier process left are due now or at their retry time.
    private var woken = true
    private var stopping = false
    /// Each pass's results, for the watch's output; finishes when ``run()`` returns.
    package nonisolated let results: AsyncStream<[OutboxDelivery.Result]>
    private let resultSink: AsyncStream<[OutboxDelivery.Result]>.Continuation

    package init(delivery: OutboxDelivery) {
        self.delivery = delivery
        (results, resultSink) = AsyncStream<[OutboxDelivery.Result]>.makeStream()
    }

    /// Sends through `outputs` from now on (a reloaded config's). A pass in progress finishes
    /// with the outputs it started with; rows of an output no longer configured stay pending.
    package func use(outputs: [OutputConfig]) {
        delivery.outputs = outputs
        signal()
    }

    /// Something new is in the outbox. Safe from any task; never waits.
    public nonisolated func wake() {
        Task { await self.signal() }
    }

    private func signal() {
        woken = true
        waiter?.resume()
        waiter = nil
    }

    private func stop() {
        stopping = true
        signal()
    }

    /// Delivers until a graceful shutdown (or cancellation); a pass in progress finishes its
    /// current batch's bookkeeping, and what was not sent stays pending for the next start.
    public func run() async throws {
        defer { resultSink.finish() }
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                // When each output's collected digest was last said to go: said once, not at
                // every pass that finds it still waiting.
                var announced: [String: Date] = [:]
                while !stopping {
                    if !woken { await sleepUntilWoken(due: try? await delivery.nextDue()) }
                    if stopping { break }
                    woken = false
                    let results = await delivery.deliverDue().filter { result in
                        guard let at = result.digestAt, result.delivered == 0, result.failed == 0, result.error == nil else { return true }
                        defer { announced[result.output] = at }
                        return announced[result.output] != at
                    }
                    if !results.isEmpty { resultSink.yield(results) }
                }
            } onCancel: {
                Task { await self.stop() }
            }
        } onGracefulShutdown: {
            Task { await self.stop() }
        }
    }

    /// Returns on ``wake()``, on stopping, or at `due` (a retry's time).
    private func sleepUntilWoken(due: Date?) async {
        let timer = due.map { due in
            Task { [weak self] in
                guard let clock = await self?.delivery.clock else { return }
                let wait = Duration.milliseconds(Int64(min(max(0, due.timeIntervalSince(clock.date)), 86_400) * 1000))
                do {
                    try await clock.sleep(for: wait)
                    await self?.signal()
                } catch {}
            }
        }
        if !woken, !stopping {
            await withCheckedContinuation { waiter = $0 }
        }
        timer?.cancel()
    }
}
