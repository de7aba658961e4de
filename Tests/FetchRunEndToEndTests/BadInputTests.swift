import Foundation
import Testing
import TestSupport

/// Every bad input gets a clear message that says what and where, the right exit code,
/// and loses nothing.
@Suite struct BadInputTests {
    /// Validates and runs `config`; both must exit 65 with `message` on stderr and write no state.
    func expectInvalid(_ config: String, message: String, environment: [String: String] = [:]) async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(config, to: "sources.yaml")
        for arguments in [["validate"], ["--config", "sources.yaml"]] {
            let result = try await fetchrun.run(arguments, environment: environment)
            #expect(result.status == 65, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        #expect(!fetchrun.exists(".fetchrun"))
    }

    @Test func yamlSyntaxError() async throws {
        try await expectInvalid("sources:\n  - name: a\n    type: [traffic\n", message: "sources.yaml:4:1: YAML syntax error: did not find expected ',' or ']'")
    }

    @Test func unknownKey() async throws {
        try await expectInvalid("sources:\n  - name: traffic\n    type: traffic\n    intervall: 5m\n",
                          message: "sources.yaml:4:5: source 'traffic': unknown key 'intervall' (did you mean 'interval'?)")
    }

    @Test func wrongType() async throws {
        try await expectInvalid("sources:\n  - name: t\n    type: traffic\n    max: [2]\n", message: "sources.yaml:4:10: source 't': 'max' must be a whole number, not a list")
    }

    @Test func badDuration() async throws {
        try await expectInvalid("sources:\n  - name: t\n    type: traffic\n    deadline: 10 seconds\n", message: "sources.yaml:4:15: source 't': 'deadline': invalid duration '10 seconds'")
    }

    @Test func duplicateName() async throws {
        try await expectInvalid("sources:\n  - name: t\n    type: traffic\n  - name: t\n    type: random-news\n", message: "sources.yaml:4:11: duplicate source name 't' (first used at 2:11)")
    }

    @Test func unknownAdapter() async throws {
        try await expectInvalid("sources:\n  - name: t\n    type: trafic\n", message: "sources.yaml:3:11: source 't': unknown adapter type 'trafic' (did you mean 'traffic'?); known types: exec, json, page, random-news, rss, traffic, or a plugin fetchrun-adapter-trafic in plugins/ or on PATH")
    }

    @Test func nameWithSlashOrDotDot() async throws {
        try await expectInvalid("sources:\n  - name: a/b\n    type: traffic\n", message: "sources.yaml:2:11: invalid source name 'a/b'")
        try await expectInvalid("sources:\n  - name: ..\n    type: traffic\n", message: "sources.yaml:2:11: invalid source name '..'")
    }

    @Test func unsetVariable() async throws {
        try await expectInvalid("sources:\n  - name: t\n    type: traffic\n    seed: ${FETCHRUN_TEST_UNSET}\n",
                          message: "sources.yaml:4:11: source 't': 'seed': environment variable 'FETCHRUN_TEST_UNSET' is not set")
    }

