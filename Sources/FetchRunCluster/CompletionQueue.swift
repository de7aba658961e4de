/// Group commit for a worker's completions: while one batch is being written, the fetches that
/// end meanwhile wait together and go in the next statement.
///
/// A worker at hundreds of fetches a second would otherwise spend a transaction (three round
/// trips) on each; this way a busy worker writes a few batches a second and an idle one writes
/// each completion at once — no timer, no added delay. A batch that PostgreSQL refuses is
/// written again one completion at a time, so one bad row fails only its own source.
actor CompletionQueue {
    private let state: ClusterState
    private let maxBatch: Int
    /// Completions not yet written, in order, and who waits for each (by ticket): a waiter
    /// that is cancelled leaves at once, whether or not its completion is being written.
    private var queued: [(ticket: Int, completion: Completion)] = []
    private var waiters: [Int: CheckedContinuation<Bool, any Error>] = [:]
    private var nextTicket = 0
    private var writing = false

    init(state: ClusterState, maxBatch: Int = 500) {
        self.state = state
        self.maxBatch = max(1, maxBatch)
    }

    /// Writes `completion` with whatever else is waiting. `true` when its lease held and it was
    /// written, `false` when the lease was lost (nothing written).
    /// - Throws: ``ClusterStateError`` when PostgreSQL could not write it; `CancellationError`
    ///   when the calling task is cancelled first (a worker stopping while PostgreSQL does not
    ///   answer) — then the completion may or may not be written, and an unwritten one's lease
    ///   lapses as a dead worker's would.
    func complete(_ completion: Completion) async throws -> Bool {
        let ticket = nextTicket
        nextTicket += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume(throwing: CancellationError()) }
                waiters[ticket] = continuation
                queued.append((ticket, completion))
                if !writing {
                    writing = true
                    Task { await self.writeQueued() }
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

    private func resume(_ ticket: Int, with result: Result<Bool, any Error>) {
        waiters.removeValue(forKey: ticket)?.resume(with: result)
    }

    private func writeQueued() async {
        while !queued.isEmpty {
            let batch = Array(queued.prefix(maxBatch))
            queued.removeFirst(batch.count)
            do {
                let written = try await state.complete(batch.map(\.completion))
                for (ticket, completion) in batch { resume(ticket, with: .success(written[completion.name] == completion.token)) }
            } catch where batch.count > 1 {
                for (ticket, completion) in batch {
                    do {
                        resume(ticket, with: .success(try await state.complete(completion)))
                    } catch {
                        resume(ticket, with: .failure(error))
                    }
                }
            } catch {
                for (ticket, _) in batch { resume(ticket, with: .failure(error)) }
            }
        }
        writing = false
    }
}
