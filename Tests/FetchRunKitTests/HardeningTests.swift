import Foundation
import Testing
import TestSupport
@testable import FetchRunKit
@testable import FetchRunTransport

/// Every number, document, plugin answer, file and string from outside, at its worst.
@Suite struct HardeningTests {
    // MARK: Numbers from outside never trap

    @Test func retryAfterIsClampedWhateverTheServerSends() {
        func retryAfter(_ value: String) -> Duration? {
            HTTPResponse(status: 429, headers: ["retry-after": value], body: Data(), effectiveURL: "").retryAfter(now: Date(timeIntervalSince1970: 1_800_000_000))
        }
        #expect(retryAfter("9223372036854775807") == HTTPResponse.longestRetryAfter)
        #expect(retryAfter("99999999999999999999999999999") == HTTPResponse.longestRetryAfter)
        #expect(retryAfter("120") == .seconds(120))
        #expect(retryAfter("-5") == nil)
        #expect(retryAfter("Fri, 31 Dec 9999 23:59:59 GMT") == HTTPResponse.longestRetryAfter)
        #expect(retryAfter("Thu, 01 Jan 1970 00:00:00 GMT") == .zero)
        // The failure that carries it is scheduled and reported without overflow.
        var schedule = FetchSchedule(interval: .seconds(60))
        let delay = schedule.delay(after: .failed(FetchFailure(.httpStatus, "429", retryAfter: .seconds(Int64.max))), jitter: 0)
        #expect(delay == HTTPResponse.longestRetryAfter)
        #expect(Duration.seconds(Int64.max).milliseconds == .max)
        #expect(Duration.seconds(Int64.min).milliseconds == .min)
        #expect(DurationText.format(.seconds(Int64.max)).hasSuffix("s"))
    }

    // MARK: Parsing is bounded, off the pool, and late results are late

    static func crowded(attributes: Int) -> Data {
        var xml = #"<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>"#
        xml += "<item"
        for index in 0..<attributes { xml += " a\(index)=\"x\"" }
        xml += "><title>x</title></item></channel></rss>"
        return Data(xml.utf8)
    }

    @Test func anElementWithTooManyAttributesIsRefusedBeforeLibxml2ReadsIt() throws {
        let clock = ContinuousClock()
        let start = clock.now
        let error = #expect(throws: FeedParseError.self) { try FeedParser().parse(Self.crowded(attributes: 100_000)) }
        #expect(error?.message.contains("more than 1000 attributes") == true)
        #expect(error?.line == 1)
        // Functional, not a benchmark: libxml2 itself takes many seconds on this document.
        #expect(clock.now - start < .seconds(5))
        // A document within the limit is read as usual; comments and CDATA are not counted.
        let fine = #"<rss version="2.0"><channel><!-- a="1" b="2" --><item a="1" b="2"><title><![CDATA[x=1 y=2]]></title></item></channel></rss>"#
        #expect(try FeedParser(limits: FeedParseLimits(attributesPerElement: 2)).parse(Data(fine.utf8)).items.count == 1)
    }

    @Test func itemsAndTextPerDocumentAreCapped() throws {
        var xml = #"<rss version="2.0"><channel>"#
        for index in 0..<30 { xml += "<item><guid>\(index)</guid><title>\(String(repeating: "x", count: 100))</title></item>" }
        xml += "</channel></rss>"
        let feed = try FeedParser(limits: FeedParseLimits(items: 10, textBytes: 50)).parse(Data(xml.utf8))
        #expect(feed.items.count == 10)
        #expect(feed.items[0].title.utf8.count == 50)
        #expect(feed.warnings.contains { $0.contains("20 more dropped") })
    }

    @Test func aCancelledParseStopsAndThrows() throws {
        let flag = CancellationFlag()
        flag.cancel()
        #expect(throws: CancellationError.self) { try FeedParser().parse(Data(FixtureFeeds.small.utf8), cancellation: flag) }
    }

