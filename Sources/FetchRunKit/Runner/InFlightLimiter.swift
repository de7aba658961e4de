/// At most `limit` holders at once; the others wait in line, first come first served.
///
/// A waiter whose task is cancelled leaves the line and throws `CancellationError`.
actor InFlightLimiter {
    let limit: Int
    private var inUse = 0
    private var waiters: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
    private var cancelled: Set<Int> = []
    private var nextID = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    var holders: Int { inUse }

    func acquire() async throws {
        if inUse < limit {
            inUse += 1
            return
        }
        let id = nextID
        nextID += 1
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // A cancellation that came first has already left its mark.
                if cancelled.remove(id) != nil {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters.append((id, continuation))
                }
            }
        } onCancel: {
            Task { await self.cancel(id) }
        }
    }

    /// Hands the place to the first waiter, or frees it.
    func release() {
        if waiters.isEmpty {
            inUse -= 1
        } else {
            waiters.removeFirst().continuation.resume()
        }
    }

    private func cancel(_ id: Int) {
        if let index = waiters.firstIndex(where: { $0.id == id }) {
            waiters.remove(at: index).continuation.resume(throwing: CancellationError())
        } else if id < nextID {
            cancelled.insert(id)
        }
    }
}
