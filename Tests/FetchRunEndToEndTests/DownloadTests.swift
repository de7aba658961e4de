import Foundation
import TestSupport
import Testing
import FixtureServer

/// Enclosure downloads through the built binary against the fixture server: resume after
/// `kill -9`, restarts, one download per URL, failures, hostile names, background transfer.
@Suite struct DownloadTests {
    /// An RSS feed whose items each carry one enclosure.
    static func podcast(_ items: [(id: String, url: String, type: String)]) -> [UInt8] {
        var xml = #"<?xml version="1.0"?><rss version="2.0"><channel><title>Pod</title>"#
        for (index, item) in items.enumerated() {
            let url = item.url.replacingOccurrences(of: "&", with: "&amp;")
            xml += "<item><title>\(item.id)</title><guid>\(item.id)</guid><pubDate>Sat, \(21 - index) Nov 2026 10:00:00 GMT</pubDate><enclosure url=\"\(url)\" type=\"\(item.type)\"/></item>"
        }
        return Array((xml + "</channel></rss>").utf8)
    }

    static func config(_ sources: [(name: String, feed: String, download: String)], downloads: String = "") -> String {
        var text = "state_dir: state\n" + (downloads.isEmpty ? "" : "downloads:\n\(downloads)") + "sources:\n"
        for source in sources {
            text += "  - name: \(source.name)\n    type: rss\n    url: \"\(source.feed)\"\n    download:\n\(source.download)"
        }
        return text
    }

    func bytes(at path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// A fixture server with one enclosure, a feed naming it, and a config downloading it to `media/`.
    func podcastWithOne(_ name: String, _ enclosure: FixtureEnclosure) throws -> (FixtureServer, FetchRunBinary) {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        server.serveEnclosure(name, enclosure)
        server.serve("pod.xml", body: Self.podcast([("ep", server.url("/enclosures/\(name)"), "audio/mpeg")]))
        try fetchrun.write(Self.config([("pod", server.url("/files/pod.xml"), "      dir: media\n")]), to: "sources.yaml")
        return (server, fetchrun)
    }

    func requests(_ server: FixtureServer, _ name: String) -> [FixtureServer.Request] {
        server.requests(to: "/enclosures/\(name)").filter { $0.method == "GET" }
    }

    @Test func verboseSaysWhatEachDownloadDidOnTheWire() async throws {
        let (server, fetchrun) = try podcastWithOne("wire.mp3", FixtureEnclosure(size: 40_000))
        let result = try await fetchrun.run(["-v"])
        withExtendedLifetime(server) {}
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("GET \(server.url("/enclosures/wire.mp3")) → 200, 40000 bytes in"), "\(result.stderr)")
    }

    @Test func aCompleteFileLeftByAnEarlierStateDirectoryIsAdoptedNotFetchedAgain() async throws {
        let size = 300_000
        let (server, fetchrun) = try podcastWithOne("kept.mp3", FixtureEnclosure(size: size))
        let body = Data(FixtureEnclosure.body(name: "kept.mp3", size: size, version: 1))
        try FileManager.default.createDirectory(atPath: fetchrun.path("media"), withIntermediateDirectories: true)
        try body.write(to: URL(fileURLWithPath: fetchrun.path("media/kept.mp3")))
        let result = try await fetchrun.run([])
        #expect(result.status == 0, "\(result.stderr)")
        // The server was asked (its answer's size decides), but its body was not taken.
        #expect(requests(server, "kept.mp3").count == 1)
        // One file, the one that was there; the snapshot points at it.
        #expect(fetchrun.files(in: "media") == ["kept.mp3"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("media/kept.mp3"))) == body)
        #expect(try fetchrun.read("state/snapshots/pod.json").contains(fetchrun.path("media/kept.mp3")))

        // A file of that name but another size is left alone; the download gets a name of its own.
        let (other, second) = try podcastWithOne("kept.mp3", FixtureEnclosure(size: size))
        try FileManager.default.createDirectory(atPath: second.path("media"), withIntermediateDirectories: true)
        try Data("an older, shorter file".utf8).write(to: URL(fileURLWithPath: second.path("media/kept.mp3")))
        let again = try await second.run([])
        withExtendedLifetime(other) {}
        #expect(again.status == 0, "\(again.stderr)")
        #expect(second.files(in: "media").sorted() == ["kept-2.mp3", "kept.mp3"])
        #expect(try second.read("media/kept.mp3") == "an older, shorter file")
        #expect(try Data(contentsOf: URL(fileURLWithPath: second.path("media/kept-2.mp3"))) == body)
    }