    @Test func offPoolWorkReturnsAtCancellationWithoutWaitingForTheWork() async throws {
        // Work that never looks at its flag and ends only when the test lets it: the cancelled
        // caller must have its answer while the work still runs.
        let release = DispatchSemaphore(value: 0)
        let started = Locked(false), finished = Locked(false)
        let task = Task {
            try await runOffPool { _ in
                started.withLock { $0 = true }
                release.wait()
                finished.withLock { $0 = true }
                return 1
            }
        }
        try await waitUntil("the work on its thread") { started.withLock { $0 } }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(!finished.withLock { $0 })
        release.signal()
        #expect(try await runOffPool { _ in 42 } == 42)
    }

    @Test func aResultThatArrivesAfterTheDeadlineIsDeadlineExceeded() async throws {
        // Work that ignores cancellation (a continuation nothing but the test resumes): the
        // alarm cannot stop it, the clock can. It waits without holding a thread.
        let clock = TestClock()
        let gate = Locked<CheckedContinuation<Void, Never>?>(nil)
        let deadline = clock.now + .milliseconds(50)
        let call = Task {
            try await withDeadline(deadline, on: clock) {
                await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
                return 1
            }
        }
        try await waitUntil("the work under way") { gate.withLock { $0 != nil } }
        // Past the deadline while the work goes on; then it returns, late.
        clock.advance(by: .milliseconds(300))
        gate.withLock { $0 }?.resume()
        await #expect(throws: DeadlineExceeded.self) { try await call.value }
    }

    // MARK: Item fields are capped

    @Test func oversizeFieldsAreCutOnACharacterBoundaryWithANote() {
        let huge = String(repeating: "é", count: 5_000_000) // 10 MB of two-byte characters
        let emoji = String(repeating: "👩‍👩‍👧", count: 1_000)
        let longID = String(repeating: "i", count: 5_000)
        let items = [
            Item(id: longID + "a", title: huge, link: "https://example.org/" + String(repeating: "p", count: 10_000), summary: emoji, author: emoji),
            Item(id: longID + "b", title: "fine"),
        ]
        let (bounded, note) = ItemLimits.standard.apply(to: items)
        let first = bounded[0]
        #expect(first.title.utf8.count <= ItemLimits.standard.title)
        #expect(first.title.hasSuffix("…"))
        #expect(first.title.dropLast().allSatisfy { $0 == "é" })
        #expect(first.author!.utf8.count <= ItemLimits.standard.author)
        #expect(first.author!.dropLast().allSatisfy { $0 == "👩‍👩‍👧" })
        #expect(first.link!.utf8.count <= ItemLimits.standard.link)
        // Long ids stay distinct and stable.
        #expect(first.id.utf8.count <= ItemLimits.standard.id)
        #expect(first.id != bounded[1].id)
        #expect(ItemLimits.standard.apply(to: items).items[0].id == first.id)
        #expect(note?.contains("title") == true)
        #expect(ItemLimits.standard.apply(to: [Item(id: "a", title: "b")]).note == nil)
        let many = (0..<(ItemLimits.standard.itemsPerFetch + 5)).map { Item(id: "\($0)", title: "t") }
        let cut = ItemLimits.standard.apply(to: many)
        #expect(cut.items.count == ItemLimits.standard.itemsPerFetch)
        #expect(cut.note?.contains("5 items past the first") == true)
    }

    @Test func theRunnerCapsWhatAnyAdapterReturns() async throws {
        let state = try temporaryStateDirectory()
        let source = source("big") { _ in
            FetchOutput(items: [Item(id: "1", title: String(repeating: "t", count: 50_000_000))])
        }
        // The deadline on a test clock that does not move: the rule is the cap, not how long a
        // busy machine takes to cut 50 MB.
        let http = CurlHTTPClient(configuration: .init(), clock: TestClock())
        let report = await FetchRunner(pipeline: try await pipeline(in: state, http: http)).run([source])
        #expect(report.sources[0].outcome.newItems.first?.title.utf8.count ?? .max <= ItemLimits.standard.title)
        #expect(report.sources[0].notes.contains { $0.contains("1 title cut to size") })
        let snapshot = try #require(FileManager.default.contents(atPath: state.snapshots.path(for: "big")))
        #expect(snapshot.count < 10_000)
    }

    // MARK: Plugins

