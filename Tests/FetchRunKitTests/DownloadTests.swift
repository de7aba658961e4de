import Foundation
import Testing
import TestSupport
import FixtureServer
@testable import FetchRunKit

@Suite struct FileNameTests {
    @Test func hostileNamesStayInsideTheFolder() {
        #expect(FileNames.sanitised("../../x") == "x")
        #expect(FileNames.sanitised("/etc/passwd") == "passwd")
        #expect(FileNames.sanitised("..\\..\\windows.ini") == "windows.ini")
        #expect(FileNames.sanitised("..") == "download")
        #expect(FileNames.sanitised("") == "download")
        #expect(FileNames.sanitised(".bashrc") == "bashrc")
        #expect(FileNames.sanitised("a\u{0}b\nc\u{1B}[31m.mp3") == "abc[31m.mp3")
        #expect(FileNames.sanitised("ep.part") == "ep.part-file")
        // Cut to length, a name can end in `.part` where the whole, with its long extension, did not.
        let hidden = FileNames.sanitised(String(repeating: "a", count: 195) + ".part." + String(repeating: "z", count: 20))
        #expect(hidden == String(repeating: "a", count: 195) + ".part-file")
    }

    @Test func longNamesKeepTheirExtensionWithinTheLimit() {
        let name = FileNames.sanitised(String(repeating: "é", count: 300) + ".mp3")
        #expect(name.utf8.count <= FileNames.maxBytes)
        #expect(name.hasSuffix(".mp3"))
    }

    @Test func namesFromURLs() {
        #expect(FileNames.fromURL("https://cdn.example/shows/ep%2012.mp3?token=1#t") == "ep 12.mp3")
        #expect(FileNames.fromURL("https://cdn.example/..%2F..%2Fescape") == "escape")
        #expect(FileNames.fromURL("https://cdn.example/") == "download")
    }

    @Test func namesFromContentDisposition() {
        #expect(FileNames.fromContentDisposition(#"attachment; filename="../../x""#) == "x")
        #expect(FileNames.fromContentDisposition("attachment; filename=/etc/passwd") == "passwd")
        #expect(FileNames.fromContentDisposition(#"attachment; filename="a;b.mp3""#) == "a;b.mp3")
        #expect(FileNames.fromContentDisposition("attachment; filename=plain.mp3; filename*=UTF-8''%C3%A9pisode.mp3") == "épisode.mp3")
        #expect(FileNames.fromContentDisposition("inline") == nil)
    }

    @Test func uniqueNamesSkipFilesPartsAndTakenNames() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("names-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = FileManager.default.createFile(atPath: folder + "/ep.mp3", contents: nil)
        _ = FileManager.default.createFile(atPath: folder + "/ep-2.mp3.part", contents: nil)
        #expect(FileNames.unique("ep.mp3", in: folder) == "ep-3.mp3")
        #expect(FileNames.unique("new.mp3", in: folder, isTaken: { $0 == "new.mp3" }) == "new-2.mp3")
        #expect(FileNames.unique("free.mp3", in: folder) == "free.mp3")
    }
}

@Suite struct DownloadConfigTests {
    func load(_ text: String) throws(ConfigError) -> FetchConfig {
        try ConfigLoader(environment: [:]).load(text: text, file: "sources.yaml", directory: "/etc/fetchrun")
    }

    @Test func readsDownloadBlocksAndLimits() throws {
        let config = try load("""
            downloads:
              max_in_flight: 8
              per_host: 3
              stall_timeout: 20s
            sources:
              - name: pod
                type: rss
                url: https://example.com/pod.xml
                download:
                  dir: media/pod
                  types: [audio/*, video/mp4]
                  max_size: 500MB
                  keep: 10
                  max_rate: 2MiB/s
              - name: plain
                type: rss
                url: https://example.com/feed.xml
            """)
        #expect(config.downloads.maxInFlight == 8)
        #expect(config.downloads.maxPerHost == 3)
        #expect(config.downloads.stallTimeout == .seconds(20))
        let download = try #require(config.sources[0].download)
        #expect(download == DownloadSettings(directory: "/etc/fetchrun/media/pod", types: ["audio/*", "video/mp4"], maxSize: 500_000_000, keep: 10, maxRate: 2 * 1024 * 1024))
        #expect(config.sources[1].download == nil)
    }

    @Test func defaultsAreEveryTypeOneGibibyteAndAFolderPerSource() throws {
        let config = try load("sources:\n  - name: pod\n    type: rss\n    url: https://example.com/pod.xml\n    download: {}\n")
        #expect(config.sources[0].download == DownloadSettings(directory: "/etc/fetchrun/downloads/pod"))
        // The limits' defaults, and the folder a queue entry must name to be downloaded.
        #expect(config.downloads == DownloadLimits(folders: ["/etc/fetchrun/downloads/pod"]))
    }

    @Test func problemsSayWhatAndWhere() {
        do {
            _ = try load("""
                downloads:
                  max_in_flite: 2
                sources:
                  - name: pod
                    type: rss
                    url: https://example.com/pod.xml
                    download:
                      types: [audio]
                      max_size: 12 parsecs
                      kep: 3
                """)
            Issue.record("loaded")
        } catch {
            let messages = error.diagnostics.map(\.description)
            #expect(messages.count == 4, "\(messages)")
            #expect(messages.contains { $0.contains("2:3") && $0.contains("did you mean 'max_in_flight'") })
            #expect(messages.contains { $0.contains("8:15") && $0.contains("'audio' is not a MIME pattern") })
            #expect(messages.contains { $0.contains("9:17") && $0.contains("unknown unit 'parsecs'") })
            #expect(messages.contains { $0.contains("10:7") && $0.contains("did you mean 'keep'") })
        }
    }

    @Test func typePatterns() {
        let audio = DownloadSettings(directory: "/d", types: ["audio/*", "video/mp4"])
        #expect(audio.accepts(type: "audio/mpeg"))
        #expect(audio.accepts(type: "Video/MP4; codecs=avc1"))
        #expect(!audio.accepts(type: "video/webm"))
        #expect(!audio.accepts(type: nil))
        #expect(DownloadSettings(directory: "/d").accepts(type: nil))
    }

