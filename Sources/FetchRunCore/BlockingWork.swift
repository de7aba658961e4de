import Dispatch
import Foundation

/// Work that blocks its thread — `flock`, `fsync`, a plugin's `--describe` — kept off Swift's
/// cooperative pool, which has one thread per core (two here): a task blocked there holds back
/// every other task of the process, fetches and timers included.
package enum BlockingWork {
    /// Dispatch threads outside the cooperative pool; Dispatch adds threads when these block.
    private static let queue = DispatchQueue(label: "fetchrun.blocking-work", attributes: .concurrent)

    /// Runs `work` on a thread outside the cooperative pool and returns what it returns.
    /// - Throws: what `work` throws.
    /// - Cancellation: `work` runs to its end either way (a write half done is worse than a
    ///   late one); the caller checks for cancellation afterwards if it cares.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result(catching: work)) }
        }
    }

    /// ``run(_:)`` for work that does not throw.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}

/// A serial executor with a thread of its own, for an actor whose methods block (the
/// downloader's queue updates take a `flock` and `fsync`): the actor's code runs there, in
/// order, never on the cooperative pool. The thread starts with the first job and lives as
/// long as the process.
package final class DedicatedThreadExecutor: SerialExecutor, @unchecked Sendable {
    // The executor is the one place here that needs a lock and a condition: it is what the
    // actor-based code runs on.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private let name: String
    private var started = false

    package init(name: String) {
        self.name = name
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if !started {
            started = true
            let thread = Thread { [self] in runJobs() }
            thread.name = name
            thread.start()
        }
        condition.signal()
        condition.unlock()
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private func runJobs() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
        }
    }
}
