import CLinux
import Foundation
import Synchronization
import Testing

/// A process the tests start, spawned with `posix_spawn` and reaped by a thread of its own.
///
/// Not Foundation's `Process`: its exit notification is delivered through the test process's
/// run loop and dispatch queues, and a suite that waits on it with every cooperative thread
/// busy (two on a two-core machine) can wait for ever. A blocking `waitpid` on a dedicated
/// thread has no such dependency, and every wait here is bounded.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    private let status = Mutex<Int32?>(nil)
    /// Signalled once, by the reaper, when the status is known: what a synchronous wait blocks on.
    private let reaped = DispatchSemaphore(value: 0)

    public struct SpawnError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts `executable` in `directory` with exactly `environment`; stdin reads /dev/null,
    /// stdout and stderr go to the named files (created or truncated) or /dev/null.
    public init(executable: String, arguments: [String], environment: [String: String], directory: String, stdout: String? = nil, stderr: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        fetchrun_spawn_addchdir(&actions, directory)
        // Nothing else of the test process's: a script another test is writing, held open by
        // this child, would fail to start with "Text file busy".
        fetchrun_spawn_addclosefrom(&actions, 3)
        // Default signal handling in the child, whatever the test process ignores.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var spawned: pid_t = 0
        let code = posix_spawn(&spawned, executable, &actions, &attributes, argv, envp)
        guard code == 0 else { throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(code)))") }
        pid = spawned

        let reaper = Thread { [self] in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 {
                guard errno == EINTR else { break }
            }
            // The shell's convention: the exit code, or 128 + the signal that ended it.
            let code = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
            status.withLock { $0 = code }
            reaped.signal()
        }
        reaper.stackSize = 64 * 1024
        reaper.start()
    }

    /// Whether it has not been reaped yet.
    public var isRunning: Bool { status.withLock { $0 == nil } }

    /// The exit code, or 128 + the signal that ended it; -1 while it runs.
    public var terminationStatus: Int32 { status.withLock { $0 } ?? -1 }

    public func signal(_ number: Int32) {
        if isRunning { kill(pid, number) }
    }

    /// Blocks the calling thread until it has exited or `timeout` has passed; whether it exited.
    /// For synchronous set-up (a PostgreSQL tool run to its end), not for a cooperative thread.
    public func blockUntilExit(timeout: Duration) -> Bool {
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        guard reaped.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success else { return false }
        // Left signalled for any other waiter.
        reaped.signal()
        return true
    }

    /// Waits until it has exited. Past `timeout` the test has hung: the process is killed and
    /// an issue recorded, so that one stuck test fails instead of stalling the whole suite.
    public func waitForExit(timeout: Duration = .seconds(120), sourceLocation: SourceLocation = #_sourceLocation) async {
        // Polling: any number of tasks may wait, and a wait ends on time whatever the child does.
        let exited = (try? await waitUntil("process \(pid) to exit (killed after \(timeout))", timeout: timeout, sourceLocation: sourceLocation) { !isRunning }) ?? false
        guard !exited else { return }
        if Task.isCancelled { Issue.record("the test was cancelled while process \(pid) ran; killed", sourceLocation: sourceLocation) }
        kill(pid, SIGKILL)
        // The reaping thread sees the killed child end at once; SIGKILL cannot be refused.
        _ = blockUntilExit(timeout: .seconds(30))
    }
}

/// A fixture could not be set up; says what is missing.
public struct FixtureError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
