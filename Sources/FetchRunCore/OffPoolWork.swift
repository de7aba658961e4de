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
/// document) would hold back every other source's task in the run. Here the work runs on an
/// idle thread of ``OffPoolThreads``, or on a new one when every one is busy — so a parse that
/// never ends holds one thread and never delays the next — and the awaiting task stays free to
/// be cancelled. (A thread started per call cost a cold run of 1,000 feeds 1,000 thread
/// creations; a dispatch queue started its extra threads about one a second, so blocked work
/// held the rest back.)
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
            OffPoolThreads.shared.run(name: name) {
                let result = Result { try work(flag) }
                handoff.resume(with: result)
            }
        }
    } onCancel: {
        flag.cancel()
        handoff.resume(with: .failure(CancellationError()))
    }
}

/// Threads for off-pool work, kept for reuse: a job goes to an idle thread, or to a new one
/// at once when none is idle (never queued behind a busy one); a thread idle for 10 s ends.
///
/// Semaphores and a mutex rather than an actor: this is the one place that hands work from
/// Swift's tasks to threads of its own, and an actor's executor is the cooperative pool. The
/// mutex is ``Locked``'s, which the thread sanitizer sees (with `Synchronization.Mutex` it
/// reported the job handed over under the lock as a race).
package final class OffPoolThreads: Sendable {
    package static let shared = OffPoolThreads()

    private final class Worker: Sendable {
        let wake = DispatchSemaphore(value: 0)
        let job = Locked<(@Sendable () -> Void)?>(nil)
    }

    private let idle = Locked<[Worker]>([])
    /// How long an idle thread waits for work before it ends.
    private static let keepAlive: DispatchTimeInterval = .seconds(10)

    /// Runs `job` on an idle thread, or on a new one named `name`.
    package func run(name: String, _ job: @escaping @Sendable () -> Void) {
        if let worker = idle.withLock({ $0.popLast() }) {
            worker.job.withLock { $0 = job }
            worker.wake.signal()
            return
        }
        let worker = Worker()
        worker.job.withLock { $0 = job }
        let thread = Thread { [self] in serve(worker) }
        thread.name = name
        thread.start()
    }

    private func serve(_ worker: Worker) {
        while true {
            let job = worker.job.withLock { job in
                defer { job = nil }
                return job
            }
            job?()
            idle.withLock { $0.append(worker) }
            guard worker.wake.wait(timeout: .now() + Self.keepAlive) == .timedOut else { continue }
            let retired = idle.withLock { idle in
                guard let index = idle.firstIndex(where: { $0 === worker }) else { return false }
                idle.remove(at: index)
                return true
            }
            if retired { return }
            // Taken off the idle list just as it timed out: its work is being handed over.
            worker.wake.wait()
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
