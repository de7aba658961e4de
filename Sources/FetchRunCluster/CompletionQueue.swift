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
    private var waiting: [(Completion, CheckedContinuation<Bool, any Error>)] = []
    private var writing = false

    init(state: ClusterState, maxBatch: Int = 500) {
        self.state = state
        self.maxBatch = max(1, maxBatch)
    }

    /// Writes `completion` with whatever else is waiting. `true` when its lease held and it was
    /// written, `false` when the lease was lost (nothing written).
    /// - Throws: ``ClusterStateError`` when PostgreSQL could not write it.
    /// - Note: not cancellable: once handed over, the completion is written.
    func complete(_ completion: Completion) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            waiting.append((completion, continuation))
            if !writing {
                writing = true
                Task { await self.writeWaiting() }
            }
        }
    }

    private func writeWaiting() async {
        while !waiting.isEmpty {
            let batch = Array(waiting.prefix(maxBatch))
            waiting.removeFirst(batch.count)
            do {
                let written = try await state.complete(batch.map(\.0))
                for (completion, continuation) in batch { continuation.resume(returning: written[completion.name] == completion.token) }
            } catch where batch.count > 1 {
                for (completion, continuation) in batch {
                    do {
                        continuation.resume(returning: try await state.complete(completion))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            } catch {
                batch.first?.1.resume(throwing: error)
            }
        }
        writing = false
    }
}