    @Test func byteSizes() throws {
        #expect(try ByteSizeText.parse("1GiB") == 1 << 30)
        #expect(try ByteSizeText.parse("1.5 MB") == 1_500_000)
        #expect(try ByteSizeText.parse("64k") == 65_536)
        #expect(try ByteSizeText.parse("2MB/s", rate: true) == 2_000_000)
        #expect(try ByteSizeText.parse("1048576") == 1_048_576)
        #expect(throws: ByteSizeText.ParseError.self) { try ByteSizeText.parse("2MB/s") }
        #expect(throws: ByteSizeText.ParseError.self) { try ByteSizeText.parse("0") }
        #expect(ByteSizeText.format(1_536) == "1.5 KiB")
        #expect(ByteSizeText.format(200 << 20) == "200 MiB")
    }
}

@Suite struct DownloadQueueTests {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("queue-\(UUID().uuidString)").path

    func item(_ id: String, _ urls: String...) -> Item {
        Item(id: id, title: id, enclosures: urls.map { Enclosure(url: $0, type: "audio/mpeg") })
    }

    @Test func oneEntryPerURLAcrossItemsAndSources() throws {
        let queue = DownloadQueue(stateDirectory: state)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let settings = DownloadSettings(directory: state + "/media")
        let first = try queue.enqueue(source: "a", items: [item("1", "http://h/ep.mp3", "http://h/ep.mp3"), item("2", "http://h/other/ep.mp3")], settings: settings, now: Date())
        #expect(first.map(\.url) == ["http://h/ep.mp3", "http://h/other/ep.mp3"])
        // Same name from another URL: a name of its own.
        #expect(first.map(\.partName) == ["ep.mp3", "ep-2.mp3"])
        let second = try queue.enqueue(source: "b", items: [item("3", "http://h/ep.mp3")], settings: settings, now: Date())
        #expect(second.isEmpty)
        #expect(try queue.entries().count == 2)
    }

