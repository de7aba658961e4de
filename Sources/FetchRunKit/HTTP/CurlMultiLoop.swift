import CCurl
import CLinux
import Foundation

/// libcurl's multi interface, driven by one dedicated thread through its socket interface.
///
/// curl tells the loop which sockets to watch (they go in an epoll set) and when it next wants
/// to be called back; the thread sleeps in `epoll_wait` until a socket is ready, that time
/// comes, or a submitter writes the wake-up eventfd, and reports exactly those sockets with
/// `curl_multi_socket_action`. So each wake-up costs what is ready, not what is open:
/// `curl_multi_perform` and `curl_multi_poll` visit every transfer on every wake-up, and with
/// a thousand transfers open at once (a run over many hosts) the loop thread spent a fifth
/// of the run's CPU walking them.
///
/// Submitting is safe from any thread: it appends to a mutex-guarded queue and wakes the loop.
/// Only the loop thread calls into the multi handle, and continuations are resumed outside the
/// queue's lock, so a cancellation handler never waits on the loop and the loop never waits
/// on a cancellation handler.
final class CurlMultiLoop: Sendable {
    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
        case stop
    }

    struct Limits: Sendable {
        var maxConnectionsPerHost: Int
        var maxConnections: Int
        var maxStreamsPerConnection: Int
    }

    /// The multi handle; used on the loop thread only.
    nonisolated(unsafe) private let multi: UnsafeMutableRawPointer
    private let commands = Locked<[Command]>([])
    /// What the loop sleeps on; written by submitters (the eventfd), otherwise loop-thread state.
    private let sockets: SocketWatch
    /// Loop-thread state that the transfers' callbacks read; see ``MultiplexSignal``.
    let multiplexSignal: MultiplexSignal

    /// - Parameter onMultiplexing: called (on the loop thread, so it must not block) with a
    ///   host the first time one of its connections is seen carrying two requests at once.
    init(limits: Limits, onMultiplexing: @escaping @Sendable (String) -> Void = { _ in }) {
        multiplexSignal = MultiplexSignal(announce: onMultiplexing)
        CurlGlobal.initialize()
        multi = curl_multi_init()!
        fetchrun_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        fetchrun_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limits.maxConnectionsPerHost)
        fetchrun_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, limits.maxConnections)
        fetchrun_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, limits.maxStreamsPerConnection)
        sockets = SocketWatch()
        if sockets.unavailable == nil {
            let watch = Unmanaged.passUnretained(sockets).toOpaque()
            fetchrun_multi_setopt_socket_callback(multi, { _, socket, what, watch, _ in
                Unmanaged<SocketWatch>.fromOpaque(watch!).takeUnretainedValue().watch(socket, what: what)
                return 0
            }, watch)
            fetchrun_multi_setopt_timer_callback(multi, { _, milliseconds, watch in
                Unmanaged<SocketWatch>.fromOpaque(watch!).takeUnretainedValue().callBack(after: milliseconds)
                return 0
            }, watch)
        }
        let thread = Thread { [self] in self.run() }
        thread.name = "fetchrun-curl"
        thread.start()
    }

    func submit(_ command: Command) {
        commands.withLock { $0.append(command) }
        if sockets.unavailable == nil { sockets.wake() } else { curl_multi_wakeup(multi) }
    }

    private func takeCommands() -> [Command] {
        commands.withLock { queue in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
    }

    private func run() {
        if let unavailable = sockets.unavailable { return failEveryTransfer(saying: "cannot watch sockets: \(unavailable)") }
        // Transfers curl is working on, by easy handle. Loop-thread state, so no lock.
        var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        var running: Int32 = 0
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var nextStallCheck = ContinuousClock.now + .seconds(1)
        while true {
            for command in takeCommands() {
                switch command {
                case .add(let transfer):
                    if transfer.cancelRequested {
                        finish(transfer, with: .failure(CancellationError()))
                    } else {
                        transfer.started = .now
                        active[transfer.handle] = transfer
                        // curl asks for a call back at once (the timer callback) to start it.
                        curl_multi_add_handle(multi, transfer.handle)
                    }
                case .cancel(let transfer):
                    if active.removeValue(forKey: transfer.handle) != nil {
                        curl_multi_remove_handle(multi, transfer.handle)
                        finish(transfer, with: .failure(CancellationError()))
                    } else if !transfer.finished {
                        // Not added yet (the cancel overtook the add in the queue): the add sees the flag.
                        transfer.cancelRequested = true
                    }
                case .stop:
                    for transfer in active.values {
                        curl_multi_remove_handle(multi, transfer.handle)
                        finish(transfer, with: .failure(CancellationError()))
                    }
                    curl_multi_cleanup(multi)
                    sockets.close()
                    return
                }
            }

            if sockets.isCallBackDue { curl_multi_socket_action(multi, fetchrun_socket_timeout, 0, &running) }
            finishDone(&active)
            let ready = epoll_wait(sockets.epoll, &events, Int32(events.count), sockets.waitMilliseconds(idle: active.isEmpty))
            for event in events.prefix(Int(max(0, ready))) {
                let socket = event.data.fd
                if socket == sockets.wakeup {
                    sockets.drainWakeups()
                    continue
                }
                var readiness: Int32 = 0
                if event.events & EPOLLIN.rawValue != 0 { readiness |= CURL_CSELECT_IN }
                if event.events & EPOLLOUT.rawValue != 0 { readiness |= CURL_CSELECT_OUT }
                if event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { readiness |= CURL_CSELECT_ERR }
                curl_multi_socket_action(multi, socket, readiness, &running)
            }
            finishDone(&active)
            // A download that receives nothing gives curl no reason to call its progress
            // callback, where stalls were caught: the loop looks (`epoll_wait` sleeps at most a
            // second while transfers run).
            let now = ContinuousClock.now
            if now >= nextStallCheck {
                nextStallCheck = now + .seconds(1)
                for (handle, transfer) in active where transfer.checkStall(at: now) {
                    active.removeValue(forKey: handle)
                    curl_multi_remove_handle(multi, handle)
                    finish(transfer, with: transfer.result(CURLE_ABORTED_BY_CALLBACK))
                }
            }
        }
    }

    /// Hands each transfer curl has finished its result.
    private func finishDone(_ active: inout [UnsafeMutableRawPointer: CurlTransfer]) {
        var remainingMessages: Int32 = 0
        while let message = curl_multi_info_read(multi, &remainingMessages) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                  let transfer = active.removeValue(forKey: handle) else { continue }
            let code = message.pointee.data.result
            if let host = transfer.hostKey { multiplexSignal.transferCompleted(on: host) }
            curl_multi_remove_handle(multi, handle)
            finish(transfer, with: transfer.result(code))
        }
    }

    /// Without an epoll set or an eventfd (the process is out of descriptors) there is nothing to
    /// wait on sockets with: every transfer fails at once, saying why, until the loop is stopped.
    private func failEveryTransfer(saying reason: String) {
        while true {
            for command in takeCommands() {
                switch command {
                case .add(let transfer), .cancel(let transfer):
                    finish(transfer, with: .failure(HTTPError(.network, reason)))
                case .stop:
                    curl_multi_cleanup(multi)
                    return
                }
            }
            curl_multi_poll(multi, nil, 0, 3_600_000, nil)
        }
    }

    /// Resumes the transfer's continuation exactly once; later calls find it gone.
    private func finish(_ transfer: CurlTransfer, with result: Result<HTTPResponse, any Error>) {
        guard !transfer.finished, let continuation = transfer.continuation else { return }
        transfer.finished = true
        transfer.continuation = nil
        continuation.resume(with: result)
    }
}

