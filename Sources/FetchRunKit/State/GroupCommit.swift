/// Group commit, for both state stores: the writes asked for while a batch is being written
/// wait together and go in the next batch — one transaction (SQLite) or one statement
/// (PostgreSQL) for all of them.
///
/// A run of a thousand sources would otherwise commit thousands of times, each commit taking
/// the database's locks and a round trip or a WAL append; this way a busy process writes a few
/// batches a second and a lone write waits for nothing — no timer, no added delay. A batch the
/// database refuses is written again one write at a time, so that one bad row fails only its
/// own caller.
///
/// The store passes its batch writer with each write rather than once at the start, so that
/// it can keep its group commit in a `let` and reach it without first hopping onto its own
/// executor: a fetch's lease and its commit each went to the store's thread, to this actor,
/// back to the store's thread and back to the pool — hops that each woke a thread.
///
/// Batches start small after a pause and double while writes keep coming (``firstBatch``,
/// then twice as many, up to ``maxBatch``): a burst of hundreds of leases at the start of a
/// run would otherwise come back all together, after one long transaction, and nothing would
/// reach the network until then; this way the first few come back at once and their fetches
/// start while the rest are written. A steady stream still goes in batches of ``maxBatch``.
package actor GroupCommit<Write: Sendable, Outcome: Sendable> {
    private let firstBatch: Int
    private let maxBatch: Int
    /// Writes not yet written, in order, and who waits for each (by ticket): a waiter that is
    /// cancelled leaves at once, whether or not its write is under way.
    private var queued: [(ticket: Int, write: Write)] = []
    private var waiters: [Int: CheckedContinuation<Outcome, any Error>] = [:]
    private var nextTicket = 0
    private var writing = false

    /// Writes waiting for a batch (not counting those being written).
    package var queuedCount: Int { queued.count }

    /// - Parameters:
    ///   - firstBatch: the most writes in the first batch after the queue was empty; each next
    ///     batch may hold twice as many, up to `maxBatch`.
    package init(firstBatch: Int = 32, maxBatch: Int = 500) {
        self.maxBatch = max(1, maxBatch)
        self.firstBatch = min(max(1, firstBatch), self.maxBatch)
    }

    /// Writes `write` with whatever else is waiting and returns its outcome once written.
    /// - Parameter writeBatch: writes its writes all or none, and returns an outcome per write,
    ///   in order. Every caller passes the same one (its store's); a write that finds no batch
    ///   under way starts one with it.
    /// - Throws: what the store threw for this write; `CancellationError` when the calling task
    ///   is cancelled first — the write may then still happen (a stopping process's last
    ///   record), and the caller must not count on it either way.
    package func write(_ write: Write, batchingWith writeBatch: @escaping @Sendable ([Write]) async throws -> [Outcome]) async throws -> Outcome {
        let ticket = nextTicket
        nextTicket += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume(throwing: CancellationError()) }
                waiters[ticket] = continuation
                queued.append((ticket, write))
                if !writing {
                    writing = true
                    Task { await self.writeQueued(with: writeBatch) }
                }
            }
        } onCancel: {
            Task { await self.abandon(ticket) }
        }
    }

    private func abandon(_ ticket: Int) {
        queued.removeAll { $0.ticket == ticket }
        waiters.removeValue(forKey: ticket)?.resume(throwing: CancellationError())
    }

    private func resume(_ ticket: Int, with result: Result<Outcome, any Error>) {
        waiters.removeValue(forKey: ticket)?.resume(with: result)
    }

    private func writeQueued(with writeBatch: @Sendable ([Write]) async throws -> [Outcome]) async {
        var limit = firstBatch
        while !queued.isEmpty {
            let batch = Array(queued.prefix(limit))
            queued.removeFirst(batch.count)
            limit = min(maxBatch, limit * 2)
            do {
                let outcomes = try await writeBatch(batch.map(\.write))
                // A store that returned fewer outcomes than writes broke its contract: every
                // caller is still resumed, never left waiting.
                for (index, entry) in batch.enumerated() {
                    resume(entry.ticket, with: index < outcomes.count ? .success(outcomes[index]) : .failure(GroupCommitError()))
                }
            } catch where batch.count > 1 {
                for entry in batch {
                    do {
                        let outcome = try await writeBatch([entry.write])
                        resume(entry.ticket, with: outcome.first.map { .success($0) } ?? .failure(GroupCommitError()))
                    } catch {
                        resume(entry.ticket, with: .failure(error))
                    }
                }
            } catch {
                for entry in batch { resume(entry.ticket, with: .failure(error)) }
            }
        }
        writing = false
    }
}

/// A batch write returned no outcome for a write.
package struct GroupCommitError: Error, CustomStringConvertible {
    package var description: String { "the state store returned no outcome for this write" }
}
