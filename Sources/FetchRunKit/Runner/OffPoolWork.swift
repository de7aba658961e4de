import Dispatch
import Foundation
import Synchronization

/// Whether off-pool work has been asked to stop; set from any thread, polled by the work.
package final class CancellationFlag: Sendable {
    private let cancelled = Atomic<Bool>(false)

    package init() {}

    package var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    package func cancel() { cancelled.store(true, ordering: .relaxed) }
}

/// Runs CPU-heavy or blocking work on a thread outside Swift's cooperative pool.
///
/// The cooperative pool has one thread per core; a parse that takes seconds on it (a hostile
/// document) would hold back every other source's task in the run. Here the work runs on a
/// concurrent dispatch queue, which takes an idle thread of its own pool or starts another
/// when every one is busy — so a parse that never ends holds one thread, not the others'
/// work — and the awaiting task stays free to be cancelled. (A thread started per call cost a
/// cold run of 1,000 feeds 1,000 thread creations, a tenth of its system time.)
///
/// - Cancellation: the flag handed to `work` is set, and the call throws `CancellationError`
///   at once, without waiting for the work to notice. Work that polls the flag stops soon
///   after; its result, if it still produces one, is dropped. A call made from an already
///   cancelled task throws without starting the work.
/// - Errors thrown by `work` are rethrown.
package func runOffPool<T: Sendable>(
    name: String = "fetchrun-work",
    _ work: @escaping @Sendable (CancellationFlag) throws -> T
) async throws -> T {
    let flag = CancellationFlag()
    let handoff = OffPoolHandoff<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            guard handoff.store(continuation) else { return }
            OffPoolQueues.queue(named: name).async {
                let result = Result { try work(flag) }
                handoff.resume(with: result)
            }
        }
    } onCancel: {
        flag.cancel()
        handoff.resume(with: .failure(CancellationError()))
    }
}

/// One concurrent queue per name of work, made on first use: its label names the threads'
/// work in a debugger or a profile.
private enum OffPoolQueues {
    private static let queues = Mutex<[String: DispatchQueue]>([:])

    static func queue(named name: String) -> DispatchQueue {
        queues.withLock { queues in
            if let queue = queues[name] { return queue }
            let queue = DispatchQueue(label: name, attributes: .concurrent)
            queues[name] = queue
            return queue
        }
    }
}

/// The continuation of one off-pool call, resumed exactly once: by the work's end or by
/// cancellation, whichever comes first; a cancellation that arrives before the continuation
/// is stored is remembered and answered when it is.
private final class OffPoolHandoff<T: Sendable>: Sendable {
    private enum State {
        case waiting
        case running(CheckedContinuation<T, any Error>)
        case cancelledEarly
        case done
    }

    private let state = Locked<State>(.waiting)

    /// `false` when the call was cancelled before it started: the continuation has been
    /// resumed with `CancellationError` and the work must not start.
    func store(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let start = state.withLock { state -> Bool in
            if case .cancelledEarly = state {
                state = .done
                return false
            }
            state = .running(continuation)
            return true
        }
        if !start { continuation.resume(throwing: CancellationError()) }
        return start
    }

    func resume(with result: Result<T, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
            switch state {
            case .running(let continuation):
                state = .done
                return continuation
            case .waiting:
                state = .cancelledEarly
                return nil
            case .cancelledEarly, .done:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