/// What the loop thread waits on: the sockets curl asked it to watch, in an epoll set, the time
/// curl asked to be called back, and an eventfd that submitters write to wake the loop.
///
/// Confined to the loop thread — curl calls ``watch(_:what:)`` and ``callBack(after:)`` from
/// inside `curl_multi_socket_action` — except ``wake()``, a write to the eventfd.
private final class SocketWatch: @unchecked Sendable {
    let epoll: Int32
    let wakeup: Int32
    private var callBackAt: ContinuousClock.Instant?
    /// Why the epoll set or the eventfd could not be made (the process is out of descriptors);
    /// `nil` when both were.
    let unavailable: String?

    init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        let epollError = errno
        wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard epoll >= 0, wakeup >= 0 else {
            unavailable = String(cString: strerror(epoll < 0 ? epollError : errno))
            if epoll >= 0 { Glibc.close(epoll) }
            if wakeup >= 0 { Glibc.close(wakeup) }
            return
        }
        unavailable = nil
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeup
        epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event)
    }

    /// curl's socket callback: watch `socket` for what curl waits on, or stop watching it.
    func watch(_ socket: curl_socket_t, what: Int32) {
        if what == CURL_POLL_REMOVE {
            // curl says so before it closes the socket.
            epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil)
            return
        }
        var event = epoll_event()
        event.events = (what & CURL_POLL_IN != 0 ? EPOLLIN.rawValue : 0) | (what & CURL_POLL_OUT != 0 ? EPOLLOUT.rawValue : 0)
        event.data.fd = socket
        if epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event) != 0, errno == ENOENT {
            epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event)
        }
    }

    /// curl's timer callback: call back after `milliseconds` (0: at once), or never (-1).
    func callBack(after milliseconds: Int) {
        callBackAt = milliseconds < 0 ? nil : .now + .milliseconds(milliseconds)
    }

    var isCallBackDue: Bool {
        guard let callBackAt else { return false }
        return callBackAt <= .now
    }

    /// How long `epoll_wait` may sleep: until curl's call back; with no transfer and no call
    /// back, until a submitter wakes it (an hour at most), so an idle watch costs no CPU. With
    /// transfers, a second at most, as a guard against a call back missed.
    func waitMilliseconds(idle: Bool) -> Int32 {
        guard let callBackAt else { return idle ? 3_600_000 : 1000 }
        let left = ContinuousClock.now.duration(to: callBackAt)
        guard left > .zero else { return 0 }
        // Rounded up: waking a little early would spin until the time comes.
        let milliseconds = left.components.seconds * 1000 + (left.components.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(min(milliseconds, idle ? 3_600_000 : 1000))
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    func drainWakeups() {
        var count: UInt64 = 0
        _ = read(wakeup, &count, 8)
    }

    func close() {
        Glibc.close(epoll)
        Glibc.close(wakeup)
    }
}

/// Tells, as early as it can be known, that a host's connection carries several requests at
/// once (HTTP/2): when a request is sent over a reused connection before any request to that
/// host has completed. Over HTTP/1.1 a connection is free for reuse only once its request
/// has completed, so that cannot happen; over HTTP/2 it happens as soon as the first
/// connection's TLS handshake has picked h2 (the requests that waited for it, `PIPEWAIT`, go
/// out on it) — a round trip before the first response would say so.
///
/// Confined to the loop thread: curl calls the transfers' callbacks inside
/// `curl_multi_perform`, and the loop records completions.
final class MultiplexSignal: @unchecked Sendable {
    private var hostsWithCompletedTransfers: Set<String> = []
    private var announced: Set<String> = []
    private let announce: @Sendable (String) -> Void

    init(announce: @escaping @Sendable (String) -> Void) {
        self.announce = announce
    }

    /// A request to `host` is about to be sent over a connection it did not open.
    func connectionReused(for host: String) {
        guard !hostsWithCompletedTransfers.contains(host), announced.insert(host).inserted else { return }
        announce(host)
    }

    func transferCompleted(on host: String) {
        hostsWithCompletedTransfers.insert(host)
    }
}

/// `curl_global_init` must run once, before any other thread uses curl.
enum CurlGlobal {
    private static let done: Bool = {
        curl_global_init(Int(CURL_GLOBAL_ALL))
        return true
    }()

    static func initialize() {
        _ = done
    }

    /// The libcurl in use, as `0xXXYYZZ` (7.88.1 is `0x075801`).
    static let versionNumber: Int = {
        initialize()
        return Int(curl_version_info(fetchrun_version_now).pointee.version_num)
    }()

    /// Whether a connection opened with HTTP/2 prior knowledge can carry a second request.
    /// libcurl 7.88.x fails every reuse with "Error in the HTTP2 framing layer" (curl issue
    /// #10634, fixed in 7.89.0); Debian 12 ships 7.88.1.
    static var reusesPriorKnowledgeConnections: Bool { versionNumber >= 0x075900 }
}