    /// Every episode called `audio.mp3`, 5,000 of them in one fetch and one more the next
    /// time: each gets a name of its own, counted on from the last (from 2 each time, 12
    /// million tries), and a file already in the folder is never taken over.
    @Test func thousandsOfEnclosuresOfOneFileNameGetNamesInOnePass() throws {
        let queue = DownloadQueue(stateDirectory: state)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let settings = DownloadSettings(directory: state + "/media")
        try FileManager.default.createDirectory(atPath: settings.directory, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: settings.directory + "/audio-3.mp3", contents: Data("mine".utf8)))
        let items = (0..<5_000).map { item("\($0)", "http://h/\($0)/audio.mp3") }
        let names = try queue.enqueue(source: "a", items: items, settings: settings, now: Date()).map(\.partName)
        #expect(names.count == 5_000 && Set(names).count == 5_000 && !names.contains("audio-3.mp3"))
        #expect(Array(names.prefix(3)) == ["audio.mp3", "audio-2.mp3", "audio-4.mp3"] && names.last == "audio-5001.mp3")
        let next = try queue.enqueue(source: "a", items: [item("new", "http://h/new/audio.mp3")], settings: settings, now: Date())
        #expect(next.map(\.partName) == ["audio-5002.mp3"])
    }

    @Test func failedEntriesQueueAgainAndOtherSchemesFail() throws {
        let queue = DownloadQueue(stateDirectory: state)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let settings = DownloadSettings(directory: state + "/media")
        let queued = try queue.enqueue(source: "a", items: [item("1", "ftp://h/ep.mp3", "http://h/ok.mp3")], settings: settings, now: Date())
        #expect(queued.first?.state == .failed)
        #expect(queued.first?.failure?.contains("only http") == true)
        try queue.update { entries in entries[1].state = .failed }
        let again = try queue.enqueue(source: "a", items: [item("2", "http://h/ok.mp3")], settings: settings, now: Date())
        #expect(again.map(\.state) == [.queued])
    }

    @Test func everyFieldSurvivesTheFile() throws {
        let queue = DownloadQueue(stateDirectory: state)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let second = Date(timeIntervalSince1970: 1_790_000_000)
        var entry = DownloadEntry(
            url: "https://h/a \"quoted\".mp3", source: "pod", item: Item(id: "i", title: "Tïtle\n", published: second),
            enclosure: Enclosure(url: "https://h/a.mp3", type: "audio/mpeg", length: 12),
            settings: DownloadSettings(directory: "/d", maxSize: 99, keep: 3, maxRate: 7), partName: "a.mp3", queuedAt: second
        )
        entry.suggestedName = "b.mp3"
        entry.file = "/d/b.mp3"
        entry.state = .failed
        entry.size = 12
        entry.received = 5
        entry.validator = "\"v1\""
        entry.failure = "HTTP 503"
        entry.retryable = true
        entry.attempts = 2
        entry.finishedAt = second.addingTimeInterval(60)
        let plain = DownloadEntry(url: "http://h/c", source: "pod", item: Item(id: "c", title: "c"), enclosure: Enclosure(url: "http://h/c"), settings: DownloadSettings(directory: "/d"), partName: "c", queuedAt: second)
        try queue.update { $0 = [entry, plain] }
        #expect(try queue.entries() == [entry, plain])
    }

    @Test func entriesLiveInTheStateDatabaseOneRowPerURLInQueueOrder() throws {
        let queue = DownloadQueue(stateDirectory: state)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let settings = DownloadSettings(directory: state + "/media")
        _ = try queue.enqueue(source: "a", items: [item("1", "http://h/1.mp3"), item("2", "http://h/2.mp3")], settings: settings, now: Date())
        _ = try queue.enqueue(source: "a", items: [item("3", "http://h/3.mp3")], settings: settings, now: Date())
        // Dropping an entry from the middle keeps the others' order; a change keeps its place.
        try queue.update { entries in
            entries.remove(at: 0)
            entries[1].state = .done
        }
        _ = try queue.enqueue(source: "a", items: [item("4", "http://h/4.mp3")], settings: settings, now: Date())
        #expect(try queue.entries().map(\.url) == ["http://h/2.mp3", "http://h/3.mp3", "http://h/4.mp3"])
        #expect(try queue.entries().map(\.state) == [.queued, .done, .queued])
        let database = try SQLiteConnection(path: state + "/state.db", create: false)
        #expect(try database.integer("SELECT count(*) FROM downloads") == 3)
        #expect(try database.integer("SELECT count(*) FROM downloads WHERE state = 'done' AND url = 'http://h/3.mp3'") == 1)
        #expect(!FileManager.default.fileExists(atPath: state + "/downloads/queue.json"))
    }

    @Test func aQueueJSONFromBeforeIsImportedOnceAndItsEntriesKeepTheirDedupe() throws {
        let queue = DownloadQueue(stateDirectory: state)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let settings = DownloadSettings(directory: state + "/media")
        var done = DownloadEntry(url: "http://h/old.mp3", source: "pod", item: item("old", "http://h/old.mp3"), enclosure: Enclosure(url: "http://h/old.mp3"), settings: settings, partName: "old.mp3", queuedAt: Date(timeIntervalSince1970: 1_790_000_000))
        done.state = .done
        done.file = state + "/media/old.mp3"
        let waiting = DownloadEntry(url: "http://h/next.mp3", source: "pod", item: item("next", "http://h/next.mp3"), enclosure: Enclosure(url: "http://h/next.mp3"), settings: settings, partName: "next.mp3", queuedAt: Date(timeIntervalSince1970: 1_790_000_060))
        var legacy = JSONWriter(capacity: 4096)
        legacy.beginObject()
        legacy.key("version")
        legacy.value(Int64(1))
        legacy.key("downloads")
        legacy.beginArray()
        for entry in [done, waiting] {
            legacy.beginObject()
            entry.writeMembers(into: &legacy)
            legacy.endObject()
        }
        legacy.endArray()
        legacy.endObject()
        try FileManager.default.createDirectory(atPath: state + "/downloads", withIntermediateDirectories: true)
        try Data(legacy.bytes).write(to: URL(fileURLWithPath: state + "/downloads/queue.json"))

        #expect(try queue.entries() == [done, waiting])
        #expect(!FileManager.default.fileExists(atPath: state + "/downloads/queue.json"))
        #expect(FileManager.default.fileExists(atPath: state + "/downloads/queue.json.imported"))
        // The imported entries are the dedupe memory: the done URL is not queued again.
        #expect(try queue.enqueue(source: "pod", items: [item("old", "http://h/old.mp3")], settings: settings, now: Date()).isEmpty)
        // Imported once: a queue.json put back is merged without replacing newer rows.
        try queue.update { $0[1].state = .failed }
        try Data(legacy.bytes).write(to: URL(fileURLWithPath: state + "/downloads/queue.json"))
        #expect(try queue.entries().map(\.state) == [.done, .failed])
    }

    /// A queue from before the columns the routine steps select by: they are filled from each
    /// row's entry, and a row that is not JSON (which an index on the JSON would have made the
    /// whole migration fail on) is left without them.
    @Test func aQueueFromBeforeTheSelectingColumnsIsMigratedAroundAnUnreadableRow() throws {
        defer { try? FileManager.default.removeItem(atPath: state) }
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let settings = DownloadSettings(directory: state + "/media")
        var entry = DownloadEntry(url: "http://h/a.mp3", source: "pod", item: item("a"), enclosure: Enclosure(url: "http://h/a.mp3"), settings: settings, partName: "a.mp3", queuedAt: Date())
        entry.state = .done
        entry.file = state + "/media/a.mp3"
        var retried = DownloadEntry(url: "http://h/r.mp3", source: "pod", item: item("r"), enclosure: Enclosure(url: "http://h/r.mp3"), settings: settings, partName: "r.mp3", queuedAt: Date())
        retried.record(.failed(reason: "HTTP 503", retryable: true, deletePart: false), at: Date())
        retried.attempts = 2
        func json(_ entry: DownloadEntry) -> String {
            var json = JSONWriter()
            json.beginObject()
            entry.writeMembers(into: &json)
            json.endObject()
            return json.string
        }
        do {
            let connection = try SQLiteConnection(path: state + "/state.db")
            for step in StateSchema.migrations.prefix(9) { try connection.execute(step) }
            try connection.execute("PRAGMA user_version = 9")
            try connection.query("INSERT INTO downloads (url, position, state, entry) VALUES (?, 0, 'done', ?), ('http://h/broken', 1, 'done', '{ not json'), (?, 2, 'failed', ?)", [.text(entry.url), .text(json(entry)), .text(retried.url), .text(json(retried))])
        }
        let queue = DownloadQueue(stateDirectory: state)
        // The done URL is known by its row, its folder's name is taken.
        let queued = try queue.enqueue(source: "pod", items: [item("a", "http://h/a.mp3"), item("b", "http://h/b/a.mp3")], settings: settings, now: Date())
        #expect(queued.map(\.partName) == ["a-2.mp3"])
        #expect(queue.files(of: ["http://h/a.mp3"]) == ["http://h/a.mp3": state + "/media/a.mp3"])
        let database = try SQLiteConnection(path: state + "/state.db", create: false)
        #expect(try database.integer("PRAGMA user_version") == Int64(StateSchema.migrations.count))
        #expect(try database.integer("SELECT count(*) FROM downloads WHERE directory IS NULL AND file IS NULL AND source IS NULL") == 1)
        #expect(try database.integer("SELECT count(*) FROM downloads WHERE part_name = 'a.mp3' AND file_name = 'a.mp3' AND suggested_name IS NULL") == 1)
        #expect(try database.integer("SELECT count(*) FROM downloads WHERE part_name IS NULL AND file_name IS NULL") == 1)
        // The failed row with attempts left is taken up again at a start, beside the one queued.
        #expect(try queue.entries(.unfinished).map(\.url) == ["http://h/r.mp3", "http://h/b/a.mp3"])
    }

    /// A start takes up pending rows and failed ones with a passing cause and attempts left,
    /// and reads no other: failed rows stay for good (a podcast's dead back catalogue leaves
    /// thousands), and every start of a run, watch or transfer reading them all cost 0.65 s at
    /// 10,000.
    @Test func aStartReadsOnlyTheFailedRowsItTriesAgain() throws {
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        let settings = DownloadSettings(directory: state + "/media")
        let kinds = ["queued", "gone", "flaky", "tired", "stuck"]
        _ = try queue.enqueue(source: "pod", items: kinds.map { item($0, "http://h/\($0).mp3") }, settings: settings, now: Date())
        try queue.update { entries in
            entries[1].record(.failed(reason: "HTTP 404", retryable: false, deletePart: false), at: Date())
            entries[2].record(.failed(reason: "HTTP 503", retryable: true, deletePart: false), at: Date())
            entries[3].record(.failed(reason: "HTTP 503", retryable: true, deletePart: false), at: Date())
            entries[3].attempts = Downloader.maxAttempts
            entries[4].state = .downloading
        }
        let database = try SQLiteConnection(path: state + "/state.db", create: false)
        // A failed row that is not readable: a start reading every failed row would stop at it.
        try database.execute("INSERT INTO downloads (url, position, state, entry) VALUES ('http://h/broken', 99, 'failed', '{ not json')")
        #expect(try queue.entries(.unfinished).map(\.url) == ["http://h/queued.mp3", "http://h/flaky.mp3", "http://h/stuck.mp3"])
        #expect(try DownloadService.hasPendingWork(queue))

        var plan: [String] = []
        try database.query("EXPLAIN QUERY PLAN SELECT url FROM downloads WHERE \(DownloadQueue.Rows.unfinished.condition)") { row in
            if let detail = row.text(3) { plan.append(detail) }
        }
        #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(plan)")
        #expect(plan.contains { $0.contains("downloads_by_retry") && $0.contains("retryable=?") }, "\(plan)")

        // Once the flaky one is done and the others are not taken up, nothing is pending.
        try queue.update(.urls(kinds.map { "http://h/\($0).mp3" })) { entries in
            for index in entries.indices where entries[index].state != .failed { entries[index].state = .done }
            if let flaky = entries.firstIndex(where: { $0.url.hasSuffix("flaky.mp3") }) { entries[flaky].state = .done }
        }
        #expect(try !DownloadService.hasPendingWork(queue))
    }

    /// Queuing reads the rows of the URLs it queues, not the folder's history: the names the
    /// other rows hold (part file, suggestion, finished file, in any state) are looked up
    /// through indexes, so an unreadable row of the same folder stops nothing, and a folder
    /// with a long history costs a lookup per name.
    @Test func queuingLooksUpTheFoldersNamesWithoutReadingItsRows() throws {
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        let settings = DownloadSettings(directory: state + "/media")
        _ = try queue.enqueue(source: "pod", items: [item("p", "http://h/part.mp3"), item("s", "http://h/s.mp3"), item("f", "http://h/f.mp3")], settings: settings, now: Date())
        try queue.update { entries in
            entries[1].suggestedName = "suggested.mp3"
            entries[2].state = .removed
            entries[2].file = state + "/media/finished.mp3"
        }
        let database = try SQLiteConnection(path: state + "/state.db", create: false)
        try database.execute("INSERT INTO downloads (url, position, state, entry, directory) VALUES ('http://h/broken', 9, 'done', '{ not json', '\(state)/media')")
        // Another folder's rows hold no name here.
        _ = try queue.enqueue(source: "pod", items: [item("o", "http://h/o/other.mp3")], settings: DownloadSettings(directory: state + "/elsewhere"), now: Date())

        let queued = try queue.enqueue(source: "pod", items: ["part", "suggested", "finished", "other"].map { item($0, "http://h/new/\($0).mp3") }, settings: settings, now: Date())
        #expect(queued.map(\.partName) == ["part-2.mp3", "suggested-2.mp3", "finished-2.mp3", "other.mp3"])

        // The lookup reads no row it does not ask for, however many the folder has.
        try database.transaction {
            for index in 0..<2_000 {
                try database.query("INSERT INTO downloads (url, position, state, entry, directory, part_name, file_name) VALUES (?, ?, 'removed', '{}', ?, ?, ?)", [.text("http://h/old/\(index)"), .integer(Int64(100 + index)), .text(state + "/media"), .text("old\(index).mp3"), .text("old\(index).mp3")])
            }
        }
        try database.execute("ANALYZE")
        // Each kind of name is one index search on the folder and the name, not a walk
        // through the folder's rows.
        var plan: [String] = []
        try database.query("EXPLAIN QUERY PLAN " + DownloadQueue.Lookup.holdsNameQuery, [.text(state + "/media"), .text("absent.mp3")]) { row in
            if let detail = row.text(3), detail.contains("downloads") { plan.append(detail) }
        }
        #expect(plan.count == 3, "\(plan)")
        for column in ["part_name", "suggested_name", "file_name"] {
            #expect(plan.contains { $0.hasPrefix("SEARCH downloads USING") && $0.contains("(directory=? AND \(column)=?)") }, "\(plan)")
        }
        #expect(try database.integer(DownloadQueue.Lookup.holdsNameQuery, [.text(state + "/media"), .text("old1999.mp3")]) == 1)
        #expect(try database.integer(DownloadQueue.Lookup.holdsNameQuery, [.text(state + "/elsewhere"), .text("old1999.mp3")]) == 0)
    }

    @Test func anUnreadableRowIsNamedNotSkipped() throws {
        let queue = DownloadQueue(stateDirectory: state)
        defer { try? FileManager.default.removeItem(atPath: state) }
        _ = try queue.enqueue(source: "a", items: [item("1", "http://h/1.mp3")], settings: DownloadSettings(directory: state + "/media"), now: Date())
        let database = try SQLiteConnection(path: state + "/state.db", create: false)
        try database.execute("INSERT INTO downloads (url, position, state, entry) VALUES ('http://h/\u{1b}[2J', 9, 'queued', '{ not json')")
        do {
            _ = try queue.entries()
            Issue.record("read")
        } catch {
            #expect("\(error)".contains("is not readable"))
            #expect(!"\(error)".contains("\u{1b}"))
        }
    }

    @Test func pruningKeepsTheNewestFiles() throws {
        let settings = DownloadSettings(directory: state, keep: 2)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        var entries = (1...4).map { day in
            var entry = DownloadEntry(url: "http://h/\(day)", source: "pod", item: Item(id: "\(day)", title: "", published: Date(timeIntervalSince1970: Double(day) * 86400)), enclosure: Enclosure(url: "http://h/\(day)"), settings: settings, partName: "\(day)", queuedAt: Date())
            entry.state = .done
            entry.file = state + "/\(day)"
            _ = FileManager.default.createFile(atPath: entry.file!, contents: Data("x".utf8))
            return entry
        }
        let removed = Downloader.prune(&entries, source: "pod", directory: state, keep: 2)
        #expect(removed.map(\.url) == ["http://h/2", "http://h/1"])
        #expect(entries.map(\.state) == [.removed, .removed, .done, .done])
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).sorted() == ["3", "4"])
    }
}