    @Test func killedHalfwayResumesFromThatOffsetAndEndsByteIdentical() async throws {
        let size = 50_000_000
        // The server stops sending at half the file: the kill finds it there however slowly
        // this test is scheduled.
        let (server, fetchrun) = try podcastWithOne("episode.mp3", FixtureEnclosure(size: size, stallAt: size / 2))

        let running = try fetchrun.start([])
        let part = fetchrun.path("media/episode.mp3.part")
        try await waitUntil("half the file") { bytes(at: part) >= size / 2 }
        try await waitUntil("the response head saved") { try await fetchrun.run(["downloads", "--format", "json"]).stdout.contains("\"resumable\":true") }
        kill(running.pid, SIGKILL)
        await running.waitForExit()
        let offset = bytes(at: part)
        #expect(offset > 0 && offset < size, "part has \(offset) bytes")

        server.serveEnclosure("episode.mp3", FixtureEnclosure(size: size))
        let second = try await fetchrun.run([])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("downloaded"), "\(second.stdout)")
        let resumed = try #require(requests(server, "episode.mp3").last)
        #expect(resumed.headers["range"] == "bytes=\(offset)-")
        #expect(resumed.headers["if-range"] == "\"episode.mp3-v1\"")
        let file = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("media/episode.mp3")))
        #expect(file == Data(FixtureEnclosure.body(name: "episode.mp3", size: size, version: 1)))
        #expect(!fetchrun.exists("media/episode.mp3.part"))
        #expect(requests(server, "episode.mp3").count == 2)
    }

    /// Starts a download of `first` that stalls at a quarter of the file, kills it there,
    /// serves `second` in its place, and runs again.
    func interruptAndRerun(_ name: String, _ first: FixtureEnclosure, then second: FixtureEnclosure) async throws -> (server: FixtureServer, fetchrun: FetchRunBinary, result: FetchRunBinary.Result, offset: Int) {
        let (server, fetchrun) = try podcastWithOne(name, first)
        let running = try fetchrun.start([])
        let part = fetchrun.path("media/\(name).part")
        try await waitUntil("a quarter of the file") { bytes(at: part) >= first.size / 4 }
        // A resume needs the response's validator, saved at the downloader's next tick.
        try await waitUntil("the response head saved") { try await fetchrun.run(["downloads", "--format", "json"]).stdout.contains("\"resumable\":true") }
        kill(running.pid, SIGKILL)
        await running.waitForExit()
        let offset = bytes(at: part)
        server.serveEnclosure(name, second)
        return (server, fetchrun, try await fetchrun.run([]), offset)
    }

    @Test func aServerThatIgnoresRangeGetsTheFileFromTheStart() async throws {
        let size = 4_000_000
        let (server, fetchrun, result, offset) = try await interruptAndRerun(
            "norange.mp3", FixtureEnclosure(size: size, acceptsRanges: false, stallAt: size / 4),
            then: FixtureEnclosure(size: size, acceptsRanges: false)
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(offset > 0)
        // Asked to resume, answered with the whole file: rewritten, not appended.
        #expect(requests(server, "norange.mp3").last?.headers["range"] == "bytes=\(offset)-")
        let file = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("media/norange.mp3")))
        #expect(file == Data(FixtureEnclosure.body(name: "norange.mp3", size: size, version: 1)))
    }

    @Test func aChangedETagRestartsTheFile() async throws {
        let size = 4_000_000
        let (server, fetchrun, result, _) = try await interruptAndRerun(
            "changing.mp3", FixtureEnclosure(size: size, stallAt: size / 4),
            then: FixtureEnclosure(size: size, version: 2)
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(requests(server, "changing.mp3").last?.headers["if-range"] == "\"changing.mp3-v1\"")
        let file = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("media/changing.mp3")))
        #expect(file == Data(FixtureEnclosure.body(name: "changing.mp3", size: size, version: 2)))
    }

    @Test func aPartialResponseFromAnotherVersionIsNotAppended() async throws {
        let size = 4_000_000
        // The server ignores If-Range and answers the resume with a 206 of version 2.
        let (server, fetchrun, result, offset) = try await interruptAndRerun(
            "mixed.mp3", FixtureEnclosure(size: size, stallAt: size / 4),
            then: FixtureEnclosure(size: size, version: 2, ignoresIfRange: true)
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(offset > 0)
        let gets = requests(server, "mixed.mp3")
        #expect(gets.dropLast().last?.headers["range"] == "bytes=\(offset)-")
        // Refused the 206 of another ETag and fetched the file again from its start.
        #expect(gets.last?.headers["range"] == nil)
        let file = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("media/mixed.mp3")))
        #expect(file == Data(FixtureEnclosure.body(name: "mixed.mp3", size: size, version: 2)))
    }

    @Test func anEnclosureNamedByTwoFeedsDownloadsOnceAndBothSnapshotsRecordIt() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        server.serveEnclosure("shared.mp3", FixtureEnclosure(size: 300_000))
        let url = server.url("/enclosures/shared.mp3")
        server.serve("a.xml", body: Self.podcast([("a1", url, "audio/mpeg")]))
        server.serve("b.xml", body: Self.podcast([("b1", url, "audio/mpeg")]))
        try fetchrun.write(Self.config([
            ("pod-a", server.url("/files/a.xml"), "      dir: a\n"),
            ("pod-b", server.url("/files/b.xml"), "      dir: b\n"),
        ]), to: "sources.yaml")

        let first = try await fetchrun.run([])
        #expect(first.status == 0, "\(first.stderr)")
        let second = try await fetchrun.run([])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(requests(server, "shared.mp3").count == 1)
        #expect(fetchrun.files(in: "a") + fetchrun.files(in: "b") == ["shared.mp3"])

        // Whichever source queued it first chose the folder; both items record that one file.
        let file = fetchrun.files(in: "a").isEmpty ? fetchrun.path("b/shared.mp3") : fetchrun.path("a/shared.mp3")
        let shown = try await fetchrun.run(["show", "--format", "json"])
        let items = try events(shown.stdout)
        #expect(items.count == 2)
        for item in items {
            let enclosure = try #require((item["enclosures"] as? [[String: Any]])?.first)
            #expect(enclosure["file"] as? String == file, "\(item)")
        }
        let text = try await fetchrun.run(["show", "pod-a"])
        #expect(text.stdout.contains("↓ \(file)"), "\(text.stdout)")
    }

    @Test func failuresSayWhyAndNothingIsWrittenOutsideTheFolder() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        server.serveEnclosure("big.mp3", FixtureEnclosure(size: 3_000_000))
        server.serveEnclosure("stall.mp3", FixtureEnclosure(size: 1_000_000, stallAt: 100_000))
        server.serveEnclosure("gone.mp3", FixtureEnclosure(size: 10, status: 404))
        server.serveEnclosure("climb.mp3", FixtureEnclosure(size: 1000, contentDisposition: #"attachment; filename="../../x""#))
        server.serveEnclosure("passwd.bin", FixtureEnclosure(size: 1000, contentDisposition: "attachment; filename=/etc/passwd"))
        server.serveEnclosure("..%2F..%2Fescape", FixtureEnclosure(size: 1000))
        server.serve("pod.xml", body: Self.podcast([
            ("big", server.url("/enclosures/big.mp3"), "audio/mpeg"),
            ("stall", server.url("/enclosures/stall.mp3"), "audio/mpeg"),
            ("gone", server.url("/enclosures/gone.mp3"), "audio/mpeg"),
            ("climb", server.url("/enclosures/climb.mp3"), "audio/mpeg"),
            ("passwd", server.url("/enclosures/passwd.bin"), "audio/mpeg"),
            ("escape", server.url("/enclosures/..%2F..%2Fescape"), "audio/mpeg"),
            ("picture", server.url("/enclosures/picture.jpg"), "image/jpeg"),
        ]))
        try fetchrun.write(Self.config(
            [("pod", server.url("/files/pod.xml"), "      dir: deep/media\n      max_size: 1MB\n      types: [audio/*]\n")],
            downloads: "  stall_timeout: 2s\n"
        ), to: "sources.yaml")

        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let downloads = try events(result.stdout).filter { $0["event"] as? String == "download" }
        func final(_ name: String) -> [String: Any]? {
            downloads.last { ($0["url"] as? String)?.hasSuffix("/enclosures/\(name)") == true && ["done", "failed"].contains($0["state"] as? String) }
        }
        #expect((final("big.mp3")?["reason"] as? String)?.contains("larger than max_size") == true, "\(String(describing: final("big.mp3")))")
        #expect((final("stall.mp3")?["reason"] as? String)?.contains("stalled") == true, "\(String(describing: final("stall.mp3")))")
        #expect(final("gone.mp3")?["reason"] as? String == "HTTP 404")
        #expect(final("climb.mp3")?["state"] as? String == "done")
        // Only audio was asked for.
        #expect(downloads.allSatisfy { ($0["url"] as? String)?.hasSuffix("picture.jpg") != true })

        #expect(fetchrun.files(in: "deep/media").filter { !$0.hasSuffix(".part") } == ["escape", "passwd", "x"])
        // Too large: its partial bytes are gone.
        #expect(!fetchrun.exists("deep/media/big.mp3.part"))
        #expect(!fetchrun.exists("deep/x") && !fetchrun.exists("x") && !fetchrun.exists("escape"))
        #expect(fetchrun.files(in: "deep") == ["media"])

        let listed = try await fetchrun.run(["downloads"])
        #expect(listed.stdout.contains("failed") && listed.stdout.contains("HTTP 404"), "\(listed.stdout)")
        let retried = try await fetchrun.run(["downloads", "--retry-failed", "--format", "json"])
        let states = try events(retried.stdout).map { $0["state"] as? String ?? "" }
        #expect(!states.contains("failed") && states.filter { $0 == "queued" }.count == 3, "\(states)")
    }

    @Test func backgroundDownloadsReturnAtOnceAndOneTransferRunsAtATime() async throws {
        // Five seconds of download at the server's pace, whatever the machine's load.
        let size = 10_000_000
        let (server, fetchrun) = try podcastWithOne("slow.mp3", FixtureEnclosure(size: size, bytesPerSecond: 2_000_000))

        let handed = try await fetchrun.run(["--background-downloads"])
        #expect(handed.status == 0, "\(handed.stderr)")
        // It returned without waiting for the download, which needs 5 s: the file is not there
        // yet. (Alone it returns in 50 ms; with the whole suite loading two cores, once in 2 s.)
        #expect(!fetchrun.exists("media/slow.mp3"))
        #expect(handed.duration < .seconds(4), "took \(handed.duration)")
        #expect(handed.stderr.contains("downloading in the background"), "\(handed.stderr)")

        // `fetchrun downloads` shows the running download with its percentage.
        var entry: [String: Any] = [:]
        try await waitUntil("a download's progress in `fetchrun downloads`") {
            let listed = try await fetchrun.run(["downloads", "--format", "json"])
            entry = try events(listed.stdout).first ?? [:]
            return entry["percent"] != nil
        }
        #expect(entry["state"] as? String == "downloading", "\(entry)")
        let percent = entry["percent"] as? Int ?? -1
        #expect((0..<100).contains(percent), "\(entry)")

        let second = try await fetchrun.run(["transfer"])
        #expect(second.status == 75)
        #expect(second.stderr.contains("already downloading"), "\(second.stderr)")

        try await waitUntil("the file") { fetchrun.exists("media/slow.mp3") }
        let file = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("media/slow.mp3")))
        #expect(file == Data(FixtureEnclosure.body(name: "slow.mp3", size: size, version: 1)))
        #expect(requests(server, "slow.mp3").count == 1)
        // The transfer exits once the queue is empty, and logged what it did.
        try await waitUntil("the transfer to exit") { (try? fetchrun.read("state/downloads/transfer.log"))?.contains("downloads: 1 done") == true }
    }

    @Test func watchDownloadsBesideFetching() async throws {
        let (server, fetchrun) = try podcastWithOne("w.mp3", FixtureEnclosure(size: 500_000))
        let result = try await fetchrun.run(["watch", "--for", "3s", "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let done = try events(result.stdout).filter { $0["event"] as? String == "download" }.map { $0["state"] as? String }
        #expect(done.contains("queued") && done.contains("done"), "\(done)")
        #expect(fetchrun.exists("media/w.mp3"))
        #expect(requests(server, "w.mp3").count == 1)
    }

    /// Downloads that all succeed end every command cleanly: no error, no `ServiceGroupError`,
    /// whether the command ends by itself, by `--for` or by SIGTERM.
    @Test func cleanEndsSayNoError() async throws {
        let (server, fetchrun) = try podcastWithOne("clean.mp3", FixtureEnclosure(size: 200_000))
        let run = try await fetchrun.run([])
        #expect(run.status == 0, "\(run.stderr)")
        // A second state folder, so that the item is new again and downloaded again.
        try fetchrun.write(Self.config([("pod", server.url("/files/pod.xml"), "      dir: media2\n")]).replacingOccurrences(of: "state_dir: state\n", with: "state_dir: state2\n"), to: "sources.yaml")
        let watch = try await fetchrun.run(["watch", "--for", "3s"])
        #expect(watch.status == 0, "\(watch.stderr)")
        #expect(fetchrun.exists("media/clean.mp3") && fetchrun.exists("media2/clean.mp3"))
        let transfer = try fetchrun.start(["transfer", "--keep-running"])
        try await waitUntil("the transfer's lock") { ((try? fetchrun.read("state2/downloads/transfer.lock")) ?? "").contains("\(transfer.pid)") }
        kill(transfer.pid, SIGTERM)
        await transfer.waitForExit()
        #expect(transfer.process.terminationStatus == 0)
        let transferErrors = (try? String(contentsOf: transfer.stderr, encoding: .utf8)) ?? ""
        for (command, stderr) in [("run", run.stderr), ("watch", watch.stderr), ("transfer", transferErrors)] {
            #expect(!stderr.lowercased().contains("error") && !stderr.contains("unexpectedly"), "\(command): \(stderr)")
        }
    }

    @Test func aTransferRunningAsAServiceTakesWorkFromRuns() async throws {
        let (server, fetchrun) = try podcastWithOne("service.mp3", FixtureEnclosure(size: 300_000))
        let transfer = try fetchrun.start(["transfer", "--keep-running"])
        try await waitUntil("the transfer's lock") { ((try? fetchrun.read("state/downloads/transfer.lock")) ?? "").contains("\(transfer.pid)") }

        let run = try await fetchrun.run(["--background-downloads"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("transfer already running (process \(transfer.pid))"), "\(run.stderr)")
        try await waitUntil("the file") { fetchrun.exists("media/service.mp3") }

        kill(transfer.pid, SIGTERM)
        await transfer.waitForExit()
        #expect(transfer.process.terminationStatus == 0)
        #expect((try? String(contentsOf: transfer.stdout, encoding: .utf8))?.contains("downloads: 1 done") == true)
        #expect(requests(server, "service.mp3").count == 1)
    }

    @Test func sigintStopsARunsDownloadsAndTheNextRunResumes() async throws {
        let size = 3_000_000
        let (server, fetchrun) = try podcastWithOne("stop.mp3", FixtureEnclosure(size: size, stallAt: size / 3))
        let running = try fetchrun.start([])
        try await waitUntil("a third of the file") { bytes(at: fetchrun.path("media/stop.mp3.part")) >= size / 3 }
        try await waitUntil("the response head saved") { try await fetchrun.run(["downloads", "--format", "json"]).stdout.contains("\"resumable\":true") }
        kill(running.pid, SIGINT)
        await running.waitForExit()
        // Ctrl-C: what was done is saved, and the exit status says the run was interrupted.
        #expect(running.process.terminationStatus == 130)
        #expect((try? String(contentsOf: running.stderr, encoding: .utf8))?.contains("downloads stopped") == true)
        let offset = bytes(at: fetchrun.path("media/stop.mp3.part"))
        let interruptedErrors = (try? String(contentsOf: running.stderr, encoding: .utf8)) ?? ""
        let queue = try await fetchrun.run(["downloads", "--format", "json"])
        #expect(queue.stdout.contains("\"state\":\"queued\""), "\(queue.stdout)\(queue.stderr)\nthe interrupted run said: \(interruptedErrors)")

        server.serveEnclosure("stop.mp3", FixtureEnclosure(size: size))
        let again = try await fetchrun.run(["-v"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(requests(server, "stop.mp3").last?.headers["range"] == "bytes=\(offset)-", "\(again.stdout)\(again.stderr)")
        let file = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("media/stop.mp3")))
        #expect(file == Data(FixtureEnclosure.body(name: "stop.mp3", size: size, version: 1)))
    }

    /// README: network trouble, stalls and 5xx are tried again at the next start — also when
    /// that run queues nothing new, and from the byte the failed attempt reached.
    @Test func aStalledDownloadIsRetriedByTheNextRunThatHasNothingNew() async throws {
        let size = 600_000
        let (server, fetchrun) = try podcastWithOne("later.mp3", FixtureEnclosure(size: size, stallAt: size / 2))
        try fetchrun.write(try fetchrun.read("sources.yaml").replacingOccurrences(of: "state_dir: state\n", with: "state_dir: state\ndownloads:\n  stall_timeout: 1s\n"), to: "sources.yaml")
        let first = try await fetchrun.run(["--format", "json"])
        #expect(first.status == 0, "\(first.stderr)")
        let failed = try events(first.stdout).last { $0["event"] as? String == "download" }
        #expect(failed?["state"] as? String == "failed" && failed?["retry"] as? Bool == true, "\(first.stdout)")

        server.serveEnclosure("later.mp3", FixtureEnclosure(size: size))
        let again = try await fetchrun.run(["--format", "json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try events(again.stdout).contains { $0["event"] as? String == "source" && $0["new"] as? Int == 0 }, "\(again.stdout)")
        #expect(requests(server, "later.mp3").last?.headers["range"] == "bytes=\(size / 2)-")
        let file = try Data(contentsOf: URL(fileURLWithPath: fetchrun.path("media/later.mp3")))
        #expect(file == Data(FixtureEnclosure.body(name: "later.mp3", size: size, version: 1)))
    }

    @Test func jsonProgressComesAtMostOnceASecond() async throws {
        let (server, fetchrun) = try podcastWithOne("paced.mp3", FixtureEnclosure(size: 2_500_000, bytesPerSecond: 1_000_000))
        let result = try await fetchrun.run(["--format", "json"])
        withExtendedLifetime(server) {}
        #expect(result.status == 0, "\(result.stderr)")
        let states = try events(result.stdout).filter { $0["event"] as? String == "download" }.compactMap { $0["state"] as? String }
        let progress = states.filter { $0 == "progress" }.count
        // About 2.5 s of download: a progress event at its start and one a second after.
        #expect((1...4).contains(progress), "\(states)")
        #expect(states.first == "queued" && states.last == "done", "\(states)")
    }

    @Test func anUnreadableQueueIsReportedAndLeftAsItIs() async throws {
        let (server, fetchrun) = try podcastWithOne("q.mp3", FixtureEnclosure(size: 1000))
        try fetchrun.write("{ not json", to: "state/downloads/queue.json")
        let result = try await fetchrun.run([])
        withExtendedLifetime(server) {}
        // The fetch itself succeeds and its snapshot is written; the queue is not touched.
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("enclosures not queued for download"), "\(result.stdout)")
        #expect(result.stderr.contains("queue.json: not a download queue"), "\(result.stderr)")
        #expect(result.stderr.contains("move it aside"), "\(result.stderr)")
        #expect(fetchrun.exists("state/snapshots/pod.json"))
        #expect(try fetchrun.read("state/downloads/queue.json") == "{ not json")
        let listed = try await fetchrun.run(["downloads"])
        #expect(listed.status == 73)
        #expect(listed.stderr.contains("not a download queue"), "\(listed.stderr)")
    }
}
