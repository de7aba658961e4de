import Foundation
import Synchronization

/// Runs an adapter plugin: no shell, its own process group, a request on stdin, stdout and
/// stderr collected, and the whole group killed when the fetch is cancelled.
///
/// One thread per run drives the process with `poll`: it writes the request as the plugin
/// reads it, reads both outputs as they come (so neither side can block the other), and
/// watches for cancellation — SIGTERM to the group, SIGKILL after ``killGrace``. When the
/// plugin exits, anything it left behind in its group is killed too: no orphans.
struct PluginProcess {
    struct Result: Sendable {
        var stdout: Data
        /// The last lines of stderr, for a failure's reason.
        var stderrTail: [String]
        /// The exit status, or `nil` when a signal ended the plugin.
        var exitStatus: Int32?
        var signal: Int32?
        /// stdout passed `outputLimit`: the plugin was stopped, or (``OutputOverflow/discard``)
        /// what came after the limit was read and dropped.
        var outputExceeded: Bool
        /// Every byte the plugin wrote to stdout, kept or not.
        var stdoutBytes: Int64 = 0
    }

    /// What happens when stdout passes `outputLimit`. Memory stays bounded either way.
    enum OutputOverflow: Sendable {
        /// The plugin is stopped: its answer cannot be whole (an adapter's).
        case stop
        /// The rest is read and dropped, and the plugin runs on: its answer is its exit status
        /// (a command output's).
        case discard
    }

    struct LaunchError: Error, CustomStringConvertible {
        var description: String
    }

    static let killGrace: Duration = .milliseconds(500)
    /// How long output is still read after the plugin exited.
    static let drainGrace: Duration = .milliseconds(200)
    static let stderrTailLines = 5

    var executable: String
    var arguments: [String]
    var input: Data
    var outputLimit: Int
    var outputOverflow = OutputOverflow.stop
    /// Each line the plugin writes to stderr, as it arrives.
    var onStderrLine: @Sendable (String) -> Void = { _ in }

