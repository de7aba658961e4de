import Foundation
import FixtureServer
import Testing
import TestSupport

/// The state database through the built binary: `status`, `run --due`, backoff carried across
/// runs, a damaged database rebuilt, `reset` forgetting a source.
@Suite struct StateTests {
    /// A two-item feed.
    static let feed = #"<rss version="2.0"><channel><title>t</title><item><guid>1</guid><title>one</title></item><item><guid>2</guid><title>two</title></item></channel></rss>"#

    /// A config of one feed read from `feed.xml` beside it: missing, it fails; written, it works.
    let fileFeedConfig = "state_dir: state\nsources:\n  - name: local\n    type: rss\n    url: file:feed.xml\n    interval: 10s\n    max_backoff: 1h\n"

    func statusEvents(_ fetchrun: FetchRunBinary) async throws -> [String: [String: Any]] {
        let status = try await fetchrun.run(["status", "--format", "json"])
        var bySource: [String: [String: Any]] = [:]
        for event in try events(status.stdout) { bySource[event["source"] as? String ?? ""] = event }
        return bySource
    }

    func date(_ value: Any?) -> Date? {
        (value as? String).flatMap { ISO8601DateFormatter().date(from: $0) }
    }

    @Test func statusSaysSinceWhenASourceFailsAndRecoversAfterASuccess() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(fileFeedConfig, to: "sources.yaml")
        let never = try await fetchrun.run(["status"])
        #expect(never.status == 0, "\(never.stderr)")
        #expect(never.stdout.contains("local  never fetched"), "\(never.stdout)")

        for _ in 0..<3 { #expect(try await fetchrun.run([]).status == 3) }
        let failing = try await fetchrun.run(["status"])
        #expect(failing.status == 2)
        #expect(failing.stdout.contains("failing since "), "\(failing.stdout)")
        #expect(failing.stdout.contains(", 3 in a row"), "\(failing.stdout)")
        #expect(failing.stdout.contains("last error ("), "\(failing.stdout)")
        #expect(failing.stdout.contains("feed.xml"), "\(failing.stdout)")
        let json = try #require(try await statusEvents(fetchrun)["local"])
        #expect(json["health"] as? String == "failing")
        #expect(json["consecutive_failures"] as? Int == 3)
        #expect((json["last_error"] as? [String: Any])?["message"] as? String != nil)
        // Since the first of the three failures, not the last.
        #expect(date(json["failing_since"])! <= date(json["last_fetch"])!)

        try fetchrun.write(Self.feed, to: "feed.xml")
        #expect(try await fetchrun.run([]).status == 0)
        let healthy = try await fetchrun.run(["status"])
        #expect(healthy.status == 0)
        #expect(healthy.stdout.contains("local  ok  2 items"), "\(healthy.stdout)")
        #expect(!healthy.stdout.contains("failing"))
    }

