import Foundation
import Testing

/// `examples/systemd/`: units that systemd accepts, run what they say, and keep their promises.
@Suite struct ServiceUnitTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("examples/systemd")

    func unit(_ name: String) throws -> String {
        try String(contentsOf: Self.folder.appendingPathComponent(name), encoding: .utf8)
    }

    /// What `executable` prints on stdout and stderr together.
    func output(of executable: String, _ arguments: [String]) async throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("unit-output-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let child = try ChildProcess(executable: executable, arguments: arguments, environment: ProcessInfo.processInfo.environment,
                                     directory: FileManager.default.temporaryDirectory.path, stdout: file, stderr: file)
        await child.waitForExit()
        return try String(contentsOfFile: file, encoding: .utf8)
    }

    @Test func theUnitsSayWhatTheyPromise() async throws {
        let watch = try unit("fetchrun-watch.service")
        for line in ["ExecStart=/usr/local/bin/fetchrun watch ", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID",
                     "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=read-only"] {
            #expect(watch.contains(line), "fetchrun-watch.service lacks \(line)")
        }
        let once = try unit("fetchrun.service")
        #expect(once.contains("ExecStart=/usr/local/bin/fetchrun run --due "))
        #expect(once.contains("SuccessExitStatus=2"))
        let timer = try unit("fetchrun.timer")
        #expect(timer.contains("OnCalendar=") && timer.contains("Persistent=true"))
        // The options the units pass are ones fetchrun takes.
        let watchHelp = try await output(of: FetchRunBinary.path, ["watch", "--help"])
        #expect(watchHelp.contains("--grace") && watchHelp.contains("--config"))
        let runHelp = try await output(of: FetchRunBinary.path, ["run", "--help"])
        #expect(runHelp.contains("--due"))
    }

    @Test func systemdAcceptsTheUnits() async throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else { return }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("units-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        // verify checks that ExecStart's program exists: point it at the built binary.
        for name in ["fetchrun-watch.service", "fetchrun.service", "fetchrun.timer"] {
            let text = try unit(name).replacingOccurrences(of: "/usr/local/bin/fetchrun", with: FetchRunBinary.path)
            try Data(text.utf8).write(to: scratch.appendingPathComponent(name))
        }
        let paths = ["fetchrun-watch.service", "fetchrun.service", "fetchrun.timer"].map { scratch.appendingPathComponent($0).path }
        let said = try await output(of: analyze, ["verify", "--man=no"] + paths)
        #expect(said.isEmpty, "systemd-analyze verify: \(said)")
    }
}