    /// Runs the plugin to its end.
    /// - Throws: ``LaunchError`` when it cannot be started; `CancellationError` when the task
    ///   was cancelled (the process group has been killed by then).
    func run() async throws -> Result {
        let control = Control()
        let process = try Spawned(executable: executable, arguments: arguments)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
                let thread = Thread { [self] in
                    let result = drive(process, control: control)
                    continuation.resume(with: control.isCancelled ? .failure(CancellationError()) : .success(result))
                }
                thread.name = "fetchrun-plugin"
                thread.start()
            }
        } onCancel: {
            control.cancel()
        }
    }

    /// Runs the plugin on the calling thread, stopping it at `deadline` (for `--describe`,
    /// which the config loader asks for synchronously). `nil` when the deadline passed.
    func runSynchronously(deadline: ContinuousClock.Instant) throws -> Result? {
        let control = Control()
        let process = try Spawned(executable: executable, arguments: arguments)
        let result = drive(process, control: control, deadline: deadline)
        return control.isCancelled ? nil : result
    }

    /// The I/O loop, on its own thread.
    ///
    /// It ends when the plugin has exited and its outputs are drained — or, at the latest,
    /// ``drainGrace`` after it exited: a descendant that left the process group (`setsid`)
    /// can hold stdout open for as long as it lives, and the source must not wait for it.
    private func drive(_ process: Spawned, control: Control, deadline: ContinuousClock.Instant? = nil) -> Result {
        var stdout = Data()
        var stderr = StderrLines(keep: Self.stderrTailLines, onLine: onStderrLine)
        var inputOffset = 0
        var stdinFD = process.stdin, stdoutFD = process.stdout, stderrFD = process.stderr
        var exited: Int32?
        var exitedAt: ContinuousClock.Instant?
        var outputExceeded = false
        var stdoutBytes: Int64 = 0
        var termSent: ContinuousClock.Instant?
        var chunk = [UInt8](repeating: 0, count: 65_536)

        func closeStdin() {
            if stdinFD >= 0 { close(stdinFD); stdinFD = -1 }
        }

        if input.isEmpty { closeStdin() }
        while stdoutFD >= 0 || stderrFD >= 0 {
            if let deadline, ContinuousClock.now >= deadline { control.cancel() }
            if control.isCancelled || (outputExceeded && outputOverflow == .stop) {
                if termSent == nil {
                    kill(-process.pid, SIGTERM)
                    termSent = .now
                } else if ContinuousClock.now - termSent! > Self.killGrace {
                    kill(-process.pid, SIGKILL)
                }
            }
            if exited == nil {
                var status: Int32 = 0
                if waitpid(process.pid, &status, WNOHANG) == process.pid {
                    exited = status
                    exitedAt = .now
                    // Whatever the plugin started and left behind goes with it.
                    kill(-process.pid, SIGKILL)
                }
            }
            if let exitedAt, ContinuousClock.now - exitedAt > Self.drainGrace {
                // Whoever still holds our sockets is not the plugin; stop listening to it.
                for descriptor in [stdoutFD, stderrFD] where descriptor >= 0 { close(descriptor) }
                stdoutFD = -1
                stderrFD = -1
                break
            }
            var fds: [pollfd] = []
            if stdinFD >= 0 { fds.append(pollfd(fd: stdinFD, events: Int16(POLLOUT), revents: 0)) }
            if stdoutFD >= 0 { fds.append(pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)) }
            if stderrFD >= 0 { fds.append(pollfd(fd: stderrFD, events: Int16(POLLIN), revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), 50)
            for entry in fds where entry.revents != 0 {
                if entry.fd == stdinFD {
                    let written = input.withUnsafeBytes { buffer in
                        send(stdinFD, buffer.baseAddress! + inputOffset, buffer.count - inputOffset, Int32(MSG_NOSIGNAL))
                    }
                    if written > 0 { inputOffset += written }
                    // Done, or the plugin will not read (it exited or closed stdin): either way, stop writing.
                    if inputOffset >= input.count || (written < 0 && errno != EAGAIN && errno != EINTR) { closeStdin() }
                } else {
                    let count = read(entry.fd, &chunk, chunk.count)
                    if count > 0 {
                        if entry.fd == stdoutFD {
                            stdoutBytes &+= Int64(count)
                            // Past the limit nothing more is kept, stopping or not: a flood
                            // during the kill grace must not grow memory either.
                            let room = max(0, outputLimit - stdout.count)
                            stdout.append(contentsOf: chunk[0..<min(count, room)])
                            if count > room { outputExceeded = true }
                        } else {
                            chunk.withUnsafeBufferPointer { stderr.append(UnsafeBufferPointer(rebasing: $0[0..<count])) }
                        }
                    } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                        close(entry.fd)
                        if entry.fd == stdoutFD { stdoutFD = -1 } else { stderrFD = -1 }
                    }
                }
            }
        }
        closeStdin()
        stderr.finish()
        if exited == nil {
            var status: Int32 = 0
            while waitpid(process.pid, &status, 0) < 0, errno == EINTR {}
            exited = status
            kill(-process.pid, SIGKILL)
        }
        let status = exited!
        let signaled = (status & 0x7f) != 0 && (status & 0x7f) != 0x7f
        return Result(
            stdout: stdout, stderrTail: stderr.tail,
            exitStatus: signaled ? nil : (status >> 8) & 0xff, signal: signaled ? status & 0x7f : nil,
            outputExceeded: outputExceeded, stdoutBytes: stdoutBytes
        )
    }

    /// stderr cut into lines as it arrives, in time linear in its size and memory bounded by
    /// ``maxLineBytes``: a plugin that writes megabytes without a newline gets its line cut,
    /// not a buffer searched again from the start for every chunk.
    struct StderrLines {
        static let maxLineBytes = 4_096

        let keep: Int
        let onLine: @Sendable (String) -> Void
        private(set) var tail: [String] = []
        private var pending: [UInt8] = []
        /// The current line passed ``maxLineBytes``; the rest of it is dropped.
        private var overflowing = false

        init(keep: Int, onLine: @escaping @Sendable (String) -> Void) {
            self.keep = keep
            self.onLine = onLine
        }

        mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
            var start = 0
            while start < bytes.count {
                let rest = bytes[start...]
                guard let newline = rest.firstIndex(of: 0x0A) else {
                    take(rest)
                    return
                }
                take(bytes[start..<newline])
                emit()
                start = newline + 1
            }
        }

        mutating func finish() {
            if !pending.isEmpty || overflowing { emit() }
        }

        private mutating func take(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) {
            let room = Self.maxLineBytes - pending.count
            if bytes.count > room {
                pending.append(contentsOf: bytes.prefix(room))
                overflowing = true
            } else {
                pending.append(contentsOf: bytes)
            }
        }

        private mutating func emit() {
            let line = String(decoding: pending, as: UTF8.self) + (overflowing ? "…" : "")
            pending.removeAll(keepingCapacity: true)
            overflowing = false
            onLine(line)
            tail.append(line)
            if tail.count > keep { tail.removeFirst() }
        }
    }

    /// Cancellation, set from any thread, read by the I/O loop.
    final class Control: Sendable {
        private let cancelled = Atomic<Bool>(false)
        var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
        func cancel() { cancelled.store(true, ordering: .releasing) }
    }

    /// A started process and the parent's ends of its stdin, stdout and stderr.
    struct Spawned: Sendable {
        let pid: pid_t
        let stdin: Int32
        let stdout: Int32
        let stderr: Int32

        init(executable: String, arguments: [String]) throws {
            // Socket pairs rather than pipes: they are created close-on-exec in one step (another
            // plugin started meanwhile cannot inherit them and hold them open), and writing to a
            // plugin that quit reports EPIPE instead of raising SIGPIPE (send's MSG_NOSIGNAL).
            // Plugins read and write them like pipes.
            var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
            let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            guard socketpair(AF_UNIX, kind, 0, &input) == 0, socketpair(AF_UNIX, kind, 0, &output) == 0,
                  socketpair(AF_UNIX, kind, 0, &errors) == 0 else {
                throw LaunchError(description: "cannot create sockets for the plugin: \(String(cString: strerror(errno)))")
            }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, input[1], 0)
            posix_spawn_file_actions_adddup2(&actions, output[1], 1)
            posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
            // After the dup2s: the plugin gets its three sockets and nothing else of ours.
            closeInheritedDescriptors(in: &actions)

            let argv = ([executable] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var pid: pid_t = 0
            // Its own process group, so a deadline can end everything it started.
            let code = withSpawnAttributes(flags: POSIX_SPAWN_SETPGROUP) { attributes in
                posix_spawnattr_setpgroup(&attributes, 0)
                return posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
            }
            close(input[1])
            close(output[1])
            close(errors[1])
            guard code == 0 else {
                close(input[0])
                close(output[0])
                close(errors[0])
                throw LaunchError(description: "cannot start \(executable): \(String(cString: strerror(code)))")
            }
            for descriptor in [input[0], output[0], errors[0]] {
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            }
            self.pid = pid
            self.stdin = input[0]
            self.stdout = output[0]
            self.stderr = errors[0]
        }
    }
}
