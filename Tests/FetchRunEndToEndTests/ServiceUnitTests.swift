import Foundation
import Testing
import TestSupport

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
        for line in ["Type=notify", "WatchdogSec=", "ExecStart=/usr/local/bin/fetchrun watch ", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID",
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

/// `make install`: the binary, a man page that renders, and completions that know the sources.
@Suite struct InstallTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func run(_ executable: String, _ arguments: [String], in directory: String, environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("install-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let child = try ChildProcess(executable: executable, arguments: arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
                                     directory: directory, stdout: file, stderr: file)
        await child.waitForExit()
        return (child.terminationStatus, try String(contentsOfFile: file, encoding: .utf8))
    }

    @Test func installPutsTheBinaryManPageAndCompletionsUnderThePrefix() async throws {
        // `make test` generates the manual before the tests run (`make manual`): a test cannot
        // run SwiftPM itself while `swift test` holds the build folder.
        let manual = Self.root.appendingPathComponent(".build/plugins/GenerateManual/outputs/fetchrun/fetchrun.1").path
        guard FileManager.default.fileExists(atPath: manual) else {
            Issue.record("no generated manual at \(manual): run the tests with `make test`, which makes it first")
            return
        }
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("prefix-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let installed = try await run("/usr/bin/make", ["-s", "install-files", "PREFIX=\(prefix)", "FETCHRUN_BIN=\(FetchRunBinary.path)"], in: Self.root.path)
        #expect(installed.status == 0, "\(installed.output)")
        for file in ["bin/fetchrun", "share/man/man1/fetchrun.1", "share/bash-completion/completions/fetchrun", "share/zsh/site-functions/_fetchrun", "share/fish/vendor_completions.d/fetchrun.fish"] {
            #expect(FileManager.default.fileExists(atPath: prefix + "/" + file), "\(file) not installed")
        }
        #expect(FileManager.default.isExecutableFile(atPath: prefix + "/bin/fetchrun"))

        // The man page renders, with every command in it.
        let page = try await run("/usr/bin/man", ["-l", prefix + "/share/man/man1/fetchrun.1"], in: prefix, environment: ["MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "100"])
        #expect(page.status == 0, "\(page.output)")
        for word in ["SYNOPSIS", "fetchrun", "watch", "status", "import", "Exit codes"] { #expect(page.output.contains(word), "man page lacks \(word)") }

        // Bash completes source names from the config the command line names.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("completion-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data("sources:\n  - name: lwn\n    type: traffic\n  - name: lobsters\n    type: traffic\n  - name: hn\n    type: traffic\n".utf8).write(to: URL(fileURLWithPath: folder + "/feeds.yaml"))
        let script = """
            source '\(prefix)/share/bash-completion/completions/fetchrun'
            PATH='\(prefix)/bin':"$PATH"
            COMP_WORDS=(fetchrun show -c feeds.yaml l); COMP_CWORD=4; COMP_LINE='fetchrun show -c feeds.yaml l'; COMP_POINT=${#COMP_LINE}
            _fetchrun fetchrun l feeds.yaml
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let completed = try await run("/bin/bash", ["-c", script], in: folder)
        #expect(completed.output.split(separator: "\n").sorted() == ["lobsters", "lwn"], "\(completed.output)")
    }
}
