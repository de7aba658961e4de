import Foundation
import Testing

@Suite struct CommandTests {
    @Test func showPrintsSnapshotsNewestFirst() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\nsources:\n  - name: news\n    type: random-news\n    probability: 1\n", to: "sources.yaml")
        for _ in 0..<3 { #expect(try await fetchrun.run([]).status == 0) }
        let shown = try await fetchrun.run(["show"])
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("news  random-news, 3 items"))
        let titles = shown.stdoutLines.compactMap { line in line.range(of: "News text ").map { String(line[$0.lowerBound...]) } }
        #expect(titles == ["News text 3", "News text 2", "News text 1"])

        let json = try await fetchrun.run(["show", "news", "--format", "json"])
        let events = try json.stdoutLines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(events.map { $0["title"] as? String } == ["News text 3", "News text 2", "News text 1"])
        #expect(events.allSatisfy { $0["event"] as? String == "item" && $0["source"] as? String == "news" })

        let missing = try await fetchrun.run(["show", "nope"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("no snapshot for 'nope'"))
    }

    @Test func resetRemovesNamedOrAllSnapshots() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig, to: "sources.yaml")
        #expect(try await fetchrun.run([]).status == 0)
        let one = try await fetchrun.run(["reset", "traffic"])
        #expect(one.status == 0)
        #expect(one.stdout.contains("removed \(fetchrun.path("state/snapshots/traffic.json"))"))
        #expect(fetchrun.files(in: "state/snapshots") == ["newsroom.json"])
        let all = try await fetchrun.run(["reset"])
        #expect(all.stdout.contains("removed 1 snapshot"))
        #expect(fetchrun.files(in: "state/snapshots").isEmpty)
        #expect(try await fetchrun.run(["reset"]).stdout.contains("nothing to remove"))
        // After a reset the demo starts over from "News text 1".
        #expect(try await fetchrun.run(["--list-all"]).stdout.contains("+ News text 1"))
    }

    @Test func validateListsTheSources() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig + "\n  - name: off\n    type: traffic\n    enabled: false\n    interval: never\n  - name: pod\n    type: rss\n    url: http://127.0.0.1:9/pod.xml\n    enabled: false\n    download: { dir: media }\n", to: "sources.yaml")
        let result = try await fetchrun.run(["validate"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("sources.yaml: valid, 4 sources (2 enabled)"))
        #expect(result.stdout.contains("off"))
        #expect(result.stdout.contains("never"))
        #expect(result.stdout.contains(fetchrun.path("media")), "\(result.stdout)")
        // Disabled sources are not fetched.
        #expect(!(try await fetchrun.run([]).stdout.contains("off")))
    }

    @Test func adaptersListsBuiltInsWithTheirOptions() async throws {
        let result = try await FetchRunBinary().run(["adapters"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("traffic  (built-in)"))
        #expect(result.stdout.contains("random-news  (built-in)"))
        #expect(result.stdout.contains("probability"))
        #expect(result.stdout.contains("latency"))
    }

    @Test func helpDocumentsExitCodes() async throws {
        let result = try await FetchRunBinary().run(["--help"])
        #expect(result.status == 0)
        for code in ["64", "65", "73", "75"] { #expect(result.stdout.contains("  \(code)  ")) }
    }
}

@Suite struct OptionPlacementTests {
    @Test func sharedOptionsWorkBeforeOrAfterTheCommand() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("sources:\n  - name: lwn\n    type: traffic\n    min: 1\n", to: "feeds.yaml")
        let ran = try await fetchrun.run(["-c", "feeds.yaml", "--state-dir", "st", "-v", "run"])
        #expect(ran.status == 0, "\(ran.stderr)")
        let before = try await fetchrun.run(["-c", "feeds.yaml", "--state-dir=st", "show", "lwn"])
        let after = try await fetchrun.run(["show", "lwn", "-c", "feeds.yaml", "--state-dir", "st"])
        #expect(before.status == 0, "\(before.stderr)")
        #expect(before.stdout == after.stdout)
        let json = try await fetchrun.run(["--format", "json", "-vv", "--config=feeds.yaml", "--state-dir", "st", "status"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.hasPrefix(#"{"event":"status","source":"lwn""#), "\(json.stdout)")
        // Without a command name they go to the default command, as before.
        #expect(try await fetchrun.run(["-c", "feeds.yaml", "--state-dir", "st"]).status == 0)
        // A command that does not take one says so, wherever it was written.
        let wrong = try await fetchrun.run(["--state-dir", "st", "validate", "-c", "feeds.yaml"])
        #expect(wrong.status == 64)
        #expect(wrong.stderr.contains("--state-dir"), "\(wrong.stderr)")
    }

    @Test func theTopLevelHelpShowsTheSharedOptionsAndTheExitCodes() async throws {
        let help = try await FetchRunBinary().run(["--help"])
        #expect(help.stdout.contains("-c/--config FILE"))
        #expect(help.stdout.contains("Exit codes:") && help.stdout.contains("130"))
    }
}
