import FetchRunCore
import CCurl
import Foundation
import ServiceLifecycle

/// libcurl's multi interface, driven by one dedicated thread while ``run()`` runs.
///
/// The thread loops: apply queued commands (add, cancel), run curl's timer when it is due, hand
/// finished transfers their results, then sleep in ``CurlSocketWatch/wait(idle:into:)`` until a
/// socket curl watches is ready, curl's timer comes, a second passes, or a command arrives —
/// and hand curl each ready socket (`curl_multi_socket_action`), so that it works on those
/// sockets' transfers only. Submitting is safe from any thread: it appends to a mutex-guarded
/// queue and wakes the loop when the queue was empty (the loop takes it whole, so the first
/// waiting command's wake-up serves them all). Only the loop thread calls into the multi
/// handle, and continuations are resumed outside the queue's lock, so a cancellation handler
/// never waits on the loop and the loop never waits on a cancellation handler.
///
/// Nothing runs until ``run()`` starts the thread — transfers submitted before the first run
/// wait for it — and nothing is left running after it returns: transfers still in curl end as
/// cancelled, and those submitted while it is stopped fail at once, until it runs again.
final class CurlMultiLoop: Sendable {
    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
        /// At most this many connections kept open, counting those in use; `nil`: curl's own rule.
        case limitConnectionsKept(Int?)
        case stop
    }

    struct Limits: Sendable {
        var maxConnectionsPerHost: Int
        var maxConnections: Int
        var maxStreamsPerConnection: Int
    }

    private enum Phase {
        case waiting, running, stopped
    }

    /// The multi handle; used on the loop thread, and for its cleanup when no thread runs.
    nonisolated(unsafe) private let multi: UnsafeMutableRawPointer
    /// What the loop thread waits on (and the one part of it other threads use: its wake-up).
    private let sockets = CurlSocketWatch()
    private let queue = Locked<(commands: [Command], phase: Phase)>(([], .waiting))
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
        sockets.attach(to: multi)
    }

    deinit {
        // No thread is running: it holds the loop while it does. The cleanup tells the socket
        // watch of the sockets it closes, so the watch goes after it.
        curl_multi_cleanup(multi)
    }

    /// Runs the loop's thread until a graceful shutdown or cancellation, then stops it and
    /// returns once it has ended. A call while it runs returns at once.
    func run() async {
        let starts = queue.withLock { queue -> Bool in
            guard queue.phase != .running else { return false }
            queue.phase = .running
            return true
        }
        guard starts else { return }
        // The thread's end is waited for even by a cancelled task: nothing is left running.
        await withTaskCancellationOrGracefulShutdownHandler {
            await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    loop()
                    ended.resume()
                }
                thread.name = "fetchrun-curl"
                thread.start()
            }
        } onCancelOrGracefulShutdown: { [self] in
            submit(.stop)
        }
    }

    func submit(_ command: Command) {
        let (refused, wakes) = queue.withLock { queue -> (Bool, Bool) in
            guard queue.phase != .stopped else { return (true, false) }
            queue.commands.append(command)
            // A command already waiting has woken the loop (or will, right after its lock),
            // and the loop has not yet taken the queue, which it takes whole: a thousand
            // sources starting together wake it once, not a thousand times.
            return (false, queue.commands.count == 1)
        }
        guard refused else {
            if wakes { sockets.wake() }
            return
        }
        // The client stopped because it was shut down, which the request's caller is being
        // too: the request ends as cancelled, not as a network failure to count or retry.
        if case .add(let transfer) = command { finish(transfer, with: .failure(CancellationError())) }
    }

    private func loop() {
        // Transfers curl is working on, by easy handle. Loop-thread state, so no lock.
        var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        var running: Int32 = 0
        var ready: [CurlSocketWatch.Ready] = []
        while true {
            let pending = queue.withLock { queue in
                defer { queue.commands.removeAll(keepingCapacity: true) }
                return queue.commands
            }
            for command in pending {
                switch command {
                case .add(let transfer):
                    if transfer.cancelRequested {
                        finish(transfer, with: .failure(CancellationError()))
                    } else {
                        transfer.started = .now
                        active[transfer.handle] = transfer
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
                case .limitConnectionsKept(let limit):
                    // -1 is curl's default (four per transfer added); 0 would keep every one.
                    fetchrun_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, limit.map { max(1, $0) } ?? -1)
                case .stop:
                    for transfer in active.values {
                        curl_multi_remove_handle(multi, transfer.handle)
                        finish(transfer, with: .failure(CancellationError()))
                    }
                    // What arrived after the stop was never added: it ends too.
                    let late = queue.withLock { queue in
                        queue.phase = .stopped
                        defer { queue.commands.removeAll() }
                        return queue.commands
                    }
                    for case .add(let transfer) in late { finish(transfer, with: .failure(CancellationError())) }
                    return
                }
            }

            // A transfer just added starts here: curl asks for its timer at once.
            if sockets.takeDueTimer() { curl_multi_socket_action(multi, fetchrun_socket_timeout, 0, &running) }
            finishCompleted(&active)
            // With no transfer the wait lasts until a command comes (an hour at most), so an
            // idle watch costs no CPU.
            sockets.wait(idle: active.isEmpty, into: &ready)
            for socket in ready { curl_multi_socket_action(multi, socket.socket, socket.bits, &running) }
            finishCompleted(&active)
        }
    }

    /// Hands every transfer curl has completed its result.
    private func finishCompleted(_ active: inout [UnsafeMutableRawPointer: CurlTransfer]) {
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

    /// Resumes the transfer's continuation exactly once; later calls find it gone.
    private func finish(_ transfer: CurlTransfer, with result: Result<HTTPResponse, any Error>) {
        guard !transfer.finished, let continuation = transfer.continuation else { return }
        transfer.finished = true
        transfer.continuation = nil
        continuation.resume(with: result)
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
/// `curl_multi_socket_action`, and the loop records completions.
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
