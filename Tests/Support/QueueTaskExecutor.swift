import Dispatch

/// A task executor on a serial dispatch queue of its own: tasks that prefer it (and their
/// child tasks) run there, not on the cooperative pool that every test in the process shares.
/// For a test whose subject reacts to events in real time and must not wait behind its
/// neighbours' work: on two cores that pool has two threads, and a neighbour that blocks one
/// for a second is a second the subject did not get.
public final class QueueTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
