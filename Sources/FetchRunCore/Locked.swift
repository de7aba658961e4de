import Glibc

/// A value shared between threads that are not Swift tasks — the curl loop, a plugin's I/O
/// thread, a parse on a thread of its own — behind a `pthread_mutex_t`.
///
/// Not `Synchronization.Mutex`: on Linux its futex-based lock is invisible to the thread
/// sanitizer, which then reports every access it guards as a race (checked: four threads
/// appending to a `Locked<[Int]>` under `-sanitize=thread`). A pthread mutex is intercepted,
/// so `make tsan` reports only real races.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, no other thread inside at the same time.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