@Suite struct HTTPDownloadTests {
    let server: FixtureServer
    let client = CurlHTTPClient.started()
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("download-\(UUID().uuidString)").path

    init() throws {
        server = try FixtureServer()
    }

    /// Downloads into a file that starts with `existing`; returns the response and the file.
    func download(_ name: String, existing: [UInt8] = [], resume: DownloadRequest.Resume? = nil, maxBytes: Int64 = 1 << 30, stall: Duration = .seconds(10)) async throws -> (DownloadResponse, [UInt8]) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(existing))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let descriptor = open(path, O_WRONLY)
        defer { close(descriptor) }
        let file = DownloadFile(descriptor: descriptor, currentSize: Int64(existing.count))
        let request = DownloadRequest(url: server.url("/enclosures/\(name)"), maxBytes: maxBytes, stallTimeout: stall, resume: resume)
        let response = try await client.download(request, into: file)
        return (response, Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    @Test func continuesAPartialFileWithRangeAndIfRange() async throws {
        server.serveEnclosure("a.bin", FixtureEnclosure(size: 100_000))
        let body = FixtureEnclosure.body(name: "a.bin", size: 100_000, version: 1)
        let (response, file) = try await download("a.bin", existing: Array(body[..<40_000]), resume: .init(offset: 40_000, validator: "\"a.bin-v1\""))
        #expect(response.status == 206)
        #expect(response.announcedSize == 100_000)
        #expect(file == body)
        let request = try #require(server.requests(to: "/enclosures/a.bin").last)
        #expect(request.headers["range"] == "bytes=40000-")
        #expect(request.headers["if-range"] == "\"a.bin-v1\"")
        #expect(request.headers["accept-encoding"] == nil)
    }

    @Test func aChangedFileIsRewrittenFromTheStart() async throws {
        server.serveEnclosure("b.bin", FixtureEnclosure(size: 50_000, version: 2))
        let (response, file) = try await download("b.bin", existing: [UInt8](repeating: 7, count: 30_000), resume: .init(offset: 30_000, validator: "\"b.bin-v1\""))
        #expect(response.status == 200)
        #expect(file == FixtureEnclosure.body(name: "b.bin", size: 50_000, version: 2))
    }

    @Test func anErrorStatusLeavesTheFileAlone() async throws {
        server.serveEnclosure("c.bin", FixtureEnclosure(size: 10, status: 404))
        let (response, file) = try await download("c.bin", existing: [1, 2, 3], resume: .init(offset: 3, validator: "x"))
        #expect(response.status == 404)
        #expect(!response.wroteBody)
        #expect(file == [1, 2, 3])
    }

    @Test func sizeCapAndStallAreErrorsWithReasons() async throws {
        server.serveEnclosure("d.bin", FixtureEnclosure(size: 200_000))
        server.serveEnclosure("e.bin", FixtureEnclosure(size: 200_000, stallAt: 1000))
        await #expect { try await download("d.bin", maxBytes: 100_000) } throws: { error in
            // It names the file's real size, not only the limit.
            (error as? HTTPError)?.kind == .bodyTooLarge && "\(error)".contains("the file is \(ByteSizeText.format(200_000)), larger than max_size (\(ByteSizeText.format(100_000)))")
        }
        let started = ContinuousClock.now
        await #expect { try await download("e.bin", stall: .seconds(1)) } throws: { error in
            "\(error)".contains("stalled")
        }
        // Judged from the last byte, not averaged over curl's five-second window.
        #expect(ContinuousClock.now - started < .seconds(4))
    }

    @Test func contentRanges() {
        #expect(ContentRange("bytes 10-99/100") == ContentRange("bytes 10-99/100"))
        #expect(ContentRange("bytes 10-99/100")?.start == 10)
        #expect(ContentRange("bytes 10-99/*")?.total == nil)
        #expect(ContentRange("bytes */100") == nil)
        #expect(ContentRange("items 1-2/3") == nil)
    }
}

