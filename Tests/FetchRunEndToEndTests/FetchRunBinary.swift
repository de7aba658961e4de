import Foundation

/// Runs the built `fetchrun` binary the way a user would, in a scratch folder of its own.
struct FetchRunBinary {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var duration: Duration

        var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// The binary `swift build` put beside this test bundle; `FETCHRUN_BINARY` overrides it.
    static let path: String = {
        if let path = ProcessInfo.processInfo.environment["FETCHRUN_BINARY"] { return path }
        let bundleFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let besideBundle = bundleFolder.appendingPathComponent("fetchrun").path
        if FileManager.default.isExecutableFile(atPath: besideBundle) { return besideBundle }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return packageRoot.appendingPathComponent(".build/debug/fetchrun").path
    }()

    /// A fresh folder for one test: config files and state go here.
    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    func write(_ text: String, to name: String) throws {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }

    func read(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }

    func files(in name: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path(name))) ?? []).sorted()
    }

    /// A started fetchrun process; `exit()` waits for it without blocking a thread.
    struct Running: Sendable {
        let process: Process
        let stdout: URL
        let stderr: URL
        let exited: AsyncStream<Void>

        var pid: Int32 { process.processIdentifier }

        func waitForExit() async {
            for await _ in exited {}
        }
    }

    /// Starts fetchrun with `arguments` in the scratch folder; `NO_COLOR` and `FETCHRUN_CONFIG`
    /// are cleared unless `environment` sets them.
    func start(_ arguments: [String], environment: [String: String] = [:]) throws -> Running {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.path)
        process.arguments = arguments
        process.currentDirectoryURL = folder
        var env = ProcessInfo.processInfo.environment
        env["FETCHRUN_CONFIG"] = nil
        env["NO_COLOR"] = nil
        env.merge(environment) { _, new in new }
        process.environment = env
        let id = UUID().uuidString
        let stdout = folder.appendingPathComponent(".out-\(id)"), stderr = folder.appendingPathComponent(".err-\(id)")
        _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: stdout)
        process.standardError = try FileHandle(forWritingTo: stderr)
        process.standardInput = FileHandle.nullDevice
        let (exited, continuation) = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in continuation.finish() }
        try process.run()
        return Running(process: process, stdout: stdout, stderr: stderr, exited: exited)
    }

    /// Runs fetchrun to the end (killed after `timeout`) and returns what it printed.
    func run(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(60)) async throws -> Result {
        let clock = ContinuousClock()
        let start = clock.now
        let running = try self.start(arguments, environment: environment)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await running.waitForExit() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                if running.process.isRunning { running.process.terminate() }
            }
            await group.next()
            group.cancelAll()
        }
        await running.waitForExit()
        let result = Result(
            status: running.process.terminationStatus,
            stdout: try String(contentsOf: running.stdout, encoding: .utf8),
            stderr: try String(contentsOf: running.stderr, encoding: .utf8),
            duration: clock.now - start
        )
        try? FileManager.default.removeItem(at: running.stdout)
        try? FileManager.default.removeItem(at: running.stderr)
        return result
    }
}
