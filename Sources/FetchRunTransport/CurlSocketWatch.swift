import FetchRunCore
import CCurl
import CEpoll
import Glibc

/// What the curl loop waits on, in one epoll set: the sockets curl asks to have watched
/// (`CURLMOPT_SOCKETFUNCTION`), curl's one timer (`CURLMOPT_TIMERFUNCTION`), and an eventfd that
/// wakes the loop for new commands.
///
/// Why not `curl_multi_perform` and `curl_multi_poll`: those visit every transfer at every turn
/// of the loop, and curl then asks the kernel about each transfer's socket (a `poll` with no
/// wait) — some 11,000 system calls in a run of 1,000 feeds, on the thread every transfer waits
/// for. Told which socket is ready (`curl_multi_socket_action`), curl works on that socket's
/// transfers alone.
///
/// Confined to the loop thread — curl calls the callbacks from inside `curl_multi_socket_action`,
/// `curl_multi_add_handle`, `curl_multi_remove_handle` and `curl_multi_cleanup`, all made there or
/// when no loop runs — except ``wake()``, which any thread may call.
final class CurlSocketWatch: @unchecked Sendable {
    /// A socket curl's transfers may proceed on, and how (`CURL_CSELECT_IN`, `_OUT`, `_ERR`).
    struct Ready {
        var socket: curl_socket_t
        var bits: Int32
    }

    private let epoll: Int32
    private let wakeup: Int32
    /// The sockets in the epoll set besides the eventfd.
    private var watched: Set<curl_socket_t> = []
    /// When curl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`; `nil` when it wants nothing.
    private var timerDue: ContinuousClock.Instant?
    /// What one wait found: ready descriptors and their readiness, reused from wait to wait.
    private var readyDescriptors = [Int32](repeating: 0, count: 256)
    private var readiness = [Int32](repeating: 0, count: 256)

    init() {
        // As `curl_multi_init`, which makes a socket pair of its own, this fails only at the
        // process's descriptor limit or out of memory — at start, before any source is read.
        epoll = fetchrun_epoll_create()
        wakeup = fetchrun_eventfd_create()
        guard epoll >= 0, wakeup >= 0, fetchrun_epoll_watch(epoll, wakeup, FETCHRUN_EPOLL_READABLE, 0) == 0 else {
            preconditionFailure("the HTTP client cannot make its epoll set or eventfd (errno \(errno))")
        }
    }

    deinit {
        close(epoll)
        close(wakeup)
    }

    /// Hands curl the callbacks. The watch must outlive `multi` (its cleanup calls them).
    func attach(to multi: UnsafeMutableRawPointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = fetchrun_multi_setopt_socket_callback(multi) { _, socket, what, context, _ in
            Unmanaged<CurlSocketWatch>.fromOpaque(context!).takeUnretainedValue().watch(socket, what: what)
            return 0
        }
        _ = fetchrun_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
        _ = fetchrun_multi_setopt_timer_callback(multi) { _, milliseconds, context in
            Unmanaged<CurlSocketWatch>.fromOpaque(context!).takeUnretainedValue().setTimer(milliseconds)
            return 0
        }
        _ = fetchrun_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
    }

    /// Curl's `CURL_POLL_*` wish for a socket, as the epoll set's interest in it.
    private func watch(_ socket: curl_socket_t, what: Int32) {
        guard what != CURL_POLL_REMOVE else {
            if watched.remove(socket) != nil { _ = fetchrun_epoll_unwatch(epoll, socket) }
            return
        }
        let interest = (what & CURL_POLL_IN != 0 ? FETCHRUN_EPOLL_READABLE : 0) | (what & CURL_POLL_OUT != 0 ? FETCHRUN_EPOLL_WRITABLE : 0)
        _ = fetchrun_epoll_watch(epoll, socket, interest, watched.contains(socket) ? 1 : 0)
        watched.insert(socket)
    }

    /// Curl's timer: -1 none, 0 at once, else in that many milliseconds. One-shot.
    private func setTimer(_ milliseconds: Int) {
        timerDue = milliseconds < 0 ? nil : .now + .milliseconds(milliseconds)
    }

    /// Whether curl's timer has come; if so it is spent (curl sets the next one itself).
    func takeDueTimer() -> Bool {
        guard let due = timerDue, due <= .now else { return false }
        timerDue = nil
        return true
    }

    /// Ends a ``wait(idle:into:)`` now or, if none is under way, the next one at once. Any thread.
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, MemoryLayout<UInt64>.size)
    }

    /// Waits until a socket is ready, curl's timer is due, or ``wake()`` is called: an hour at
    /// most when `idle` (no transfer), a second at most otherwise. Fills `ready` with the sockets
    /// that are.
    func wait(idle: Bool, into ready: inout [Ready]) {
        ready.removeAll(keepingCapacity: true)
        var timeout: Int32 = idle ? 3_600_000 : 1000
        if let due = timerDue {
            let left = ContinuousClock.now.duration(to: due)
            // Rounded up: woken a little early, the timer would not be due yet and the loop would spin.
            let milliseconds = left <= .zero ? 0 : (left + .nanoseconds(999_999)).milliseconds
            timeout = Int32(clamping: min(milliseconds, Int64(timeout)))
        }
        let count = fetchrun_epoll_wait(epoll, &readyDescriptors, &readiness, Int32(readyDescriptors.count), timeout)
        guard count > 0 else { return }
        for index in 0..<Int(count) {
            let descriptor = readyDescriptors[index], bits = readiness[index]
            if descriptor == wakeup {
                var value: UInt64 = 0
                _ = read(wakeup, &value, MemoryLayout<UInt64>.size)
                continue
            }
            var select: Int32 = 0
            if bits & FETCHRUN_EPOLL_READABLE != 0 { select |= CURL_CSELECT_IN }
            if bits & FETCHRUN_EPOLL_WRITABLE != 0 { select |= CURL_CSELECT_OUT }
            if bits & FETCHRUN_EPOLL_ERROR != 0 { select |= CURL_CSELECT_ERR }
            ready.append(Ready(socket: descriptor, bits: select))
        }
    }
}
