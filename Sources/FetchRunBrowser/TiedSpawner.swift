import CLinux
import Dispatch
import FetchRunKit
import Foundation

/// Starts browsers from a thread that lives as long as fetchrun does, tied to it: the kernel
/// kills a browser when the thread that started it ends (`PR_SET_PDEATHSIG`), which for this
/// thread is when the process ends — stopped, crashed or killed with SIGKILL alike. A task's
/// thread would not do: the pool's threads come and go.
final class TiedSpawner: Sendable {
    static let shared = TiedSpawner()

    private struct State: Sendable {
        var started = false
        var requests: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)

    private init() {}

    /// Starts `executable` with `arguments` and `environment` (see `fetchrun_spawn_tied`):
    /// output to `logFD`.
    /// - Returns: the child's pid, or -1 and the `errno` of the failed fork.
    func spawn(_ executable: String, arguments: [String], environment: [String: String], logFD: Int32) async -> (pid: pid_t, error: Int32) {
        await withCheckedContinuation { continuation in
            let startThread = state.withLock { state -> Bool in
                state.requests.append {
                    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
                    let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
                    defer {
                        argv.forEach { free($0) }
                        envp.forEach { free($0) }
                    }
                    let pid = fetchrun_spawn_tied(executable, argv, envp, logFD)
                    continuation.resume(returning: (pid, pid > 0 ? 0 : errno))
                }
                defer { state.started = true }
                return !state.started
            }
            if startThread {
                let thread = Thread { [self] in serve() }
                thread.name = "fetchrun-browser-spawner"
                thread.start()
            }
            wake.signal()
        }
    }

    private func serve() {
        while true {
            wake.wait()
            let requests = state.withLock { state in
                defer { state.requests = [] }
                return state.requests
            }
            for request in requests { request() }
        }
    }
}