@Suite struct DownloaderTests {
    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [DownloadEvent] = []
        func append(_ event: DownloadEvent) { lock.withLock { list.append(event) } }
        var all: [DownloadEvent] { lock.withLock { list } }
    }

    @Test func keepsToThePerHostLimitAndDrains() async throws {
        let server = try FixtureServer()
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("downloader-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        let names = (1...4).map { "f\($0).bin" }
        for name in names { server.serveEnclosure(name, FixtureEnclosure(size: 200_000, bytesPerSecond: 400_000)) }
        let items = names.map { Item(id: $0, title: $0, enclosures: [Enclosure(url: server.url("/enclosures/\($0)"))]) }
        _ = try queue.enqueue(source: "s", items: items, settings: DownloadSettings(directory: state + "/media"), now: Date())

        var limits = DownloadLimits(folders: [state + "/media"])
        limits.maxPerHost = 2
        let events = Events()
        let downloader = Downloader(queue: queue, http: CurlHTTPClient.started(), limits: limits) { events.append($0) }
        let tally = await downloader.run(.untilDrained)

        #expect(tally.done == 4 && tally.failed == 0)
        #expect(tally.bytes == 800_000)
        var mostAtOnce = 0
        for case .progress(let running) in events.all { mostAtOnce = max(mostAtOnce, running.count) }
        #expect(mostAtOnce == 2)
        #expect(try queue.entries().allSatisfy { $0.state == .done })
        for name in names {
            let file = try Data(contentsOf: URL(fileURLWithPath: state + "/media/" + name))
            #expect(file == Data(FixtureEnclosure.body(name: name, size: 200_000, version: 1)))
        }
    }
}

