import Foundation
import Testing
import TestSupport

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

    /// A started fetchrun process, its output going to two files in the scratch folder.
    struct Running: Sendable {
        let process: ChildProcess
        let stdout: URL
        let stderr: URL

        var pid: Int32 { process.pid }

        func waitForExit(timeout: Duration = .seconds(120), sourceLocation: SourceLocation = #_sourceLocation) async {
            await process.waitForExit(timeout: timeout, sourceLocation: sourceLocation)
        }
    }

    /// Starts fetchrun with `arguments` in the scratch folder; `NO_COLOR` and `FETCHRUN_CONFIG`
    /// are cleared unless `environment` sets them.
    /// - Parameter user: runs it as this user (through `runuser`, the tests running as root).
    func start(_ arguments: [String], environment: [String: String] = [:], as user: String? = nil) throws -> Running {
        var env = ProcessInfo.processInfo.environment
        env["FETCHRUN_CONFIG"] = nil
        env["NO_COLOR"] = nil
        env.merge(environment) { _, new in new }
        let id = UUID().uuidString
        let stdout = folder.appendingPathComponent(".out-\(id)"), stderr = folder.appendingPathComponent(".err-\(id)")
        let process = try ChildProcess(
            executable: user == nil ? Self.path : "/usr/sbin/runuser",
            arguments: user.map { ["-u", $0, "--", Self.path] + arguments } ?? arguments, environment: env, directory: folder.path,
            stdout: stdout.path, stderr: stderr.path
        )
        return Running(process: process, stdout: stdout, stderr: stderr)
    }

    /// Runs fetchrun to the end and returns what it printed; past `timeout` it is killed and
    /// the test fails.
    func run(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(60), as user: String? = nil) async throws -> Result {
        let clock = ContinuousClock()
        let start = clock.now
        let running = try self.start(arguments, environment: environment, as: user)
        await running.waitForExit(timeout: timeout)
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
