import Foundation
import Testing
import TestSupport

/// The bundled config's shape: both synthetic adapters, state beside the config.
let demoConfig = """
    state_dir: state
    sources:
      - name: traffic
        type: traffic
        latency: 10ms..50ms
      - name: newsroom
        type: random-news
        latency: 10ms..50ms
    """

@Suite struct OneShotTests {
    @Test func firstRunReportsEverySourceAndWritesSnapshots() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig, to: "sources.yaml")

        let first = try await fetchrun.run(["--config", "sources.yaml"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("traffic"))
        #expect(first.stdout.contains("newsroom  newData"))
        // A first fetch is a baseline, not news: one line says so and where to see the items.
        #expect(first.stdout.contains("    baseline: 1 item, not listed; `fetchrun show newsroom` lists them"), "\(first.stdout)")
        #expect(!first.stdout.contains("+ News text 1"))
        #expect(first.stdoutLines.last?.hasPrefix("newData: ") == true)
        #expect(fetchrun.files(in: "state/snapshots").contains("newsroom.json"))
        #expect(fetchrun.files(in: "state/snapshots").contains("traffic.json"))
        // Output to a pipe carries no colour codes.
        #expect(!first.stdout.contains("\u{1B}["))

        // `run` is the default subcommand: both spellings do the same.
        let second = try await fetchrun.run(["run", "--config", "sources.yaml", "--format", "json"])
        #expect(second.status == 0)
        let events = try second.stdoutLines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        let sources = events.filter { $0["event"] as? String == "source" }
        let news = try #require(sources.first { $0["source"] as? String == "newsroom" })
        let newCount = news["new"] as? Int ?? -1
        // The coin: "News text 2" or nothing.
        #expect(newCount == 0 || newCount == 1)
        #expect(news["total"] as? Int == 1 + newCount)
        #expect(news["outcome"] as? String == (newCount == 1 ? "newData" : "noData"))
        let traffic = try #require(sources.first { $0["source"] as? String == "traffic" })
        #expect((0...2).contains(traffic["new"] as? Int ?? -1))
        let items = events.filter { $0["event"] as? String == "item" }
        #expect(items.count == newCount + (traffic["new"] as? Int ?? 0))
        if newCount == 1 {
            #expect(items.contains { $0["title"] as? String == "News text 2" })
        }
        #expect(events.last?["event"] as? String == "run")
        #expect(events.allSatisfy { $0["event"] != nil })

        let snapshot = try JSONSerialization.jsonObject(with: Data(try fetchrun.read("state/snapshots/newsroom.json").utf8)) as! [String: Any]
        #expect(snapshot["version"] as? Int == 1)
        #expect(snapshot["source"] as? String == "newsroom")
        #expect((snapshot["items"] as? [Any])?.count == 1 + newCount)
    }

    @Test func configComesFromTheEnvironmentThenTheWorkingFolder() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig, to: "sources.yaml")
        try fetchrun.write("sources:\n  - name: other\n    type: random-news\n", to: "other/other.yaml")
        #expect(try await fetchrun.run([]).stdout.contains("newsroom"))
        let fromEnvironment = try await fetchrun.run([], environment: ["FETCHRUN_CONFIG": "other/other.yaml"])
        #expect(fromEnvironment.stdout.contains("other"))
        // state_dir defaults to .fetchrun beside the config file.
        #expect(fetchrun.exists("other/.fetchrun/snapshots/other.json"))
    }

    @Test func slowSourceFailsAtItsDeadlineWhileOthersSucceed() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: slow
                type: traffic
                latency: 5s
                deadline: 1s
              - name: quick
                type: random-news
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["-c", "sources.yaml"])
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("slow   failed"))
        #expect(result.stdout.contains("deadline exceeded after 1s"))
        #expect(result.stdout.contains("quick  newData"))
        // The run ends at the 1s deadline, not after the 5s latency.
        #expect(result.duration < .seconds(4), "took \(result.duration)")
        #expect(!fetchrun.exists("state/snapshots/slow.json"))
        #expect(fetchrun.exists("state/snapshots/quick.json"))
    }

    @Test func everySourceFailingExitsThree() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("sources:\n  - name: slow\n    type: traffic\n    latency: 3s\n    deadline: 100ms\n", to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 3)
        #expect(result.stdout.contains("\"result\":\"failed\""))
        #expect(result.stdout.contains("\"kind\":\"deadlineExceeded\""))
    }

    @Test func sourceOptionSelectsSourcesAndRejectsUnknownNames() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig, to: "sources.yaml")
        let one = try await fetchrun.run(["--source", "newsroom"])
        #expect(one.status == 0)
        #expect(one.stdout.contains("newsroom") && !one.stdout.contains("traffic"))
        let unknown = try await fetchrun.run(["--source", "nope"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("unknown source 'nope'"))
    }

    @Test func dryRunWritesNothing() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig, to: "sources.yaml")
        let result = try await fetchrun.run(["--dry-run", "--list-all"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("News text 1"))
        #expect(!fetchrun.exists("state"))
    }

    @Test func stateDirOptionOverridesTheConfig() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig, to: "sources.yaml")
        #expect(try await fetchrun.run(["--state-dir", "elsewhere"]).status == 0)
        #expect(fetchrun.exists("elsewhere/snapshots/newsroom.json"))
        #expect(!fetchrun.exists("state"))
    }

    @Test func colourOnlyOnATerminalAndNeverWithNoColor() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig, to: "sources.yaml")
        #expect(!(try await fetchrun.run([]).stdout.contains("\u{1B}[")))

        // util-linux's `script` gives fetchrun a pseudo-terminal for its stdout.
        let script = "/usr/bin/script"
        try #require(FileManager.default.isExecutableFile(atPath: script))
        func onTerminal(_ environment: [String: String]) async throws -> String {
            var env = ProcessInfo.processInfo.environment
            env["NO_COLOR"] = nil
            let output = fetchrun.path(".terminal-\(UUID().uuidString)")
            let process = try ChildProcess(
                executable: script, arguments: ["-qec", "\(FetchRunBinary.path) --dry-run --list-all --state-dir never-written", "/dev/null"],
                environment: env.merging(environment) { _, new in new }, directory: fetchrun.folder.path, stdout: output
            )
            await process.waitForExit()
            return try fetchrun.read((output as NSString).lastPathComponent)
        }
        let coloured = try await onTerminal([:])
        #expect(coloured.contains("News text 1"))
        #expect(coloured.contains("\u{1B}[32m"))
        let plain = try await onTerminal(["NO_COLOR": "1"])
        #expect(plain.contains("News text 1"))
        #expect(!plain.contains("\u{1B}["))
    }
}