extension DownloaderTests {
    /// A kill between moving the file into place and recording it: the next start finds the
    /// file and records it instead of downloading it again.
    @Test func aFileMovedIntoPlaceButNotRecordedIsAdopted() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("adopt-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        // Port 9 (discard) is closed here: any request would fail.
        let url = "http://127.0.0.1:9/a.bin"
        _ = try queue.enqueue(source: "s", items: [Item(id: "a", title: "a", enclosures: [Enclosure(url: url)])], settings: DownloadSettings(directory: state + "/media"), now: Date())
        try queue.update { entries in
            entries[0].state = .downloading
            entries[0].size = 10
        }
        try FileManager.default.createDirectory(atPath: state + "/media", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: state + "/media/a.bin", contents: Data(count: 10))

        let tally = await Downloader(queue: queue, http: CurlHTTPClient.started(), limits: DownloadLimits(folders: [state + "/media"])).run(.untilDrained)
        #expect(tally.done == 1 && tally.failed == 0)
        let entry = try #require(try queue.entries().first)
        #expect(entry.state == .done && entry.file == state + "/media/a.bin")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/media") == ["a.bin"])
    }
}

extension DownloaderTests {
    /// A part file that is already whole (killed before it was moved into place): the server
    /// answers the resume with 416 `bytes */<size>`, and the file is finished, not fetched again.
    @Test func aWholePartIsFinishedOnA416() async throws {
        let server = try FixtureServer()
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("whole-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let body = FixtureEnclosure.body(name: "w.bin", size: 50_000, version: 1)
        server.serveEnclosure("w.bin", FixtureEnclosure(size: 50_000))
        let queue = DownloadQueue(stateDirectory: state)
        let url = server.url("/enclosures/w.bin")
        _ = try queue.enqueue(source: "s", items: [Item(id: "w", title: "w", enclosures: [Enclosure(url: url)])], settings: DownloadSettings(directory: state + "/media"), now: Date())
        try queue.update { entries in entries[0].validator = "\"w.bin-v1\"" }
        try FileManager.default.createDirectory(atPath: state + "/media", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: state + "/media/w.bin.part", contents: Data(body))

        let tally = await Downloader(queue: queue, http: CurlHTTPClient.started(), limits: DownloadLimits(folders: [state + "/media"])).run(.untilDrained)
        #expect(tally.done == 1 && tally.failed == 0)
        #expect(server.requests(to: "/enclosures/w.bin").count == 1)
        #expect(server.requests(to: "/enclosures/w.bin").first?.headers["range"] == "bytes=50000-")
        #expect(try Data(contentsOf: URL(fileURLWithPath: state + "/media/w.bin")) == Data(body))
        #expect(!FileManager.default.fileExists(atPath: state + "/media/w.bin.part"))
    }
}

extension DownloaderTests {
    /// The queue keeps a row for every URL it ever downloaded, and a download's steps (queued,
    /// started, its response's head, its end, `keep`) read only the rows they are about: each
    /// step reading them all made 2,000 enclosures of one feed take 149 s of CPU. Shown here by
    /// rows the steps must not touch: 300 done ones of the same source in another folder (not
    /// `keep`'s to delete), and one that is not readable, which any step that read every row
    /// would stop at.
    @Test func aDownloadsStepsReadOnlyTheRowsTheyAreAbout() async throws {
        let server = try FixtureServer()
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("rows-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        let old = DownloadSettings(directory: state + "/old", keep: 2)
        try queue.update { entries in
            for number in 0..<300 {
                var entry = DownloadEntry(url: "http://h/old/\(number).mp3", source: "s", item: Item(id: "\(number)", title: ""), enclosure: Enclosure(url: "http://h/old/\(number).mp3"), settings: old, partName: "\(number).mp3", queuedAt: Date())
                entry.state = .done
                entry.file = state + "/old/\(number).mp3"
                entries.append(entry)
            }
        }
        let database = try SQLiteConnection(path: state + "/state.db", create: false)
        try database.execute("INSERT INTO downloads (url, position, state, entry) VALUES ('http://h/broken', 1000, 'done', '{ not json')")

        let names = (1...3).map { "f\($0).bin" }
        for name in names { server.serveEnclosure(name, FixtureEnclosure(size: 1_000)) }
        let items = names.enumerated().map { index, name in
            Item(id: name, title: name, published: Date(timeIntervalSince1970: Double(index) * 86_400), enclosures: [Enclosure(url: server.url("/enclosures/\(name)"))])
        }
        #expect(try queue.enqueue(source: "s", items: items, settings: DownloadSettings(directory: state + "/media", keep: 2), now: Date()).count == 3)
        #expect(try DownloadService.hasPendingWork(queue))
        let tally = await Downloader(queue: queue, http: CurlHTTPClient.started(), limits: DownloadLimits(folders: [state + "/media"])).run(.untilDrained)
        #expect(tally.done == 3 && tally.failed == 0)
        #expect(try !DownloadService.hasPendingWork(queue))
        // `keep: 2` let the oldest of the three go, and nothing in the other folder.
        #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/media").sorted() == ["f2.bin", "f3.bin"])
        #expect(try database.integer("SELECT count(*) FROM downloads WHERE state = 'done' AND directory = ?", [.text(state + "/old")]) == 300)
        #expect(queue.files(of: [server.url("/enclosures/f3.bin"), "http://h/old/7.mp3"]) == [server.url("/enclosures/f3.bin"): state + "/media/f3.bin", "http://h/old/7.mp3": state + "/old/7.mp3"])
        // Reading the whole queue still names the row it cannot read.
        #expect(throws: DownloadQueueError.self) { try queue.entries() }
    }

    /// A file at a pending entry's place that another entry finished into is that entry's:
    /// not adopted, though its size matches.
    @Test func aFileAnotherEntryOwnsIsNotAdopted() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("owned-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        let settings = DownloadSettings(directory: state + "/media")
        // Port 9 (discard) is closed here: a request fails.
        _ = try queue.enqueue(source: "s", items: [Item(id: "a", title: "a", enclosures: [Enclosure(url: "http://127.0.0.1:9/one/a.bin"), Enclosure(url: "http://127.0.0.1:9/two/a.bin")])], settings: settings, now: Date())
        try queue.update { entries in
            entries[0].state = .done
            entries[0].file = state + "/media/a.bin"
            entries[1].state = .downloading
            entries[1].size = 10
            entries[1].suggestedName = "a.bin"
        }
        try FileManager.default.createDirectory(atPath: state + "/media", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: state + "/media/a.bin", contents: Data(count: 10))

        let tally = await Downloader(queue: queue, http: CurlHTTPClient.started(), limits: DownloadLimits(folders: [state + "/media"])).run(.untilDrained)
        #expect(tally.done == 0 && tally.failed == 1)
        #expect(try queue.entries().map(\.state) == [.done, .failed])
    }
}

extension DownloaderTests {
    /// The queue is a table in the state folder, which anyone with access can edit: its rows do
    /// not choose where files are written or deleted. A row whose folder the config does not
    /// name, or whose names are paths, fails with the reason, and nothing is created; `keep`
    /// deletes only files inside the folder.
    @Test func queueRowsCannotPlaceOrDeleteFilesOutsideTheConfigsFolders() async throws {
        let server = try FixtureServer()
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("placed-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        let media = state + "/media", elsewhere = state + "/elsewhere"
        for name in ["a.bin", "b.bin", "c.bin", "d.bin"] { server.serveEnclosure(name, FixtureEnclosure(size: 1_000)) }
        func item(_ name: String, day: Double) -> Item {
            Item(id: name, title: name, published: Date(timeIntervalSince1970: day * 86_400), enclosures: [Enclosure(url: server.url("/enclosures/\(name)"))])
        }
        _ = try queue.enqueue(source: "s", items: [item("a.bin", day: 1), item("b.bin", day: 2), item("c.bin", day: 3)], settings: DownloadSettings(directory: media, keep: 1), now: Date())
        // A victim outside the folder, named by a done row of the same source and folder.
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: elsewhere + "/victim", contents: Data("keep me".utf8))
        try queue.update { entries in
            entries[0].directory = elsewhere                     // a folder the config does not name
            entries[1].partName = "../elsewhere/planted"         // a path for a name
            var done = entries[2]
            done.url = "http://h/old.bin"
            done.state = .done
            done.file = elsewhere + "/victim"
            done.published = Date(timeIntervalSince1970: 0)
            entries.append(done)
        }
        _ = try queue.enqueue(source: "s", items: [item("d.bin", day: 4)], settings: DownloadSettings(directory: media, keep: 1), now: Date())

        let tally = await Downloader(queue: queue, http: CurlHTTPClient.started(), limits: DownloadLimits(folders: [media])).run(.untilDrained)
        #expect(tally.done == 2 && tally.failed == 2)
        let entries = Dictionary(uniqueKeysWithValues: try queue.entries().map { ($0.url, $0) })
        let refusedFolder = try #require(entries[server.url("/enclosures/a.bin")])
        #expect(refusedFolder.state == .failed && refusedFolder.failure?.contains("is not a download folder of the config") == true && !refusedFolder.retryable, "\(refusedFolder)")
        let refusedName = try #require(entries[server.url("/enclosures/b.bin")])
        #expect(refusedName.state == .failed && refusedName.failure?.contains("is not a plain file name") == true, "\(refusedName)")
        // Nothing was written outside the folder, and the victim is still there, its row removed.
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == ["victim"])
        #expect(entries["http://h/old.bin"]?.state == .removed)
        #expect(server.requests(to: "/enclosures/a.bin").isEmpty && server.requests(to: "/enclosures/b.bin").isEmpty)
        // keep: 1 — of c and d, the newer stays.
        #expect(try FileManager.default.contentsOfDirectory(atPath: media) == ["d.bin"])
    }
}

@Suite struct DownloadReportTests {
    let report = DownloadReport(style: TerminalStyle(colored: false))

