import FixtureServer
import Foundation
import Testing
import TestSupport

/// `fetchrun watch`, run as a user would: lines as fetches end, signals, reloads, the lock.
@Suite struct WatchTests {
    static let everySecond = """
        state_dir: state
        defaults: { interval: 1s }
        sources:
          - name: traffic
            type: traffic
            min: 1
            max: 2
          - name: news
            type: random-news
            probability: 1
        """

    /// Waits until the running fetchrun's stdout (or stderr) contains `text`.
    func waitFor(_ text: String, in running: FetchRunBinary.Running, stderr: Bool = false, timeout: Duration = .seconds(15)) async throws {
        let file = stderr ? running.stderr : running.stdout
        try await waitUntil("'\(text)' in the output", timeout: timeout) { (try? String(contentsOf: file, encoding: .utf8))?.contains(text) ?? false }
    }

    func output(_ running: FetchRunBinary.Running) -> (stdout: String, stderr: String) {
        ((try? String(contentsOf: running.stdout, encoding: .utf8)) ?? "", (try? String(contentsOf: running.stderr, encoding: .utf8)) ?? "")
    }

    @Test func newItemsAppearAsTheyArrive() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.everySecond, to: "sources.yaml")
        let result = try await fetchrun.run(["watch", "--for", "3500ms"])
        #expect(result.status == 0, "\(result.stderr)")
        // The first fetch of each source is one baseline line; later ones print each new item.
        #expect(result.stdout.contains("traffic: baseline, "))
        #expect(result.stdout.contains("news: baseline, 1 item"))
        #expect(result.stdout.contains("news  + News text 2"))
        #expect(result.stdoutLines.contains { $0.contains("  traffic  + ") })
        #expect(result.stdout.contains("watched for"))
        #expect(result.duration < .seconds(10))
    }

    /// User and system CPU of a process so far, in clock ticks (/proc's counters).
    func cpuTicks(_ pid: Int32) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 13 else { return 0 }
        // After the command's ")": state is field 3, utime 14 and stime 15.
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    /// Runs `body` on a watch of one feed due hourly, once its first fetch has ended: nothing
    /// more is due while `body` runs. The watch is stopped afterwards.
    func whileWatchingOneFeedHourly(_ body: (FetchRunBinary.Running) async throws -> Void) async throws {
        let server = try FixtureServer()
        defer { server.stop() }
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            defaults: { interval: 1h }
            sources:
              - { name: feed, type: rss, url: "\(server.url("/feed/1.xml"))" }
            """, to: "sources.yaml")
        let running = try fetchrun.start(["watch"])
        // Stopped whatever happens, so that a failing check leaves no watch running.
        let outcome: Result<Void, any Error>
        do {
            try await waitFor("feed: baseline", in: running)
            try await body(running)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        kill(running.pid, SIGTERM)
        await running.waitForExit()
        try outcome.get()
    }

    @Test func aWatchWaitingForItsNextFetchUsesNoCPU() async throws {
        try await whileWatchingOneFeedHourly { running in
            // Nothing is due for an hour. A loop left spinning — curl's thread, the deadline
            // timer's, the watcher's — shows as up to a second of CPU for every second.
            let before = cpuTicks(running.pid)
            // Real time: CPU a running process uses, measured over wall-clock seconds.
            try await Task.sleep(for: .seconds(2))
            let used = cpuTicks(running.pid) - before
            #expect(used < 50, "the idle watch used \(used) clock ticks of CPU in 2 s")
        }
    }

    @Test func aWatchHasItsDescriptorTableGrownFromTheStart() async throws {
        try await whileWatchingOneFeedHourly { running in
            // A handful of descriptors open: grown on demand the table would hold 64. Grown at
            // start, the curl thread never waits for the kernel to grow it under its threads.
            let status = try String(contentsOfFile: "/proc/\(running.pid)/status", encoding: .utf8)
            var limit = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            let size = status.split(separator: "\n").first { $0.hasPrefix("FDSize:") }.flatMap { Int($0.dropFirst(7).trimmingCharacters(in: .whitespaces)) }
            #expect(try #require(size) >= min(1024, Int(clamping: limit.rlim_cur)), "\(status)")
        }
    }

    @Test func aWatchHasItsThreadHeapsWritableWellAheadOfNeed() async throws {
        try await whileWatchingOneFeedHourly { running in
            // glibc puts each thread's heap at a 64 MB boundary and makes it writable as it
            // fills — a page at a time, with an mprotect call each, unless asked to reserve
            // ahead. Reserving ahead, even this one-feed watch's heaps start 16 MB writable.
            let maps = try String(contentsOfFile: "/proc/\(running.pid)/maps", encoding: .utf8)
            let heapStarts = maps.split(separator: "\n").compactMap { line -> (start: UInt64, size: UInt64)? in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                // Anonymous and writable: no file, no [stack] or [heap] name.
                guard fields.count == 5, fields[1] == "rw-p" else { return nil }
                let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
                guard bounds.count == 2, bounds[0] % (64 << 20) == 0 else { return nil }
                return (bounds[0], bounds[1] - bounds[0])
            }
            #expect(!heapStarts.isEmpty, "no thread heap found in\n\(maps)")
            #expect(heapStarts.contains { $0.size >= 16 << 20 }, "thread heaps writable: \(heapStarts.map { "\($0.size >> 10) KB" })")
        }
    }

    @Test func jsonEventsAndFetchLimit() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.everySecond, to: "sources.yaml")
        let result = try await fetchrun.run(["watch", "--fetches", "5", "--format", "json", "-v", "--print-baseline"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try result.stdoutLines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        // The events `run` prints: each fetch's items, then its `source` event.
        #expect(events.filter { $0["event"] as? String == "source" }.count == 5)
        #expect(events.allSatisfy { $0["event"] as? String != "source" || $0["next_fetch"] is String || $0["outcome"] as? String == "failed" })
        #expect(events.contains { $0["event"] as? String == "item" && $0["title"] as? String == "News text 1" })
        let summary = try #require(events.last)
        #expect(summary["event"] as? String == "summary")
    }

    @Test func sigintStopsWithinTheGraceWithValidSnapshots() async throws {
        let fetchrun = try FetchRunBinary()
        // The slow source comes first, so it is in flight when the others have reported — and
        // still is a grace later, however late a loaded machine lets this test send the signal.
        try fetchrun.write(Self.everySecond.replacingOccurrences(of: "sources:\n", with: "sources:\n  - name: slow\n    type: traffic\n    latency: 20s\n    deadline: 30s\n"), to: "sources.yaml")
        let running = try fetchrun.start(["watch", "--grace", "1s"])
        try await waitFor("news: baseline", in: running)
        let interrupted = ContinuousClock.now
        kill(running.pid, SIGINT)
        await running.waitForExit()
        // The slow fetch in flight gets the 1s grace, then is cancelled: not sooner, and not
        // when it would end (~20s). The upper bound leaves a loaded machine seconds to write
        // the snapshots and the summary after the grace.
        let stopping = ContinuousClock.now - interrupted
        #expect(stopping > .milliseconds(700) && stopping < .seconds(6), "stopped after \(stopping)")
        #expect(output(running).stdout.contains("slow     1 fetch, 0 new, 1 failed"))
        #expect(running.process.terminationStatus == 0)
        #expect(output(running).stdout.contains("watched for"))
        for name in ["traffic", "news"] {
            let snapshot = try JSONSerialization.jsonObject(with: Data(try fetchrun.read("state/snapshots/\(name).json").utf8)) as? [String: Any]
            #expect(snapshot?["source"] as? String == name)
        }
    }

    @Test func aSecondSigintCancelsAtOnce() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\nsources:\n  - name: slow\n    type: traffic\n    latency: 20s\n    deadline: 30s\n", to: "sources.yaml")
        // systemd's socket, for the watch to say when it has taken the first SIGINT.
        let receiver = try NotifyReceiver()
        let running = try fetchrun.start(["watch", "--grace", "30s"], environment: ["NOTIFY_SOCKET": receiver.path])
        // The lock file gets the pid once the watch has started (its signal handling first).
        try await waitUntil("the watch's pid in its lock", timeout: .seconds(20)) { !((try? fetchrun.read("state/watch.lock"))?.isEmpty ?? true) }
        // Real time: the watch's fetch under way (its 20 s latency); nothing outside shows it.
        try await Task.sleep(for: .milliseconds(200))
        let interrupted = ContinuousClock.now
        kill(running.pid, SIGINT)
        // The second SIGINT once the first is taken: the watch then says it is stopping.
        var heard: [String] = []
        try await waitUntil("STOPPING=1 after the first SIGINT", timeout: .seconds(20)) {
            heard += receiver.messages(quiet: .milliseconds(20))
            return NotifyReceiver.kinds(heard).contains("STOPPING=1")
        }
        kill(running.pid, SIGINT)
        await running.waitForExit()
        #expect(ContinuousClock.now - interrupted < .seconds(5))
        #expect(running.process.terminationStatus == 0)
        #expect(output(running).stderr.contains("cancelling what is still running"))
    }

    @Test func sighupStartsAnAddedSourceAndSurvivesABrokenConfig() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.everySecond, to: "sources.yaml")
        let running = try fetchrun.start(["watch"])
        try await waitFor("news: baseline", in: running)

        try fetchrun.write(Self.everySecond + "\n  - name: added\n    type: random-news\n    probability: 1\n", to: "sources.yaml")
        kill(running.pid, SIGHUP)
        try await waitFor("added: baseline, 1 item", in: running)
        try await waitFor("added  + News text 2", in: running)
        #expect(output(running).stderr.contains("added added, removed none, changed none"))

        try fetchrun.write("sources:\n  - name: broken\n    type: nope\n", to: "sources.yaml")
        kill(running.pid, SIGHUP)
        try await waitFor("still watching with the previous config", in: running, stderr: true)
        #expect(output(running).stderr.contains("sources.yaml:3:11: source 'broken': unknown adapter type 'nope'"))
        // Still fetching the old sources after the broken reload.
        let before = output(running).stdout.components(separatedBy: "news  + ").count
        try await waitFor("News text \(before + 2)", in: running)

        kill(running.pid, SIGTERM)
        await running.waitForExit()
        #expect(running.process.terminationStatus == 0)
    }

    @Test func aSecondWatchOnTheSameStateExits75ButARunWorksBeside() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.everySecond, to: "sources.yaml")
        let running = try fetchrun.start(["watch"])
        try await waitFor("news: baseline", in: running)
        let second = try await fetchrun.run(["watch", "--for", "1s"])
        #expect(second.status == 75)
        #expect(second.stderr.contains("a watch is already running"), "\(second.stderr)")
        #expect(second.stderr.contains("process \(running.pid)"), "\(second.stderr)")
        // A one-shot run works beside the watch: sources are leased one by one, not the folder.
        let run = try await fetchrun.run([])
        #expect(run.status == 0, "\(run.stderr)")
        kill(running.pid, SIGTERM)
        await running.waitForExit()
        #expect(running.process.terminationStatus == 0)
    }
}