/// The run's last line and exit status tell the same story; first fetches are baselines.
@Suite struct HonestSummaryTests {
    @Test func aReportListsTenNewItemsAndListAllEveryOne() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("sources:\n  - name: busy\n    type: traffic\n    min: 12\n    max: 12\n", to: "sources.yaml")
        let first = try await fetchrun.run(["--state-dir", "state"])
        #expect(first.stdout.contains("baseline: 12 items, not listed; `fetchrun show busy` lists them"), "\(first.stdout)")
        let second = try await fetchrun.run(["--state-dir", "state"])
        #expect(second.stdoutLines.filter { $0.hasPrefix("    + ") }.count == 10, "\(second.stdout)")
        #expect(second.stdout.contains("    … and 2 more (`--list-all` lists every one)"))
        let third = try await fetchrun.run(["--state-dir", "state", "--list-all"])
        #expect(third.stdoutLines.filter { $0.hasPrefix("    + ") }.count == 12, "\(third.stdout)")
        #expect(!third.stdout.contains("more"))
    }

    @Test func ctrlCDuringTheFetchesSavesWhatFinishedAndExits130() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            sources:
              - name: quick
                type: traffic
                min: 1
              - name: slow
                type: traffic
                latency: 120s
                deadline: 300s
            """, to: "sources.yaml")
        let running = try fetchrun.start(["--state-dir", "state"])
        // The quick source's snapshot is written while the slow one is still waiting; its state
        // follows a moment later (group commit), and a stop in between must still record it.
        try await waitUntil("the quick source's snapshot", timeout: .seconds(60)) { fetchrun.exists("state/snapshots/quick.json") }
        #expect(fetchrun.exists("state/snapshots/quick.json"))
        kill(running.pid, SIGINT)
        await running.waitForExit()
        #expect(running.process.terminationStatus == 130)
        let stdout = try String(contentsOf: running.stdout, encoding: .utf8)
        #expect(stdout.contains("quick  newData"), "\(stdout)")
        #expect(stdout.split(separator: "\n").contains { $0.hasPrefix("slow ") && $0.contains("cancelled") }, "\(stdout)")
        #expect(stdout.split(separator: "\n").last?.hasPrefix("interrupted (newData)") == true, "\(stdout)")
        #expect(!fetchrun.exists("state/snapshots/slow.json"))
    }
}