    func progress(_ name: String, _ received: Int64, of size: Int64?, rate: Double) -> DownloadProgress {
        DownloadProgress(url: "http://h/\(name)", source: "pod", name: name, received: received, size: size, bytesPerSecond: rate)
    }

    @Test func boardHasABarPerDownloadAndATotalWithinTheWidth() {
        let lines = report.board([
            progress("episode-with-a-rather-long-name-indeed.mp3", 50 << 20, of: 100 << 20, rate: Double(5 << 20)),
            progress("b.mp3", 10 << 20, of: nil, rate: Double(1 << 20)),
        ], width: 80)
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0.count <= 79 }, "\(lines)")
        #expect(lines[0].contains("[#####-----]  50%") && lines[0].contains("50.0 MiB / 100 MiB") && lines[0].contains("ETA 10s"))
        #expect(lines[1].contains("[??????????]") && !lines[1].contains("ETA"))
        // Without every size the total has none either.
        #expect(lines[2].contains("total (2)") && lines[2].contains("60.0 MiB") && lines[2].contains("6.0 MiB/s"))
        #expect(report.board([], width: 80).isEmpty)
    }

    @Test func jsonEventsCarryStateAndNumbers() throws {
        var entry = DownloadEntry(url: "http://h/a.mp3", source: "pod", item: Item(id: "1", title: "One"), enclosure: Enclosure(url: "http://h/a.mp3"), settings: DownloadSettings(directory: "/d"), partName: "a.mp3", queuedAt: Date())
        entry.state = .failed
        entry.failure = "HTTP 404"
        entry.retryable = false
        let failed = try #require(DownloadReport.jsonLines(for: .failed(entry)).first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(failed.utf8)) as? [String: Any])
        #expect(object["event"] as? String == "download")
        #expect(object["state"] as? String == "failed")
        #expect(object["reason"] as? String == "HTTP 404")
        #expect(object["retry"] as? Bool == false)
        let progress = DownloadReport.jsonLines(for: .progress([progress("a.mp3", 25, of: 100, rate: 10)]))
        #expect(progress == [#"{"event":"download","state":"progress","source":"pod","url":"http://h/a.mp3","name":"a.mp3","bytes":25,"size":100,"percent":25,"bytes_per_second":10}"#])
    }
}

