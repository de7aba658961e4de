import Foundation
import Testing
import TestSupport

/// External adapter plugins, run for real: the example plugins, a mixed config, and every way
/// a plugin can misbehave — each failing only its own source.
@Suite struct PluginTests: ScriptedPlugins {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let examples = repository.appendingPathComponent("examples/plugins").path

    @Test func builtInPluginsFolderPathAndExecSourcesRunTogether() async throws {
        let fetchrun = try FetchRunBinary()
        // A plugin in the config's plugins/ folder that echoes what it was sent back as state.
        try script(fetchrun, "plugins/fetchrun-adapter-echo", """
            request=$(cat)
            count=$(printf '%s' "$request" | grep -o '"id":"' | wc -l)
            printf '{"id":"echo-%s","title":"seen %s before"}\\n' "$count" "$count"
            printf '{"state":{"previous_items":%s}}\\n' "$count"
            """)
        // A plugin found on PATH.
        try script(fetchrun, "bin/fetchrun-adapter-onpath", "cat >/dev/null; echo '{\"id\":\"p1\",\"title\":\"from PATH\",\"link\":\"https://example.org/p1\"}'")
        try script(fetchrun, "scripts/once.sh", "cat >/dev/null; echo '{\"id\":\"x1\",\"title\":\"from exec\",\"published\":\"2026-11-22T06:00:00Z\"}'")
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: news
                type: random-news
              - name: echo
                type: echo
              - name: onpath
                type: onpath
              - name: once
                type: exec
                command: [scripts/once.sh, --flag]
            """, to: "sources.yaml")
        let environment = ["PATH": fetchrun.path("bin") + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")]
        let first = try await fetchrun.run(["--format", "json"], environment: environment)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let outcomes = try sources(first)
        #expect(outcomes.count == 4)
        #expect(outcomes.values.allSatisfy { $0["outcome"] as? String == "newData" })
        #expect(first.stdout.contains("\"title\":\"from PATH\""))
        #expect(first.stdout.contains("\"title\":\"from exec\""))

        // Items and state round-trip: the plugin sees its previous item, and its state is kept.
        let second = try await fetchrun.run(["--format", "json"], environment: environment)
        #expect(second.stdout.contains("\"title\":\"seen 1 before\""))
        let snapshot = try fetchrun.read("state/snapshots/echo.json")
        #expect(snapshot.contains("\"previous_items\":1"))
        #expect(try fetchrun.read("state/snapshots/once.json").contains("\"published\":\"2026-11-22T06:00:00Z\""))
    }

    @Test func badPluginsFailOnlyTheirOwnSourceWithAClearReason() async throws {
        let fetchrun = try FetchRunBinary()
        try script(fetchrun, "exits-1.sh", "cat >/dev/null; echo 'warming up' >&2; echo 'cannot reach the mail server' >&2; exit 1")
        try script(fetchrun, "hangs.sh", "sleep 300 & echo $! > \(fetchrun.path("orphan.pid")); cat >/dev/null; sleep 300")
        try script(fetchrun, "huge.sh", "cat >/dev/null; yes '{\"id\":\"x\",\"title\":\"again and again and again\"}'")
        try script(fetchrun, "invalid.sh", "cat >/dev/null; echo '{\"id\":\"a\",\"title\":\"A\"}'; echo 'this is not json'")
        try script(fetchrun, "no-id.sh", "cat >/dev/null; echo '{\"title\":\"nameless\"}'")
        try script(fetchrun, "garbage-stderr.sh", "cat >/dev/null; head -c 4096 /dev/urandom >&2; echo '{\"id\":\"g\",\"title\":\"fine anyway\"}'")
        try script(fetchrun, "no-stdin.sh", "echo '{\"id\":\"n\",\"title\":\"did not read\"}'")
        try fetchrun.write("not a program", to: "not-executable.sh")
        var config = "state_dir: state\ndefaults: { deadline: 2s }\nsources:\n  - name: good\n    type: random-news\n"
        for name in ["exits-1", "hangs", "huge", "invalid", "no-id", "garbage-stderr", "no-stdin", "not-executable", "missing"] {
            config += "  - name: \(name)\n    type: exec\n    command: [./\(name).sh]\n    big: \"\(String(repeating: "x", count: name == "no-stdin" ? 500_000 : 1))\"\n"
        }
        try fetchrun.write(config, to: "sources.yaml")

        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 2, "\(result.stderr)")
        // The hanging plugin is cut off at its 2s deadline; nothing waits for its sleep.
        #expect(result.duration < .seconds(6), "took \(result.duration)")
        let outcomes = try sources(result)
        func reason(_ name: String) -> String { (outcomes[name]?["failure"] as? [String: Any])?["message"] as? String ?? "" }
        func kind(_ name: String) -> String? { (outcomes[name]?["failure"] as? [String: Any])?["kind"] as? String }
        #expect(outcomes["good"]?["outcome"] as? String == "newData")
        #expect(reason("exits-1") == "exits-1.sh exited with status 1: warming up | cannot reach the mail server")
        #expect(kind("hangs") == "deadlineExceeded")
        #expect(reason("huge").contains("wrote more than 10 MiB to stdout"))
        #expect(reason("invalid").contains("plugin output line 2 is not a JSON object: 'this is not json'"))
        #expect(reason("no-id").contains("plugin output line 1: an item needs an 'id'"))
        #expect(outcomes["garbage-stderr"]?["outcome"] as? String == "newData")
        #expect(outcomes["no-stdin"]?["outcome"] as? String == "newData")
        #expect(reason("not-executable").contains("Permission denied"))
        #expect(reason("missing").contains("No such file or directory"))

        // No orphan: the hanging plugin's background child went with its process group.
        let orphan = try #require(Int32(try fetchrun.read("orphan.pid").trimmingCharacters(in: .whitespacesAndNewlines)))
        // Killed but not yet reaped by its new parent, it may linger as a zombie: that is dead
        // too. And on a busy machine its pid may already belong to another process.
        let state = (try? String(contentsOfFile: "/proc/\(orphan)/stat", encoding: .utf8))?.split(separator: ")").last?.split(separator: " ").first
        let command = (try? String(contentsOfFile: "/proc/\(orphan)/cmdline", encoding: .utf8)) ?? ""
        let survived = state != nil && state != "Z" && command == "sleep\u{0}300\u{0}"
        #expect(!survived, "process \(orphan) (\(command)) survived in state \(state.map(String.init) ?? "?")")
        // Failed sources keep no snapshot; the good one has its own.
        #expect(fetchrun.files(in: "state/snapshots").sorted() == ["garbage-stderr.json", "good.json", "no-stdin.json"])
    }

    @Test func describedOptionsAreCheckedAndListed() async throws {
        let fetchrun = try FetchRunBinary()
        let environment = ["PATH": Self.examples + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")]
        try fetchrun.write("sources:\n  - name: files\n    type: folder\n    path: inbox\n    patern: '*.txt'\n", to: "sources.yaml")
        let invalid = try await fetchrun.run(["validate"], environment: environment)
        #expect(invalid.status == 65)
        #expect(invalid.stderr.contains("sources.yaml:5:5: source 'files': unknown key 'patern' (did you mean 'pattern'?)"))
        let listed = try await fetchrun.run(["adapters"], environment: environment)
        #expect(listed.stdout.contains("folder  (\(Self.examples)/fetchrun-adapter-folder) — new files in a folder"))
        #expect(listed.stdout.contains("git-commits  ("))
        #expect(listed.stdout.contains("branch      string, default HEAD"))
    }

    @Test func examplePythonPluginReportsNewCommits() async throws {
        let fetchrun = try FetchRunBinary()
        let repo = fetchrun.path("repo")
        func git(_ arguments: String...) async throws {
            let process = try ChildProcess(
                executable: "/usr/bin/env", arguments: ["git", "-C", repo, "-c", "user.name=Test", "-c", "user.email=test@example.org"] + arguments,
                environment: ProcessInfo.processInfo.environment, directory: fetchrun.folder.path
            )
            await process.waitForExit()
            #expect(process.terminationStatus == 0, "git \(arguments)")
        }
        try FileManager.default.createDirectory(atPath: repo, withIntermediateDirectories: true)
        try await git("init", "-q")
        try await git("commit", "-q", "--allow-empty", "-m", "First commit")
        try await git("commit", "-q", "--allow-empty", "-m", "Second commit")
        try fetchrun.write("state_dir: state\nsources:\n  - name: commits\n    type: exec\n    command: [\(Self.examples)/fetchrun-adapter-git-commits]\n    repository: repo\n", to: "sources.yaml")
        let first = try await fetchrun.run(["--list-all"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("commits  newData     2 new"))
        #expect(first.stdout.contains("+ Second commit"))
        try await git("commit", "-q", "--allow-empty", "-m", "Third commit")
        let second = try await fetchrun.run([])
        #expect(second.stdout.contains("commits  newData     1 new      3 total"))
        #expect(second.stdout.contains("+ Third commit"))
        #expect(try fetchrun.read("state/snapshots/commits.json").contains("\"head\":"))
    }

    @Test func exampleShellPluginReportsNewFiles() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("one", to: "inbox/a.txt")
        try fetchrun.write("two", to: "inbox/b.log")
        try fetchrun.write("plugins", to: "unused")
        try FileManager.default.createDirectory(atPath: fetchrun.path("plugins"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.examples + "/fetchrun-adapter-folder", toPath: fetchrun.path("plugins/fetchrun-adapter-folder"))
        try fetchrun.write("state_dir: state\nsources:\n  - name: inbox\n    type: folder\n    path: inbox\n    pattern: '*.txt'\n", to: "sources.yaml")
        let first = try await fetchrun.run(["--list-all"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("inbox  newData     1 new"))
        #expect(first.stdout.contains("+ a.txt"))
        try fetchrun.write("three", to: "inbox/c \"quoted\".txt")
        let second = try await fetchrun.run([])
        #expect(second.stdout.contains("+ c \"quoted\".txt"))
        #expect(second.stdout.contains("inbox  newData     1 new      2 total"))
    }
}
