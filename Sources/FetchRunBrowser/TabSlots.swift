import FetchRunKit

/// At most `count` renders at once (`browser: { tabs: N }`); the others wait in turn. A wait
/// ends at once when its task is cancelled (the fetch's deadline), giving up its place.
final class TabSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID = 0
    }

    private let state: Locked<State>

    init(count: Int) {
        state = Locked(State(free: count))
    }

    /// Takes a slot, waiting for one; give it back with ``release()``.
    /// - Throws: `CancellationError` when cancelled before a slot came.
    func acquire() async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { state -> Bool in
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                        return false
                    }
                    if state.free > 0 {
                        state.free -= 1
                        return true
                    }
                    state.waiting.append((id, continuation))
                    return false
                }
                if granted { continuation.resume() }
            }
        } onCancel: {
            let removed = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index).continuation
            }
            removed?.resume(throwing: CancellationError())
        }
    }

    /// Gives a slot back: to the longest waiting render, else to the pool.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if state.waiting.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        next?.resume()
    }
}