    @Test func backoffAfterFailuresCarriesOverFromRunToRun() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(fileFeedConfig, to: "sources.yaml")
        var waits: [TimeInterval] = []
        for _ in 0..<3 {
            _ = try await fetchrun.run([])
            let json = try #require(try await statusEvents(fetchrun)["local"])
            waits.append(date(json["next_due"])!.timeIntervalSince(date(json["last_fetch"])!))
        }
        // 10 s, 20 s, 40 s, each ±20 %: every run's wait longer than the one before.
        #expect(waits[0] >= 7 && waits[0] <= 13, "\(waits)")
        #expect(waits[1] > waits[0] && waits[2] > waits[1], "\(waits)")
    }

    @Test func runDueFetchesOnlyWhatIsDue() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.feed, to: "feed.xml")
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: soon
                type: rss
                url: file:feed.xml
                interval: 1s
              - name: later
                type: traffic
                interval: 1h
              - name: manual
                type: traffic
                interval: never

            """, to: "sources.yaml")
        let first = try await fetchrun.run(["run", "--due"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("soon"), "\(first.stdout)")
        #expect(first.stdout.contains("later"), "\(first.stdout)")
        // `interval: never` is for fetching by hand, as in watch mode.
        #expect(!first.stdout.contains("manual"), "\(first.stdout)")

        let second = try await fetchrun.run(["run", "--due"])
        #expect(second.status == 0)
        #expect(!second.stdout.contains("later"), "\(second.stdout)")
        #expect(second.stderr.contains("not due yet"), "\(second.stderr)")

        // A second later the 1 s source is due again (no new data stretches it to 1.5 s at most).
        // Real time: the interval passes between two runs of the binary, on the system's clock.
        try await Task.sleep(for: .milliseconds(1_700))
        let third = try await fetchrun.run(["run", "--due"])
        #expect(third.stdout.contains("soon"), "\(third.stdout)")
        #expect(!third.stdout.contains("later"), "\(third.stdout)")

        // Plain `run` still fetches everything.
        let all = try await fetchrun.run([])
        #expect(all.stdout.contains("later") && all.stdout.contains("manual"), "\(all.stdout)")
    }

    @Test func aDatabaseLockedByAnotherProcessCostsTheRunItsDeadlineOnceAndSaysSo() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\ndefaults: { deadline: 1s }\nsources:\n" + (1...5).map { "  - { name: t\($0), type: traffic }\n" }.joined(), to: "sources.yaml")
        #expect(try await fetchrun.run([]).status == 0)
        // sqlite3 (Python's) holding a write transaction, as a backup tool would, until killed.
        try fetchrun.write("""
            import signal, sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE sources SET state = state")
            open(sys.argv[2], "w").write("locked")
            signal.pause()
            """, to: "hold.py")
        let holder = try ChildProcess(executable: "/usr/bin/python3", arguments: [fetchrun.path("hold.py"), fetchrun.path("state/state.db"), fetchrun.path("held")], environment: [:], directory: fetchrun.folder.path)
        defer { kill(holder.pid, SIGKILL) }
        try await waitUntil("the lock") { FileManager.default.fileExists(atPath: fetchrun.path("held")) }

        let locked = try await fetchrun.run([])
        #expect(locked.status == 75, "\(locked.stderr)")
        #expect(locked.stderr.contains("state database \(fetchrun.path("state/state.db")): locked by another process"), "\(locked.stderr)")
        // Five sources, each would wait 5 s per statement: the budget (1 s) is spent once.
        #expect(locked.duration < .seconds(8), "took \(locked.duration)")

        kill(holder.pid, SIGKILL)
        await holder.waitForExit(timeout: .seconds(10))
        #expect(try await fetchrun.run([]).status == 0)
    }

    @Test func aDamagedDatabaseIsMovedAsideAndRebuiltFromTheSnapshots() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.feed, to: "feed.xml")
        try fetchrun.write(fileFeedConfig, to: "sources.yaml")
        #expect(try await fetchrun.run([]).status == 0)
        try fetchrun.write(String(repeating: "not a database ", count: 500), to: "state/state.db")
        try? FileManager.default.removeItem(atPath: fetchrun.path("state/state.db-wal"))
        try? FileManager.default.removeItem(atPath: fetchrun.path("state/state.db-shm"))

        let again = try await fetchrun.run([])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("state.db was unreadable"), "\(again.stderr)")
        #expect(again.stderr.contains("rebuilt from 1 snapshot"), "\(again.stderr)")
        #expect(fetchrun.files(in: "state").contains { $0.hasPrefix("state.db.corrupt-") })
        // The snapshot was untouched: nothing is new.
        #expect(again.stdout.contains("noData"), "\(again.stdout)")
        let json = try #require(try await statusEvents(fetchrun)["local"])
        #expect(json["health"] as? String == "ok")
        #expect(json["items"] as? Int == 2)
    }

    @Test func resetForgetsTheRecordedStateAndDryRunsRecordNothing() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(fileFeedConfig, to: "sources.yaml")
        #expect(try await fetchrun.run(["--dry-run"]).status == 3)
        #expect(!fetchrun.exists("state/state.db"))
        #expect(try await fetchrun.run([]).status == 3)
        #expect(try await statusEvents(fetchrun)["local"]?["health"] as? String == "failing")
        let reset = try await fetchrun.run(["reset", "local"])
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(try await statusEvents(fetchrun)["local"]?["health"] as? String == "never_fetched")
    }

    @Test func aLinkPlantedAsTheDatabaseStopsTheRunWithAReason() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.feed, to: "feed.xml")
        try fetchrun.write(fileFeedConfig, to: "sources.yaml")
        try fetchrun.write("precious", to: "precious.txt")
        try FileManager.default.createDirectory(atPath: fetchrun.path("state"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: fetchrun.path("state/state.db"), withDestinationPath: fetchrun.path("precious.txt"))
        let result = try await fetchrun.run([])
        #expect(result.status == 73)
        #expect(result.stderr.contains("state.db: it is a symbolic link"), "\(result.stderr)")
        #expect(try fetchrun.read("precious.txt") == "precious")
    }

    @Test func aDatabaseWithASecondNameIsRefusedByEveryCommandNamingIt() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.feed, to: "feed.xml")
        try fetchrun.write(fileFeedConfig, to: "sources.yaml")
        #expect(try await fetchrun.run([]).status == 0)
        // A hard link elsewhere: writing state.db would write that file too.
        #expect(link(fetchrun.path("state/state.db"), fetchrun.path("elsewhere.db")) == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("elsewhere.db")))
        for command in [[], ["status"], ["outputs"]] {
            let result = try await fetchrun.run(command)
            #expect(result.status == 73, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("state.db: it has 2 names (a hard link)"), "\(command): \(result.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("elsewhere.db"))) == before)
        #expect(unlink(fetchrun.path("elsewhere.db")) == 0)
        #expect(try await fetchrun.run([]).status == 0)
    }

    @Test func aReadOnlyStateFolderIsStillReadAndWhatWouldWriteSaysSo() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\noutputs:\n  - { name: log, type: command, command: [/bin/cat] }\nsources:\n  - { name: t, type: traffic }\n", to: "sources.yaml")
        #expect(try await fetchrun.run([]).status == 0)
        // Read-only for the user running fetchrun: another user than the folder's owner when
        // the tests run as root (root writes anywhere), the folder made read-only otherwise.
        let user: String? = getuid() == 0 ? "postgres" : nil
        if user == nil { chmod(fetchrun.path("state"), 0o555) } else { chmod(fetchrun.folder.path, 0o755) }
        defer { chmod(fetchrun.path("state"), 0o755) }
        for command in [["run"], ["watch", "--for", "1s"], ["reset", "t"]] {
            let result = try await fetchrun.run(command, as: user)
            #expect(result.status == 73, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("state/state") || result.stderr.contains("state: it is read-only"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("is read-only"), "\(command): \(result.stderr)")
        }
        let status = try await fetchrun.run(["status"], as: user)
        // (The traffic adapter reports one or two items a fetch.)
        #expect(status.status == 0 && status.stdout.contains("t  ok  ") && status.stdout.contains(" item"), "\(status.stdout)\(status.stderr)")
        #expect(try await fetchrun.run(["show", "t"], as: user).status == 0)
        let outputs = try await fetchrun.run(["outputs"], as: user)
        #expect(outputs.status == 0 && outputs.stdout.contains("nothing pending"), "\(outputs.stdout)\(outputs.stderr)")
        let retry = try await fetchrun.run(["outputs", "--retry"], as: user)
        #expect(retry.status == 73 && retry.stderr.contains("the state directory is read-only for this user") && !retry.stderr.contains("readonly database"), "\(retry.stderr)")

        // A watch run by the folder's owner keeps what it records in state.db's WAL until it is
        // copied into the file (a thousand pages on): the reader reads it there, as it goes.
        guard let user else { return }
        try fetchrun.write("state_dir: state\nsources:\n  - { name: t, type: traffic }\n  - { name: fresh, type: random-news }\n", to: "watch.yaml")
        // (Bounded by --for, should the test end before it stops the watch.)
        let watch = try fetchrun.start(["watch", "--config", "watch.yaml", "--for", "60s"])
        var beside = FetchRunBinary.Result(status: -1, stdout: "", stderr: "", duration: .zero)
        try await waitUntil("the read-only user's status to show what the watch fetched") {
            beside = try await fetchrun.run(["status", "--config", "watch.yaml"], as: user)
            return beside.stdoutLines.contains { $0.hasPrefix("fresh ") && $0.contains(" ok ") }
        }
        #expect(beside.status == 0 && beside.stdoutLines.contains { $0.hasPrefix("t ") && $0.contains(" ok ") }, "\(beside.stdout)\(beside.stderr)")
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()
    }

    @Test func watchCarriesOnFromTheRecordedDueTimes() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\nsources:\n  - name: hourly\n    type: traffic\n    interval: 1h\n  - name: fresh\n    type: random-news\n    interval: 1h\n", to: "sources.yaml")
        #expect(try await fetchrun.run(["run", "--source", "hourly"]).status == 0)
        let watch = try await fetchrun.run(["watch", "--for", "1500ms", "--format", "json", "-v"])
        #expect(watch.status == 0, "\(watch.stderr)")
        let fetched = try events(watch.stdout).filter { $0["event"] as? String == "source" }.compactMap { $0["source"] as? String }
        // "hourly" was fetched a moment ago and is due in an hour; "fresh" never was.
        #expect(fetched == ["fresh"], "\(watch.stdout)")
    }

    func fileIdentity(_ path: String) throws -> (inode: Int, modified: Date) {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.systemFileNumber] as? Int ?? -1, attributes[.modificationDate] as? Date ?? .distantPast)
    }

    @Test func unchangedFeedsLeaveTheirSnapshotFilesUntouched() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: etag
                type: rss
                url: "\(server.url("/conditional/1.xml"))"
              - name: same
                type: rss
                url: "\(server.url("/feed/2.xml"))"

            """, to: "sources.yaml")
        let first = try await fetchrun.run([])
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        // A rewrite would show as a new inode (files are replaced by rename) or, in place, as a
        // later modification time: the second run starts a process and fetches over HTTP, far
        // longer than the file system's timestamp granularity.
        let before = try ["etag", "same"].map { try fileIdentity(fetchrun.path("state/snapshots/\($0).json")) }

        let again = try await fetchrun.run([])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("etag  noData"), "\(again.stdout)")
        #expect(again.stdout.contains("same  noData"), "\(again.stdout)")
        let after = try ["etag", "same"].map { try fileIdentity(fetchrun.path("state/snapshots/\($0).json")) }
        #expect(before.map(\.inode) == after.map(\.inode))
        #expect(before.map(\.modified) == after.map(\.modified))
        // The conditional source was asked with its ETag, from the database.
        #expect(server.requests(to: "/conditional/1.xml").last?.headers["if-none-match"] != nil)
        // Item counts still come out right without the snapshots being read.
        let status = try await statusEvents(fetchrun)
        #expect(status["etag"]?["items"] as? Int == 21)
        #expect(status["same"]?["items"] as? Int == 22)

        // A snapshot deleted by hand is not trusted away: the feed is fetched in full again.
        try FileManager.default.removeItem(atPath: fetchrun.path("state/snapshots/etag.json"))
        let rebuilt = try await fetchrun.run([])
        #expect(rebuilt.stdout.contains("etag  newData    21 new"), "\(rebuilt.stdout)")
        #expect(server.requests(to: "/conditional/1.xml").last?.headers["if-none-match"] == nil)
        #expect(fetchrun.exists("state/snapshots/etag.json"))
    }

    @Test func watchReportsFailuresAsSourceEventsLikeRun() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(fileFeedConfig, to: "sources.yaml")
        let watch = try await fetchrun.run(["watch", "--fetches", "1", "--format", "json"])
        #expect(watch.status == 0, "\(watch.stderr)")
        let run = try await fetchrun.run(["--format", "json"])
        let fromWatch = try #require(try events(watch.stdout).first { $0["event"] as? String == "source" })
        let fromRun = try #require(try events(run.stdout).first { $0["event"] as? String == "source" })
        let watchFailure = try #require(fromWatch["failure"] as? [String: Any])
        let runFailure = try #require(fromRun["failure"] as? [String: Any])
        #expect(Set(watchFailure.keys) == Set(runFailure.keys))
        #expect(watchFailure["kind"] as? String == runFailure["kind"] as? String)
    }

    @Test func killedAtRandomMomentsTheDatabaseOpensAndEverySnapshotIsWhole() async throws {
        let fetchrun = try FetchRunBinary()
        var config = "state_dir: state\nsources:\n"
        for index in 0..<500 { config += "  - name: s\(index)\n    type: traffic\n    latency: 0ms..40ms\n" }
        try fetchrun.write(config, to: "sources.yaml")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<6 {
            let running = try fetchrun.start([])
            // Real time: killed at a random moment of its run.
            try await Task.sleep(for: .milliseconds(Int.random(in: 30...400, using: &generator)))
            kill(running.pid, SIGKILL)
            await running.waitForExit()
            let status = try await fetchrun.run(["status", "--format", "json"])
            #expect([0, 2].contains(status.status), "\(status.stderr)")
            #expect(!status.stderr.contains("state database"), "\(status.stderr)")
            for name in fetchrun.files(in: "state/snapshots") where name.hasSuffix(".json") && !name.hasPrefix(".") {
                let data = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("state/snapshots/\(name)")))
                #expect((try? JSONSerialization.jsonObject(with: data)) != nil, "\(name) is not whole")
            }
        }
        let last = try await fetchrun.run([])
        #expect(last.status == 0, "\(last.stderr)")
        #expect(!last.stderr.contains("unreadable"), "\(last.stderr)")
        #expect(fetchrun.files(in: "state/snapshots").filter { $0.hasSuffix(".json") }.count == 500)
    }

    @Test func runBesideWatchNeverFetchesOneSourceAtOnce() async throws {
        let fetchrun = try FetchRunBinary()
        // Each fetch appends "start", waits until the test creates `go` (then 100 ms more), and
        // appends "end": overlapping fetches of the source would show two starts in a row.
        let log = fetchrun.path("fetches.log"), go = fetchrun.path("go")
        try fetchrun.write("#!/bin/sh\necho start >> \(log)\nwhile [ ! -e \(go) ]; do sleep 0.02; done\nsleep 0.1\necho end >> \(log)\necho '{\"id\": \"x\", \"title\": \"x\"}'\n", to: "slow.sh")
        chmod(fetchrun.path("slow.sh"), 0o755)
        try fetchrun.write("state_dir: state\nsources:\n  - name: slow\n    type: exec\n    command: [./slow.sh]\n    interval: 1s\n    deadline: 60s\n", to: "sources.yaml")
        let watch = try fetchrun.start(["watch"])
        // The watch's first fetch is in flight and stays so until `go` exists.
        try await waitUntil("the watch's fetch") { (try? fetchrun.read("fetches.log")) == "start\n" }
        let run = try fetchrun.start(["run", "--source", "slow", "-v"])
        try await waitUntil("the run to wait for the lease") {
            (try? String(contentsOf: run.stderr, encoding: .utf8))?.contains("waiting for process \(watch.pid), which is fetching it") == true
        }
        #expect(try fetchrun.read("fetches.log") == "start\n")
        try fetchrun.write("", to: "go")
        await run.waitForExit()
        #expect(run.process.terminationStatus == 0)
        let runOutput = try String(contentsOf: run.stdout, encoding: .utf8)
        #expect(runOutput.contains("waited") && runOutput.contains("for process \(watch.pid), which was fetching it"), "\(runOutput)")
        // Two more runs while the watch keeps fetching every second.
        for _ in 0..<2 {
            #expect(try await fetchrun.run(["run", "--source", "slow"]).status == 0)
        }
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()
        let lines = try fetchrun.read("fetches.log").split(separator: "\n").map(String.init)
        #expect(lines.count >= 8, "\(lines)")
        for (index, line) in lines.enumerated() {
            #expect(line == (index % 2 == 0 ? "start" : "end"), "fetches overlapped: \(lines)")
        }
    }

    /// A fetch's deliveries reach the disk before the snapshot that marks their items seen: a
    /// power cut after the snapshot must not lose them. Watched with strace: the last write to
    /// the database's WAL before the snapshot's rename is followed by an fdatasync of the WAL
    /// before that rename (the state database runs `synchronous=NORMAL`, under which a plain
    /// commit stays unsynced until the next checkpoint).
    @Test func queuedDeliveriesAreOnDiskBeforeTheSnapshotThatMarksTheirItemsSeen() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.feed, to: "feed.xml")
        // Nothing listens on port 9: the deliveries stay pending, which the check below needs.
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: hook, type: webhook, url: "http://127.0.0.1:9/hook" }
            sources:
              - { name: local, type: rss, url: "file:feed.xml", send_baseline: true }
            """, to: "sources.yaml")
        let trace = fetchrun.path("syscalls.txt")
        let strace = try ChildProcess(
            executable: "/usr/bin/strace",
            arguments: ["-f", "-y", "-qq", "-e", "trace=pwrite64,fdatasync,fsync,syncfs,rename,renameat,renameat2", "-o", trace, "--", FetchRunBinary.path, "--config", "sources.yaml"],
            environment: ProcessInfo.processInfo.environment, directory: fetchrun.folder.path,
            stdout: fetchrun.path("run.out"), stderr: fetchrun.path("run.err")
        )
        await strace.waitForExit()
        #expect(strace.terminationStatus == 0, "\((try? fetchrun.read("run.err")) ?? "")")
        let outputs = try await fetchrun.run(["outputs", "--format", "json"])
        #expect(outputs.stdout.contains(#""pending":2"#), "the run queued no deliveries: \(outputs.stdout)")

        let calls = try fetchrun.read("syscalls.txt").split(separator: "\n").map(String.init)
        let snapshotRename = try #require(calls.firstIndex { $0.contains("rename") && $0.contains("snapshots/local.json\"") }, "no rename of the snapshot in \(calls)")
        let lastWALWrite = try #require(calls[..<snapshotRename].lastIndex { $0.contains("pwrite64(") && $0.contains("state.db-wal>") }, "no WAL write before the snapshot")
        let synced = calls[lastWALWrite..<snapshotRename].contains { ($0.contains("fdatasync(") || $0.contains("fsync(")) && $0.contains("state.db-wal>") || $0.contains("syncfs(") }
        #expect(synced, "the WAL was not synced between its last write and the snapshot's rename:\n\(calls[lastWALWrite...snapshotRename].joined(separator: "\n"))")
    }
}