    @Test func stderrWithoutNewlinesIsCappedAndLinear() {
        let seen = Locked<[String]>([])
        var lines = PluginProcess.StderrLines(keep: 5) { line in seen.withLock { $0.append(line) } }
        let block = [UInt8](repeating: UInt8(ascii: "e"), count: 65_536)
        for _ in 0..<128 { block.withUnsafeBufferPointer { lines.append($0) } } // 8 MiB, one line
        Array("\nnext\npartial".utf8).withUnsafeBufferPointer { lines.append($0) }
        lines.finish()
        #expect(lines.tail.count == 3)
        #expect(lines.tail[0].utf8.count <= PluginProcess.StderrLines.maxLineBytes + 3)
        #expect(lines.tail[0].hasSuffix("…"))
        #expect(Array(lines.tail.dropFirst()) == ["next", "partial"])
        #expect(seen.withLock { $0.count } == 3)
    }

    @Test func describeAnswersAreCheckedWithClearReasons() {
        func answer(_ json: String) -> PluginDescription.Answer { PluginDescription.parse(Data(json.utf8)) }
        #expect(answer(#"{"options": {"path": {"kind": "path"}}}"#) == .invalid(#"'options' must be a list of {"name", "kind", "default", "summary"} objects, not an object"#))
        #expect(answer("not json") == .invalid("its --describe output is not JSON"))
        #expect(answer(#"{"options": [{"kind": "path"}]}"#) == .invalid("option #1 in 'options' needs a 'name' (a non-empty string)"))
        #expect(answer(#"{"summary": 3}"#) == .invalid("'summary' must be a string"))
        guard case .described(let description) = answer(#"{"summary": "s", "options": [{"name": "path", "kind": "path", "default": "x", "summary": "p"}]}"#) else {
            Issue.record("a valid answer was refused")
            return
        }
        #expect(description.options.map(\.name) == ["path"])
    }

    @Test func onlyAPluginThatMentionsDescribeIsAskedAndItsAnswerIsCached() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-describe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let marker = folder.appendingPathComponent("ran").path
        let silent = folder.appendingPathComponent("silent").path
        try Data("#!/bin/sh\ntouch '\(marker)'\n".utf8).write(to: URL(fileURLWithPath: silent))
        chmod(silent, 0o755)
        let environment = ["XDG_CACHE_HOME": folder.appendingPathComponent("cache").path]
        #expect(PluginDescription.ask(silent, environment: environment) == PluginDescription.Answer.none)
        #expect(!FileManager.default.fileExists(atPath: marker), "a plugin that never mentions --describe was started")