extension DownloaderTests {
    /// A shutdown reaches the HTTP client and the downloader separately, and the client may
    /// stop first: its download ends cancelled, and nothing starts again on the stopped client
    /// — the entry goes back to `queued` with its part, not `failed`, and the downloader ends.
    @Test func aClientStoppedBeforeTheDownloaderLeavesItsDownloadQueued() async throws {
        let server = try FixtureServer()
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("stopped-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        server.serveEnclosure("a.bin", FixtureEnclosure(size: 300_000, stallAt: 100_000))
        _ = try queue.enqueue(source: "s", items: [Item(id: "a", title: "a", enclosures: [Enclosure(url: server.url("/enclosures/a.bin"))])], settings: DownloadSettings(directory: state + "/media"), now: Date())

        let client = CurlHTTPClient()
        let clientRun = Task.detached { try? await client.run() }
        let downloader = Downloader(queue: queue, http: client, limits: DownloadLimits(folders: [state + "/media"]))
        // Until cancelled: only a download ending cancelled can make it return.
        let ended = Locked(false)
        let downloads = Task.detached {
            let tally = await downloader.run(.untilCancelled)
            ended.withLock { $0 = true }
            return tally
        }
        try await waitUntil("100 kB of the download", timeout: .seconds(20)) { Downloader.fileSize(state + "/media/a.bin.part") >= 100_000 }
        clientRun.cancel()
        // Should it not end by itself (a failure, recorded by the wait), it is cancelled.
        if try await !waitUntil("the downloader's end once its client stopped", timeout: .seconds(20), { ended.withLock { $0 } }) {
            downloads.cancel()
        }
        let tally = await downloads.value
        #expect(tally.failed == 0 && tally.done == 0 && tally.bytes == 100_000)
        let entry = try #require(try queue.entries().first)
        #expect(entry.state == .queued && entry.received == 100_000 && entry.attempts == 0, "\(entry)")
        #expect(server.requests(to: "/enclosures/a.bin").count == 1)
    }
}

extension DownloaderTests {
    /// Finished files are written into their sources' snapshots together (at a tick, when
    /// nothing runs any more, at the end) rather than one snapshot write per file: every file
    /// of both sources is there once the run has ended, an adopted one's too.
    @Test func everyFinishedFileReachesItsSourcesSnapshot() async throws {
        let server = try FixtureServer()
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("record-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let queue = DownloadQueue(stateDirectory: state)
        let settings = DownloadSettings(directory: state + "/media")
        let directory = StateDirectory(path: state)
        try directory.prepare()
        var itemsBySource: [String: [Item]] = [:]
        for (source, names) in [("a", ["a1.bin", "a2.bin", "a3.bin"]), ("b", ["b1.bin", "b2.bin"])] {
            for name in names { server.serveEnclosure(name, FixtureEnclosure(size: 1_000)) }
            let items = names.map { Item(id: $0, title: $0, enclosures: [Enclosure(url: server.url("/enclosures/\($0)"))]) }
            itemsBySource[source] = items
            try directory.snapshots.save(Snapshot(source: source, type: "rss", updatedAt: Date(), items: items))
            _ = try queue.enqueue(source: source, items: items, settings: settings, now: Date())
        }
        // b2 is already whole in the folder (a kill before it was recorded): adopted, not fetched.
        try queue.update { entries in
            let index = try #require(entries.firstIndex { $0.url.hasSuffix("b2.bin") })
            entries[index].state = .downloading
            entries[index].size = 1_000
        }
        try FileManager.default.createDirectory(atPath: state + "/media", withIntermediateDirectories: true)
        try Data(FixtureEnclosure.body(name: "b2.bin", size: 1_000, version: 1)).write(to: URL(fileURLWithPath: state + "/media/b2.bin"))

        let recorder = SnapshotRecorder(stateDirectory: directory, holder: .neither)
        let tally = await Downloader(queue: queue, http: CurlHTTPClient.started(), limits: DownloadLimits(folders: [state + "/media"]), snapshots: recorder).run(.untilDrained)
        #expect(tally.done == 5 && tally.failed == 0)
        #expect(server.requests(to: "/enclosures/b2.bin").isEmpty)
        for (source, items) in itemsBySource {
            guard case .loaded(let snapshot) = directory.snapshots.load(source: source) else {
                Issue.record("no snapshot of \(source)")
                continue
            }
            #expect(snapshot.items.map(\.id) == items.map(\.id))
            for item in snapshot.items {
                #expect(item.enclosures.first?.file == state + "/media/" + item.id, "\(item)")
            }
        }
    }
}

@Suite struct TransferLogTests {
    /// A detached transfer's log past its limit is moved to `.1` before the next one starts;
    /// a link planted at `.1` is replaced, not written through; a log under the limit is
    /// appended to.
    @Test func aLogPastItsLimitIsMovedAsideAndALinkBesideItIsNotFollowed() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transfer-log-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let log = folder + "/transfer.log", victim = folder + "/victim"
        func launchEcho(_ word: String) throws {
            let pid = try DetachedProcess.launch(executable: "/bin/echo", arguments: [word], logPath: log)
            var status: Int32 = 0
            #expect(waitpid(pid, &status, 0) == pid)
        }
        let old = Data(repeating: UInt8(ascii: "o"), count: Int(DetachedProcess.maximumLogBytes) + 1)
        try old.write(to: URL(fileURLWithPath: log))
        try Data("keep".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: log + ".1", withDestinationPath: victim)

        try launchEcho("first")
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "first\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: log + ".1")) == old)
        #expect(try FileManager.default.attributesOfItem(atPath: log + ".1")[.type] as? FileAttributeType == .typeRegular)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")

        try launchEcho("second")
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "first\nsecond\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: log + ".1")) == old)
    }
}