    @Test func validateReportsEveryError() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("sources:\n  - name: a\n    type: traffic\n    mni: 1\n  - name: b\n    type: nope\n  - name: c\n    type: random-news\n    probability: 2\n", to: "sources.yaml")
        let result = try await fetchrun.run(["validate"])
        #expect(result.status == 65)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 4)
        #expect(lines.last == "fetchrun: 3 problems in sources.yaml")
    }

    @Test func missingConfigFile() async throws {
        let fetchrun = try FetchRunBinary()
        let result = try await fetchrun.run(["--config", "missing.yaml"])
        #expect(result.status == 65)
        #expect(result.stderr.contains("missing.yaml: cannot read the config file: no such file"))
    }

    @Test func usageErrorExits64() async throws {
        let fetchrun = try FetchRunBinary()
        #expect(try await fetchrun.run(["--format", "xml"]).status == 64)
        #expect(try await fetchrun.run(["--no-such-flag"]).status == 64)
    }

    @Test func corruptSnapshotIsMovedAsideAndTheSourceStartsAgain() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(demoConfig, to: "sources.yaml")
        try fetchrun.write("{\"version\": 1, \"items\": [tru", to: "state/snapshots/newsroom.json")
        let result = try await fetchrun.run([])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("! snapshot"))
        #expect(result.stdout.contains("moved to"))
        // Starting again is a baseline: said as one line.
        #expect(result.stdout.contains("baseline: 1 item, not listed; `fetchrun show newsroom` lists them"), "\(result.stdout)")
        let aside = try #require(fetchrun.files(in: "state/snapshots").first { $0.hasPrefix("newsroom.json.corrupt-") })
        // Nothing is lost: the unreadable file is kept, byte for byte.
        #expect(try fetchrun.read("state/snapshots/\(aside)") == "{\"version\": 1, \"items\": [tru")
        #expect(fetchrun.files(in: "state/snapshots").contains("newsroom.json"))
    }

    @Test func stateDirectoryThatCannotBeWrittenExits73() async throws {
        let fetchrun = try FetchRunBinary()
        // /proc is a directory no one (root included) can create files in.
        try fetchrun.write("state_dir: /proc\nsources:\n  - name: t\n    type: traffic\n", to: "sources.yaml")
        let readOnly = try await fetchrun.run([])
        #expect(readOnly.status == 73)
        #expect(readOnly.stderr.contains("state directory /proc"))

        try fetchrun.write("not a directory", to: "state")
        try fetchrun.write("state_dir: state\nsources:\n  - name: t\n    type: traffic\n", to: "sources.yaml")
        let notADirectory = try await fetchrun.run([])
        #expect(notADirectory.status == 73)
        #expect(notADirectory.stderr.contains("is not a directory"))
        #expect(try fetchrun.read("state") == "not a directory")
    }

    @Test func concurrentSecondRunExits75() async throws {
        let fetchrun = try FetchRunBinary()
        // The first run's only source blocks until the test creates `go`: it holds the lock
        // for as long as the second run needs, however slowly a loaded machine starts that one.
        try fetchrun.write("#!/bin/sh\ntouch \(fetchrun.path("started"))\nwhile [ ! -e \(fetchrun.path("go")) ]; do sleep 0.02; done\necho '{\"id\": \"x\", \"title\": \"x\"}'\n", to: "blocking.sh")
        chmod(fetchrun.path("blocking.sh"), 0o755)
        try fetchrun.write("state_dir: state\nsources:\n  - name: slow\n    type: exec\n    command: [./blocking.sh]\n    deadline: 60s\n", to: "sources.yaml")
        let first = try fetchrun.start([])
        try await waitUntil("the plugin's start") { fetchrun.exists("started") }
        let second = try await fetchrun.run([])
        #expect(second.status == 75)
        #expect(second.stderr.contains("is in use by process \(first.pid)"))
        try fetchrun.write("", to: "go")
        await first.waitForExit()
        #expect(first.process.terminationStatus == 0)
        #expect(fetchrun.exists("state/snapshots/slow.json"))
    }
}

@Suite struct OneBadSourceEndToEndTests {
    @Test func aBrokenSourceFailsAloneWhileValidateStillRefusesIt() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            sources:
              - name: good
                type: traffic
                min: 1
              - name: broken
                type: traffic
                latncy: 1s
            """, to: "sources.yaml")
        let run = try await fetchrun.run(["--state-dir", "state"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stdout.contains("good    newData"), "\(run.stdout)")
        let line = try #require(run.stdoutLines.first { $0.hasPrefix("broken") })
        #expect(line.contains("failed") && line.contains("sources.yaml:7:5: source 'broken': unknown key 'latncy' (did you mean 'latency'?)"), "\(line)")
        let json = try await fetchrun.run(["--state-dir", "state", "--format", "json"])
        #expect(json.stdout.contains(#""kind":"config""#))
        // Other commands go on working.
        #expect(try await fetchrun.run(["show", "good", "--state-dir", "state"]).status == 0)
        let validate = try await fetchrun.run(["validate"])
        #expect(validate.status == 65)
        #expect(validate.stderr.contains("sources.yaml:7:5"))
    }
}
