import CLinux
import FetchRunKit
import Foundation

/// A headless Chromium fetchrun started: its own process group (so that stopping it stops
/// every process it forked), a profile in a fresh temporary folder (removed when it stops),
/// DevTools on a port of 127.0.0.1 the kernel picks, and its output in a log in that folder
/// (its last lines explain a failed start).
struct ChromiumProcess: Sendable {
    let pid: pid_t
    let profile: String
    /// `ws://127.0.0.1:PORT/devtools/browser/…`.
    let webSocketURL: String

    struct LaunchError: Error, CustomStringConvertible {
        var description: String
    }

    /// What fetchrun adds to the command: no window, no first-run work, no background traffic,
    /// no sandbox only when running as root (where Chromium refuses to start with one).
    /// Chromium refuses a DevTools WebSocket whose `Origin` it was not told to allow, and the
    /// WebSocket client sends `ws://127.0.0.1`: allowed by name. No web page has a `ws:`
    /// origin, so allowing it lets no page in (a test checks that a page cannot connect).
    static func arguments(profile: String) -> [String] {
        var arguments = [
            "--headless", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
            "--remote-allow-origins=ws://127.0.0.1", "--user-data-dir=\(profile)",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-extensions",
            "--disable-sync", "--disable-component-update", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
            "--password-store=basic", "--use-mock-keychain", "--disable-gpu", "--disable-features=Translate,MediaRouter,OptimizationHints",
        ]
        if geteuid() == 0 { arguments.append("--no-sandbox") }
        return arguments + ["about:blank"]
    }

    /// The program to start: `command`'s first word as given when it has a `/`, else found on `PATH`.
    static func executable(for command: [String]?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> (path: String, arguments: [String]) {
        let candidates = command.map { [$0[0]] } ?? BrowserSettings.defaultCommands
        let directories = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        for name in candidates {
            if name.contains("/") {
                if access(name, X_OK) == 0 { return (name, Array(command?.dropFirst() ?? [])) }
                continue
            }
            for directory in directories where !directory.isEmpty {
                let path = directory + "/" + name
                if access(path, X_OK) == 0 { return (path, Array(command?.dropFirst() ?? [])) }
            }
        }
        let named = command.map { "'\(TerminalText.safe($0[0], maximumLength: 200))'" } ?? candidates.joined(separator: ", ")
        throw LaunchError(description: "no browser to render with: \(named) not found\(command == nil ? " on PATH (install chromium, or set browser: { command: [...] } or browser: { url: ws://... })" : "")")
    }

    /// Starts the browser and waits until its DevTools endpoint is known: Chromium says
    /// `DevTools listening on ws://…` in its log once it listens.
    /// - Throws: ``LaunchError`` with the end of its log when it cannot start or exits;
    ///   `CancellationError` (the browser is stopped first).
    static func launch(command: [String]?) async throws -> ChromiumProcess {
        let (executable, extra) = try executable(for: command)
        var template = Array((NSTemporaryDirectory() + "fetchrun-chromium-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw LaunchError(description: "cannot make a profile folder for the browser: \(String(cString: strerror(errno)))") }
        let profile = String(cString: made)
        let pid: pid_t
        do {
            pid = try await spawn(executable, arguments: extra + arguments(profile: profile), log: profile + "/chromium.log")
        } catch {
            try? FileManager.default.removeItem(atPath: profile)
            throw error
        }
        var started = ChromiumProcess(pid: pid, profile: profile, webSocketURL: "")
        do {
            while true {
                try Task.checkCancellation()
                if let url = started.listeningURL() {
                    started = ChromiumProcess(pid: pid, profile: profile, webSocketURL: url)
                    return started
                }
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    let reason = started.logTail
                    // Its helpers (crash handler, zygote) may still run, and write to the profile.
                    await started.stop()
                    throw LaunchError(description: "the browser (\(TerminalText.safe(executable))) exited as it started: \(reason)")
                }
                // Polling a file the browser writes once: real time, whatever the run's clock.
                try await Task.sleep(for: .milliseconds(20))
            }
        } catch {
            if !(error is LaunchError) { await started.stop() }
            throw error
        }
    }

    private static func spawn(_ executable: String, arguments: [String], log: String) async throws -> pid_t {
        let logFD = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard logFD >= 0 else { throw LaunchError(description: "cannot write the browser's log \(log): \(String(cString: strerror(errno)))") }
        defer { close(logFD) }
        let spawned = await TiedSpawner.shared.spawn(executable, arguments: arguments, environment: environment(profile: (log as NSString).deletingLastPathComponent), logFD: logFD)
        guard spawned.pid > 0 else { throw LaunchError(description: "cannot start the browser (\(executable)): \(String(cString: strerror(spawned.error)))") }
        return spawned.pid
    }

    /// The DevTools WebSocket URL, once the log says the browser listens:
    /// `DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID`.
    func listeningURL() -> String? {
        guard let log = try? String(contentsOfFile: profile + "/chromium.log", encoding: .utf8) else { return nil }
        let prefix = "DevTools listening on ws://127.0.0.1:"
        guard let line = log.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
        let rest = line.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), let port = UInt16(rest[..<slash]), port > 0 else { return nil }
        let path = rest[slash...]
        guard path.hasPrefix("/devtools/browser/"), path.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "/" }) else { return nil }
        return "ws://127.0.0.1:\(port)\(path)"
    }

    /// Why the browser stopped, as its log says: its fatal error, else its last lines; made
    /// safe for a terminal.
    var logTail: String {
        guard let text = try? String(contentsOfFile: profile + "/chromium.log", encoding: .utf8) else { return "no output" }
        let lines = text.split(separator: "\n")
        if let fatal = lines.first(where: { $0.contains(":FATAL:") }) {
            return TerminalText.safe(String(fatal.split(separator: "]", maxSplits: 1).last ?? fatal).trimmingCharacters(in: .whitespaces), maximumLength: 300)
        }
        let last = lines.suffix(3).map { TerminalText.safe(String($0), maximumLength: 300) }
        return last.isEmpty ? "no output" : last.joined(separator: " / ")
    }

    /// The environment the browser gets: fetchrun's, with `TMPDIR` its profile — so that what
    /// it puts there goes with the profile — unless the socket Chromium makes in it
    /// (`TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket`) would not fit a socket path's
    /// 107 bytes: a longer one makes it exit as it starts. Then `/tmp`.
    static func environment(profile: String, _ environment: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var environment = environment
        let fits = profile.utf8.count + "/org.chromium.Chromium.XXXXXX/SingletonSocket".utf8.count <= 107
        environment["TMPDIR"] = fits ? profile : "/tmp"
        return environment
    }

    /// Stops the browser and every process of its group: SIGTERM, then SIGKILL to whatever is
    /// left after a grace; reaps it and removes its profile. Not cancellable: it always ends.
    func stop() async {
        let process = self
        // Detached: a stop asked for by a cancelled task still waits out its grace.
        await Task.detached {
            let grace = ContinuousClock.now + .seconds(2)
            kill(-process.pid, SIGTERM)
            var status: Int32 = 0
            while waitpid(process.pid, &status, WNOHANG) == 0, ContinuousClock.now < grace {
                // Real time: the kernel ends the process, not the run's clock.
                try? await Task.sleep(for: .milliseconds(20))
            }
            // Helpers (renderers, the zygote) may outlive the main process: the group goes.
            kill(-process.pid, SIGKILL)
            _ = waitpid(process.pid, &status, 0)
            process.removeProfile()
        }.value
    }

    private func removeProfile() {
        try? FileManager.default.removeItem(atPath: profile)
    }
}