        let describing = folder.appendingPathComponent("describing").path
        try Data("#!/bin/sh\n[ \"$1\" = --describe ] && echo '{\"summary\":\"d\",\"options\":[]}' && echo x >> '\(marker)'\n".utf8).write(to: URL(fileURLWithPath: describing))
        chmod(describing, 0o755)
        #expect(PluginDescription.ask(describing, environment: environment) == .described(PluginDescription(summary: "d", options: [])))
        #expect(PluginDescription.ask(describing, environment: environment) == .described(PluginDescription(summary: "d", options: [])))
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "x\n", "asked twice for one version of the file")
        let cacheFile = folder.appendingPathComponent("cache/fetchrun/plugin-descriptions.json").path
        #expect(FileManager.default.fileExists(atPath: cacheFile))
        // A later process reads the answer back from the file (keys hold NUL separators).
        let version = try #require(FileVersion(path: describing))
        #expect(PluginDescriptionCache(file: cacheFile).answer(for: version) == .described(PluginDescription(summary: "d", options: [])))
    }

    // MARK: Files

    @Test func filesAreNeverWrittenThroughLinksAndOddFilesAreNamed() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-files-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let victim = folder + "/victim"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        symlink(victim, folder + "/soft")
        link(victim, folder + "/hard")
        for name in ["soft", "hard"] {
            #expect(throws: SafeFile.ReadError.self) { try SafeFile.openForWriting(folder + "/" + name, flags: O_RDWR | O_CREAT) }
        }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
        mkfifo(folder + "/fifo", 0o644)
        let fifo = #expect(throws: SafeFile.ReadError.self) { try SafeFile.read(folder + "/fifo", maxBytes: 100) }
        #expect(fifo?.description == "it is a FIFO (named pipe), not a regular file")
        let device = #expect(throws: SafeFile.ReadError.self) { try SafeFile.read("/dev/zero", maxBytes: 100, followSymlinks: true) }
        #expect(device?.description == "it is a character device, not a regular file")
        let big = #expect(throws: SafeFile.ReadError.self) { try SafeFile.read(victim, maxBytes: 3) }
        #expect(big?.description.contains("larger than") == true)
    }

    @Test func leftoverTemporariesOfDeadProcessesAreRemovedAtTheNextStart() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-tmp-\(UUID().uuidString)").path
        let state = StateDirectory(path: folder)
        let snapshots = state.snapshots.directory
        try FileManager.default.createDirectory(atPath: snapshots, withIntermediateDirectories: true)
        // pid 2^22 + 1 is above Linux's pid_max: no such process.
        let dead = snapshots + "/.a.json.tmp-4194305-1", live = snapshots + "/.b.json.tmp-\(getpid())-1"
        for path in [dead, live] { #expect(FileManager.default.createFile(atPath: path, contents: Data())) }
        try state.prepare()
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live))
    }

    @Test func theLeftoverSweepReadsNamesAsBytesAndNeverThroughALink() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-sweep-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(folderDescriptor) }
        // Names as bytes, made and looked up relative to the folder.
        func make(_ name: [UInt8]) {
            let file = (name + [0]).withUnsafeBytes { openat(folderDescriptor, $0.baseAddress!.assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY | O_CLOEXEC, 0o644) }
            #expect(file >= 0)
            close(file)
        }
        func exists(_ name: [UInt8]) -> Bool {
            (name + [0]).withUnsafeBytes { faccessat(folderDescriptor, $0.baseAddress!.assumingMemoryBound(to: CChar.self), F_OK, 0) == 0 }
        }
        // pid 2^22 + 1 is above Linux's pid_max: no such process. A name that is not UTF-8 is
        // still a leftover, and is removed by its own bytes.
        let notUTF8 = [UInt8(ascii: "."), 0xFF, 0xFE] + Array(".json.tmp-4194305-7".utf8)
        let kept = [".b.json.tmp-\(getpid())-1", "feed.json", ".hidden", ".c.json.tmp--1", ".d.json.tmp-99999999999999999999-1", ".e.json.tmp-0-1"].map { Array($0.utf8) }
        for name in [notUTF8] + kept { make(name) }
        #expect(SafeFile.removeLeftoverTemporaries(in: folder) == 1)
        #expect(!exists(notUTF8))
        for name in kept { #expect(exists(name)) }

        // A link in place of the folder is not followed: what it points to stays.
        let dead = Array(".f.json.tmp-4194305-1".utf8)
        make(dead)
        let link = folder + "-link"
        #expect(symlink(folder, link) == 0)
        defer { unlink(link) }
        #expect(SafeFile.removeLeftoverTemporaries(in: link) == 0)
        #expect(exists(dead))
        #expect(SafeFile.removeLeftoverTemporaries(in: folder + "/missing") == 0)
    }

    @Test func aLeftoverNamesItsOwnerByTheDigitsAfterItsMarker() {
        func owner(_ name: String) -> pid_t? { Array(name.utf8).withUnsafeBytes { SafeFile.leftoverOwner(named: $0) } }
        #expect(owner(".a.json.tmp-123-9") == 123)
        #expect(owner(".a.json.tmp-42") == 42)
        #expect(owner(".a.tmp-7.tmp-8-1") == 7)
        #expect(owner(".a.json.tmp-") == nil)
        #expect(owner(".a.json.tmp-x1-1") == nil)
        #expect(owner(".a.json.tmp-0-1") == nil)
        #expect(owner(".a.json.tmp-2147483648-1") == nil)
        #expect(owner(".a.json.tmp-2147483647-1") == 2_147_483_647)
        #expect(owner(".tmp") == nil)
        // Bytes after the name's terminating zero are not part of it.
        #expect((Array(".a.tmp-".utf8) + [0] + Array("5-1".utf8)).withUnsafeBytes { SafeFile.leftoverOwner(named: $0) } == nil)
    }

    @Test func aPlantedLinkAsTheLockFileIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-lock-\(UUID().uuidString)").path
        let state = StateDirectory(path: folder)
        try state.prepare()
        let victim = folder + "/victim"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        symlink(victim, folder + "/lock")
        #expect(throws: StateDirectoryError.self) { try state.lock() }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
    }

    // MARK: Secrets, terminals, host names

    @Test func credentialsAreStrippedAndControlCharactersRefused() {
        #expect(HTTPText.removingCredentials(from: "https://me:s3cret@host.example:8443/a/b?c=d@e") == "https://host.example:8443/a/b?c=d@e")
        #expect(HTTPText.removingCredentials(from: "https://host.example/a@b") == "https://host.example/a@b")
        #expect(HTTPText.removingCredentials(from: "file:///x@y") == "file:///x@y")
        #expect(HTTPText.controlCharacterProblem("Bearer x\r\nX-Injected: 1")?.contains("carriage return") == true)
        #expect(HTTPText.controlCharacterProblem("a\u{0}b")?.contains("U+0000") == true)
        #expect(HTTPText.controlCharacterProblem("Bearer abc\tdef") == nil)
        #expect(!HTTPText.isHeaderName("X Bad"))
        #expect(HTTPText.isHeaderName("X-Good_1"))
    }

    @Test func textFromOutsideIsSafeForATerminal() {
        #expect(TerminalText.safe("plain title — ünïcode ✓") == "plain title — ünïcode ✓")
        #expect(TerminalText.safe("\u{1B}]52;c;aGk=\u{07}copied") == "\\x1B]52;c;aGk=\\x07copied")
        #expect(TerminalText.safe("\u{1B}[2J\u{9B}31m") == "\\x1B[2J\\u009B31m")
        #expect(TerminalText.safe("abc\u{202E}fed") == "abc\\u202Efed")
        #expect(TerminalText.safe("two\nlines\ttab") == "two lines tab")
        #expect(TerminalText.safe("del\u{7F}") == "del\\x7F")
    }

    @Test func printedTextIsCappedAtItsLimitWhateverItHolds() {
        let limit = TerminalText.maximumLength
        #expect(TerminalText.safe(String(repeating: "a", count: limit)) == String(repeating: "a", count: limit))
        let long = TerminalText.safe(String(repeating: "ä", count: 50_000))
        #expect(long.count == limit && long.hasSuffix("…") && long.hasPrefix("ää"))
        // Escapes print as several characters each: the cap holds after them too.
        let escapes = TerminalText.safe(String(repeating: "\u{1B}", count: 10_000))
        #expect(escapes.count <= limit && escapes.hasPrefix("\\x1B") && escapes.hasSuffix("…"))
        // One grapheme cluster of 200,000 combining marks is cut by scalars, not kept whole.
        let cluster = TerminalText.safe("e" + String(repeating: "\u{301}", count: 200_000))
        #expect(cluster.unicodeScalars.count <= limit)
        #expect(TerminalText.safe("short", maximumLength: 3) == "sh…")
        // A failure's message is kept to its own, larger cap wherever it comes from.
        let failure = FetchFailure(.adapter, String(repeating: "x", count: 100_000))
        #expect(failure.message.count == FetchFailure.maximumMessageLength && failure.message.hasSuffix("…"))
    }

    @Test func internationalHostNamesBecomePunycode() {
        #expect(InternationalHost.punycode("bücher") == "bcher-kva")
        #expect(InternationalHost.punycode("münchen") == "mnchen-3ya")
        #expect(InternationalHost.asciiURL("https://user:pw@Bücher.example:8080/pfad/ä?q=ü") == "https://user:pw@xn--bcher-kva.example:8080/pfad/ä?q=ü")
        #expect(InternationalHost.asciiURL("http://example.org/ä") == "http://example.org/ä")
    }

    // MARK: Config

    /// Tags are told apart through a set: a list of 60,000 (half of them repeats) keeps each
    /// once, first seen first, from a server's item and from a config alike. Compared along a
    /// list, either would take minutes.
    @Test func tenThousandsOfTagsAreToldApartInOnePass() throws {
        let labels = (0..<60_000).map { "c\($0 % 30_000)" }
        let xml = #"<rss version="2.0"><channel><title>t</title><item><guid>1</guid>"#
            + labels.map { "<category> \($0) </category>" }.joined() + "</item></channel></rss>"
        let item = try #require(try parse(xml).items.first)
        #expect(item.tags.count == 30_000 && item.tags.first == "c0" && item.tags.last == "c29999")
        let config = try ConfigLoader(environment: [:]).load(
            text: "sources:\n  - name: a\n    type: traffic\n    tags: [\(labels.joined(separator: ", "))]\n", file: "tags.yaml", directory: "/tmp")
        #expect(config.sources.first?.tags == Array(labels.prefix(30_000)))
    }

    /// An item that repeats an unreadable date thousands of times under a 1 MB title: one
    /// warning, its title and date cut, counting the rest (each used to carry the whole title:
    /// 2,000 of them took 2 GB); past twenty warnings a document's are counted, not kept.
    @Test func warningsAboutADocumentStaySmallWhateverItRepeats() throws {
        let dates = (0..<5_000).map { "<pubDate>never \($0)</pubDate>" }.joined()
        let xml = #"<rss version="2.0"><channel><title>t</title><item><guid>1</guid><title>"#
            + String(repeating: "T", count: 1_000_000) + "</title>" + dates + "</item>"
            + (2...100).map { "<item><guid>\($0)</guid><pubDate>not \($0)</pubDate></item>" }.joined() + "</channel></rss>"
        let feed = try parse(xml)
        #expect(feed.items.count == 100)
        #expect(feed.warnings.count == FeedWarnings.kept + 1, "\(feed.warnings.count) warnings")
        #expect(feed.warnings.first?.hasSuffix("…': unreadable date 'never 0' dropped (and 4999 more)") == true)
        #expect(feed.warnings.last == "\(100 - FeedWarnings.kept) more warnings like these left out")
        #expect(feed.warnings.reduce(0) { $0 + $1.utf8.count } < 5_000)
    }

    /// A 1 MB `xml:base` is no base: each of 2,000 relative links would have carried it (2 GB,
    /// and half a minute resolving them). An item's enclosures are resolved only up to one past
    /// their limit, which is enough for the limits to say the list was cut.
    @Test func anOversizeBaseResolvesNothingAndEnclosuresStopPastTheirLimit() throws {
        let base = "http://127.0.0.1/" + String(repeating: "a", count: 1_000_000) + "/"
        let entries = (0..<2_000).map { #"<entry><id>e\#($0)</id><title>t</title><link href="x\#($0)"/></entry>"# }.joined()
        let atom = try parse(#"<feed xmlns="http://www.w3.org/2005/Atom" xml:base="\#(base)"><title>t</title>"# + entries + "</feed>", baseURL: "https://feeds.example/atom")
        #expect(atom.items.count == 2_000)
        #expect(atom.items.last?.link == "https://feeds.example/x1999")
        #expect(atom.warnings == ["an xml:base longer than 8192 bytes ignored"], "\(atom.warnings)")
        let kept = try parse(#"<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://other.example/a/"><entry><id>1</id><link href="x"/></entry></feed>"#)
        #expect(kept.items.first?.link == "https://other.example/a/x")

        let enclosures = (0..<10_000).map { #"<enclosure url="e\#($0).mp3"/>"# }.joined()
        let rss = try parse(#"<rss version="2.0"><channel><item><guid>1</guid>"# + enclosures + "</item></channel></rss>", baseURL: "https://feeds.example/")
        #expect(rss.items.first?.enclosures.count == ItemLimits.standard.enclosures + 1)
        #expect(rss.items.first?.enclosures.last?.url == "https://feeds.example/e32.mp3")
        let (limited, note) = ItemLimits.standard.apply(to: rss.items)
        #expect(limited.first?.enclosures.count == ItemLimits.standard.enclosures)
        #expect(note?.contains("1 enclosure list cut to size") == true, "\(note ?? "no note")")
    }

    @Test func largeConfigsLoadAllTheirSources() throws {
        var text = "sources:\n"
        for index in 0..<20_000 { text += "  - name: s\(index)\n    type: traffic\n" }
        let config = try ConfigLoader(environment: [:]).load(text: text, file: "big.yaml", directory: "/tmp")
        #expect(config.sources.count == 20_000)
        #expect(config.sources.last?.name == "s19999")
    }
}

/// A small valid feed for tests that need one.
enum FixtureFeeds {
    static let small = #"<rss version="2.0"><channel><title>t</title><item><guid>1</guid><title>one</title></item></channel></rss>"#
}
