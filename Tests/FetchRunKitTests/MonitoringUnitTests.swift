import CoreMetrics
import Foundation
import NIOCore
import NIOEmbedded
import Synchronization
import Testing
@testable import FetchRunKit
@testable import FetchRunMonitor

@Suite struct MonitoringUnitTests {
    @Test func listenAddressesAndNetworksAreReadStrictly() throws {
        #expect(try ListenSettings.address("127.0.0.1:9464") == ("127.0.0.1", 9464))
        #expect(try ListenSettings.address(":9464") == ("127.0.0.1", 9464))
        #expect(try ListenSettings.address("[::1]:9464") == ("::1", 9464))
        for bad in ["9464", "127.0.0.1:0", "127.0.0.1:70000", "::1:9464", "[::1]9464", "host:port"] {
            #expect(throws: ConfigValueError.self, "\(bad)") { try ListenSettings.address(bad) }
        }
        #expect(ListenSettings(host: "127.0.0.1", port: 1).problem == nil)
        #expect(ListenSettings(host: "::1", port: 1).problem == nil)
        #expect(ListenSettings(host: "0.0.0.0", port: 1).problem != nil)
        #expect(ListenSettings(host: "0.0.0.0", port: 1, token: "t").problem == nil)

        let network = try IPNetwork("10.1.0.0/16")
        #expect(network.contains(IPNetwork.bytes(of: "10.1.200.3")!))
        #expect(!network.contains(IPNetwork.bytes(of: "10.2.0.1")!))
        // An IPv4 peer on an IPv6 socket.
        #expect(network.contains(IPNetwork.bytes(of: "::ffff:10.1.0.9")!))
        #expect(try IPNetwork("fd00::/8").contains(IPNetwork.bytes(of: "fd12::1")!))
        #expect(try IPNetwork("192.168.1.7").contains(IPNetwork.bytes(of: "192.168.1.7")!))
        for bad in ["10.0.0.0/33", "fd00::/129", "example.org/8", "10.0.0.0/x"] {
            #expect(throws: ConfigValueError.self, "\(bad)") { try IPNetwork(bad) }
        }
    }

    @Test func onlyTheTokenAndTheNetworksGetIn() throws {
        let guarded = ListenSettings(host: "0.0.0.0", port: 1, token: "abc", allow: [try IPNetwork("10.0.0.0/8")])
        #expect(guarded.admits(peer: "10.0.0.5", authorization: "Bearer abc"))
        #expect(guarded.admits(peer: "127.0.0.1", authorization: "Bearer abc"))
        #expect(!guarded.admits(peer: "10.0.0.5", authorization: "Bearer abd"))
        #expect(!guarded.admits(peer: "10.0.0.5", authorization: "Bearer abcd"))
        #expect(!guarded.admits(peer: "10.0.0.5", authorization: nil))
        #expect(!guarded.admits(peer: "192.168.0.1", authorization: "Bearer abc"))
        #expect(!guarded.admits(peer: nil, authorization: "Bearer abc"))
        let networksOnly = ListenSettings(host: "0.0.0.0", port: 1, allow: [try IPNetwork("10.0.0.0/8")])
        #expect(networksOnly.admits(peer: "10.9.9.9", authorization: nil))
        #expect(!networksOnly.admits(peer: "11.0.0.1", authorization: nil))
    }

    @Test func theFeedTokenOpensTheFeedsAndNothingElse() throws {
        var guarded = ListenSettings(host: "0.0.0.0", port: 1, token: "abc", allow: [try IPNetwork("10.0.0.0/8")])
        guarded.feedToken = "feed"
        #expect(guarded.admitsFeed(peer: "10.0.0.5", authorization: nil, feedToken: "feed"))
        #expect(guarded.admitsFeed(peer: "10.0.0.5", authorization: "Bearer abc", feedToken: nil))
        #expect(!guarded.admitsFeed(peer: "10.0.0.5", authorization: nil, feedToken: "fee"))
        #expect(!guarded.admitsFeed(peer: "10.0.0.5", authorization: nil, feedToken: "feed2"))
        // allow: still applies; the feed token is no header token.
        #expect(!guarded.admitsFeed(peer: "192.168.0.1", authorization: nil, feedToken: "feed"))
        #expect(!guarded.admits(peer: "10.0.0.5", authorization: "Bearer feed"))
        // On loopback without `token:`, the feeds still ask for theirs; the rest is open.
        var loopback = ListenSettings(host: "127.0.0.1", port: 1)
        loopback.feedToken = "feed"
        #expect(!loopback.admitsFeed(peer: "127.0.0.1", authorization: nil, feedToken: nil))
        #expect(loopback.admitsFeed(peer: "127.0.0.1", authorization: nil, feedToken: "feed"))
        #expect(loopback.admits(peer: "127.0.0.1", authorization: nil))
        let config = try ConfigLoader(environment: ["FEED": "s3cret"]).load(
            text: "listen: { address: 127.0.0.1:9464, feed_token: \"${FEED}\" }\nsources:\n  - { name: a, type: traffic }\n", file: "s.yaml", directory: "/"
        )
        #expect(config.listen?.feedToken == "s3cret")
        #expect(throws: ConfigError.self) {
            try ConfigLoader(environment: [:]).load(text: "listen: { address: 127.0.0.1:9464, feed_token: \"a b\" }\nsources:\n  - { name: a, type: traffic }\n", file: "s.yaml", directory: "/")
        }
    }

    @Test func perSourceLabelsFoldPastTheirLimit() {
        let metrics = MonitorMetrics()
        let folded = FetchMetrics(factory: metrics.factory, sourceCount: FetchMetrics.perSourceLabelLimit + 1)
        var state = SourceState(name: "a")
        state.consecutiveFailures = 2
        let report = SourceReport(name: "a", type: "rss", outcome: .noData, totalItems: 0, duration: .milliseconds(30))
        folded.recordFetch(report, state: state)
        folded.recordFetch(SourceReport(name: "b", type: "rss", outcome: .noData, totalItems: 0, duration: .milliseconds(30)), state: state)
        let text = metrics.exposition()
        #expect(text.contains(#"fetchrun_fetches_total{source="_all",outcome="noData"} 2"#), "\(text)")
        #expect(!text.contains(#"source="a""#) && !text.contains("fetchrun_source_consecutive_failures{"))
        #expect(text.contains("fetchrun_sources 10001"))
    }

    @Test func aFoldersEntriesAreCountedWithoutTheDots() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-entries-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder + "/..a", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for name in [".", ".b", "c"].map({ "\(folder)/\($0)x" }) { #expect(FileManager.default.createFile(atPath: name, contents: nil)) }
        #expect(ProcessMetrics.entries(in: folder) == 4)
        #expect(ProcessMetrics.entries(in: folder + "/missing") == nil)
        #expect((ProcessMetrics.openDescriptors() ?? 0) >= 3)
    }

    @Test func everyMetricGetsItsHelpLineOnce() {
        let text = String(decoding: MonitorMetrics.withHelp(Array("# TYPE fetchrun_sources gauge\nfetchrun_sources 3.0\n# TYPE unknown_metric counter\nunknown_metric 1\n".utf8)), as: UTF8.self)
        #expect(text == "# HELP fetchrun_sources Sources configured.\n# TYPE fetchrun_sources gauge\nfetchrun_sources 3.0\n# TYPE unknown_metric counter\nunknown_metric 1\n")
    }

    @Test func perSourceSeriesRenderWhatChangedAndKeepTheirOrder() throws {
        let metrics = MonitorMetrics()
        let recorder = FetchMetrics(factory: metrics.factory, sourceCount: 3)
        var failing = SourceState(name: "b \"quoted\"\nname")
        failing.consecutiveFailures = 4
        var fine = SourceState(name: "a")
        fine.lastSuccess = Date(timeIntervalSince1970: 1_700_000_000.5)
        let found = { (count: Int) in
            var report = SourceReport(name: "a", type: "rss", outcome: .newData([]), totalItems: count, duration: .milliseconds(5))
            report.newCount = count
            return report
        }
        recorder.recordFetch(found(3), state: fine)
        recorder.recordFetch(SourceReport(name: failing.name, type: "rss", outcome: .failed(FetchFailure(.network, "refused")), totalItems: 0, duration: .milliseconds(5)), state: failing)
        let first = metrics.exposition()
        #expect(first.contains(#"fetchrun_fetches_total{source="a",outcome="newData"} 1"# + "\n"), "\(first)")
        #expect(first.contains(#"fetchrun_new_items_total{source="a"} 3"# + "\n"))
        #expect(first.contains(#"fetchrun_source_last_success_timestamp_seconds{source="a"} 1700000000.5"# + "\n"))
        // A name with quotes, a line feed and spaces stays one escaped label value.
        #expect(first.contains(#"fetchrun_source_consecutive_failures{source="b \"quoted\"\nname"} 4"# + "\n"), "\(first)")
        #expect(first.components(separatedBy: "# TYPE fetchrun_fetches_total counter\n").count == 2)
        #expect(first.contains("# HELP fetchrun_new_items_total New items found, by source.\n# TYPE fetchrun_new_items_total counter\n"))

        // A second fetch of "a" changes its lines and nothing else; the order stays.
        recorder.recordFetch(found(2), state: fine)
        let second = metrics.exposition()
        #expect(second.contains(#"fetchrun_fetches_total{source="a",outcome="newData"} 2"# + "\n"))
        #expect(second.contains(#"fetchrun_new_items_total{source="a"} 5"# + "\n"))
        let seriesLines = { (text: String) in text.split(separator: "\n").filter { $0.contains("source=") }.map { $0.split(separator: " ").dropLast().joined(separator: " ") } }
        #expect(seriesLines(first) == seriesLines(second))
    }

    @Test func aSourceSeriesSaturatesAndSpellsSpecialValuesAsPrometheusReadsThem() {
        let series = SourceSeries()
        let counter = series.series("c_total", [("source", "x")], kind: .counter)
        counter.increment(by: Int64.max - 1)
        counter.increment(by: Int64(5))
        counter.increment(by: Int64(-3))
        let gauge = series.series("g", [("source", "x")], kind: .gauge)
        gauge.record(Double.infinity)
        let nan = series.series("g", [("source", "y")], kind: .gauge)
        nan.record(Double.nan)
        let text = { () -> String in
            var buffer: [UInt8] = []
            series.emit(help: [:]) { buffer.append(contentsOf: $0) }
            return String(decoding: buffer, as: UTF8.self)
        }
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} \(Int64.max)\n# TYPE g gauge\ng{source=\"x\"} +Inf\ng{source=\"y\"} NaN\n")
        // A handle asked for again records into the same line; destroying one forgets it.
        series.series("g", [("source", "x")], kind: .gauge).record(Double(-2.5))
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} \(Int64.max)\n# TYPE g gauge\ng{source=\"x\"} -2.5\ng{source=\"y\"} NaN\n")
        series.remove(gauge)
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} \(Int64.max)\n# TYPE g gauge\ng{source=\"y\"} NaN\n")
        series.remove(nan)
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} \(Int64.max)\n")
        // Recording into a forgotten series changes nothing; asking again makes a new one.
        gauge.record(Int64(3))
        series.series("g", [("source", "x")], kind: .gauge).record(Int64(7))
        counter.increment(by: Int64(1))
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} \(Int64.max)\n# TYPE g gauge\ng{source=\"x\"} 7\n")
    }

    @Test func aCounterIsListedFromItsMakingAndAGaugeFromItsFirstValue() {
        let series = SourceSeries()
        let text = { () -> String in
            var buffer: [UInt8] = []
            series.emit(help: [:]) { buffer.append(contentsOf: $0) }
            return String(decoding: buffer, as: UTF8.self)
        }
        _ = series.series("c_total", [("source", "x")], kind: .counter)
        let unset = series.series("g", [("source", "x")], kind: .gauge)
        let later = series.series("g", [("source", "y")], kind: .gauge)
        let dropped = series.series("g", [("source", "z")], kind: .gauge)
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} 0\n")
        // Set in the other order than made: listed in the order made, each from its value on.
        later.record(Int64(2))
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} 0\n# TYPE g gauge\ng{source=\"y\"} 2\n")
        unset.record(Int64(0))
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} 0\n# TYPE g gauge\ng{source=\"x\"} 0\ng{source=\"y\"} 2\n")
        // Destroyed before it was ever listed, or set and destroyed between two scrapes: no line.
        series.remove(dropped)
        let brief = series.series("g", [("source", "w")], kind: .gauge)
        brief.record(Int64(9))
        series.remove(brief)
        dropped.record(Int64(4))
        #expect(text() == "# TYPE c_total counter\nc_total{source=\"x\"} 0\n# TYPE g gauge\ng{source=\"x\"} 0\ng{source=\"y\"} 2\n")
    }

    @Test func valuesOfTheSameWidthAreWrittenInPlaceAndAScrapeInFlightKeepsItsText() {
        let series = SourceSeries()
        let counters = (0..<3).map { series.series("c_total", [("source", "s\($0)")], kind: .counter) }
        let text = { (buffers: [ByteBuffer]) in buffers.map { String(buffer: $0) }.joined() }
        counters[1].increment(by: Int64(3))
        let first = series.buffers(help: [:])
        #expect(text(first) == "# TYPE c_total counter\nc_total{source=\"s0\"} 0\nc_total{source=\"s1\"} 3\nc_total{source=\"s2\"} 0\n")
        // Same width (3 → 4, 0 → 9): written over the old digits. The buffers handed out before
        // still say what they said.
        counters[1].increment(by: Int64(1))
        counters[2].increment(by: Int64(9))
        let second = series.buffers(help: [:])
        #expect(text(second) == "# TYPE c_total counter\nc_total{source=\"s0\"} 0\nc_total{source=\"s1\"} 4\nc_total{source=\"s2\"} 9\n")
        #expect(text(first) == "# TYPE c_total counter\nc_total{source=\"s0\"} 0\nc_total{source=\"s1\"} 3\nc_total{source=\"s2\"} 0\n")
        // A wider value (9 → 10) moves the lines after it; then same width again.
        counters[2].increment(by: Int64(1))
        counters[0].increment(by: Int64(1))
        #expect(text(series.buffers(help: [:])) == "# TYPE c_total counter\nc_total{source=\"s0\"} 1\nc_total{source=\"s1\"} 4\nc_total{source=\"s2\"} 10\n")
        counters[2].increment(by: Int64(5))
        #expect(text(series.buffers(help: [:])) == "# TYPE c_total counter\nc_total{source=\"s0\"} 1\nc_total{source=\"s1\"} 4\nc_total{source=\"s2\"} 15\n")
        #expect(text(second) == "# TYPE c_total counter\nc_total{source=\"s0\"} 0\nc_total{source=\"s1\"} 4\nc_total{source=\"s2\"} 9\n")
    }

    @Test func preparedSourcesAreListedBeforeTheirFirstFetch() {
        let metrics = MonitorMetrics()
        let recorder = FetchMetrics(factory: metrics.factory, sourceCount: 3)
        var failing = SourceState(name: "failing")
        failing.consecutiveFailures = 3
        failing.lastSuccess = Date(timeIntervalSince1970: 1_700_000_000)
        recorder.prepare(sources: ["failing", "new"], states: ["failing": failing])
        let before = metrics.exposition()
        for source in ["failing", "new"] {
            for outcome in ["newData", "noData", "failed"] {
                #expect(before.contains("fetchrun_fetches_total{source=\"\(source)\",outcome=\"\(outcome)\"} 0\n"), "\(before)")
            }
            #expect(before.contains("fetchrun_new_items_total{source=\"\(source)\"} 0\n"))
        }
        // The gauges say what the store holds, and nothing for a source it knows nothing of.
        #expect(before.contains("fetchrun_source_consecutive_failures{source=\"failing\"} 3\n"))
        #expect(before.contains("fetchrun_source_last_success_timestamp_seconds{source=\"failing\"} 1700000000.0\n"))
        #expect(!before.contains("fetchrun_source_consecutive_failures{source=\"new\"}"))
        #expect(!before.contains("fetchrun_source_last_success_timestamp_seconds{source=\"new\"}"))

        // A fetch records into the prepared series (the same names), not beside them.
        failing.consecutiveFailures = 4
        recorder.recordFetch(SourceReport(name: "failing", type: "rss", outcome: .failed(FetchFailure(.network, "refused")), totalItems: 0, duration: .milliseconds(5)), state: failing)
        recorder.recordFetch(SourceReport(name: "new", type: "rss", outcome: .noData, totalItems: 0, duration: .milliseconds(5)), state: SourceState(name: "new"))
        let after = metrics.exposition()
        #expect(after.contains("fetchrun_fetches_total{source=\"failing\",outcome=\"failed\"} 1\n"), "\(after)")
        #expect(after.contains("fetchrun_fetches_total{source=\"new\",outcome=\"noData\"} 1\n"))
        #expect(after.components(separatedBy: "fetchrun_fetches_total{").count - 1 == 6)
        #expect(after.contains("fetchrun_source_consecutive_failures{source=\"failing\"} 4\n"))
        #expect(after.contains("fetchrun_source_consecutive_failures{source=\"new\"} 0\n"))
        #expect(!after.contains("fetchrun_source_last_success_timestamp_seconds{source=\"new\"}"))

        // Folded, only the totals are made.
        let foldedMetrics = MonitorMetrics()
        FetchMetrics(factory: foldedMetrics.factory, sourceCount: FetchMetrics.perSourceLabelLimit + 1).prepare(sources: ["a", "b"], states: ["a": failing])
        let folded = foldedMetrics.exposition()
        #expect(folded.contains("fetchrun_fetches_total{source=\"_all\",outcome=\"failed\"} 0\n"), "\(folded)")
        #expect(!folded.contains("source=\"a\"") && !folded.contains("fetchrun_source_consecutive_failures"))
    }

    @Test func destroyingASourceMetricTakesItsLineAway() {
        let metrics = MonitorMetrics()
        let counter = Counter(label: "fetchrun_new_items_total", dimensions: [("source", "gone")], factory: metrics.factory)
        counter.increment(by: 2)
        #expect(metrics.exposition().contains(#"fetchrun_new_items_total{source="gone"} 2"#))
        counter.destroy()
        #expect(!metrics.exposition().contains(#"source="gone""#))
        // One without a source label goes back to the registry.
        let other = Counter(label: "fetchrun_leases_total", factory: metrics.factory)
        other.increment(by: 3)
        #expect(metrics.exposition().contains("fetchrun_leases_total 3"))
        other.destroy()
        #expect(!metrics.exposition().contains("fetchrun_leases_total 3"))
    }

    @Test func aSeriesStoreGoesOnceNothingUsesIt() {
        weak var released: SourceSeries?
        do {
            let store = SourceSeries()
            released = store
            store.series("c_total", [("source", "x")], kind: .counter).increment(by: Int64(1))
        }
        #expect(released == nil)
    }

    @Test func sourceSeriesTextMatchesEveryValueAfterRandomRounds() {
        let series = SourceSeries()
        // Seeded, so that a failing round can be replayed.
        var generator = SplitMix64(state: 0x5EED)
        var handles: [(name: String, family: String, handle: SourceSeries.Series)] = []
        var model: [String: Int64] = [:]
        var removed: Set<String> = []
        // Gauges ("b") are listed from their first value; counters from when they are made.
        var listed: Set<String> = []
        for round in 0..<40 {
            // New series now and then, in two families, with names of varying length.
            for _ in 0..<(round < 5 ? 30 : 2) {
                let family = generator.next() % 2 == 0 ? "a_total" : "b"
                let name = "\(family){source=\"s\(handles.count)\(String(repeating: "x", count: Int(generator.next() % 9)))\"}"
                let source = String(name.split(separator: "\"")[1])
                handles.append((name, family, series.series(family, [("source", source)], kind: family == "b" ? .gauge : .counter)))
                if family != "b" {
                    model[name] = 0
                    listed.insert(name)
                }
            }
            for _ in 0..<Int(generator.next() % 25) {
                let pick = Int(generator.next() % UInt64(handles.count))
                let (name, family, handle) = handles[pick]
                guard !removed.contains(name) else { continue }
                if generator.next() % 40 == 0 {
                    series.remove(handle)
                    removed.insert(name)
                    model[name] = nil
                } else if family == "b" {
                    let value = Int64(generator.next() % 2_000_000) - 1_000_000
                    handle.record(value)
                    model[name] = value
                    listed.insert(name)
                } else {
                    let step = Int64(generator.next() % 100_000)
                    handle.increment(by: step)
                    model[name]! += max(0, step)
                }
            }
            var buffer: [UInt8] = []
            series.emit(help: [:]) { buffer.append(contentsOf: $0) }
            var seen: [String: Int64] = [:]
            var order: [String] = []
            for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
                let space = line.lastIndex(of: " ")!
                seen[String(line[..<space])] = Int64(line[line.index(after: space)...])
                order.append(String(line[..<space]))
            }
            #expect(seen == model, "round \(round)")
            let expectedOrder = handles.map(\.name).filter { listed.contains($0) && !removed.contains($0) }
            #expect(order == expectedOrder.filter { $0.hasPrefix("a_total") } + expectedOrder.filter { $0.hasPrefix("b") }, "round \(round)")
        }
    }

    /// `/status` goes out a thousand sources a buffer, whole lines in each, and the bytes are
    /// what `fetchrun status --format json` prints (the whole range at once): a line per source
    /// in the config's order, a source with no recorded state among them, hostile text escaped.
    @Test func statusGoesOutInBuffersOfWholeLinesAsTheCommandPrintsIt() throws {
        let settings = SourceSettings(interval: .every(.seconds(60)), maxBackoff: .seconds(3600))
        let sources = (1...2_345).map { SourceConfig(name: "s-\($0)", adapter: ScriptedAdapter { _ in FetchOutput(items: []) }, settings: settings) }
        var states: [String: SourceState] = [:]
        for index in stride(from: 1, through: 2_345, by: 2) {
            states["s-\(index)"] = SourceState(name: "s-\(index)", json: """
                {"last_fetch": \(1_700_000_000_000 + index), "last_outcome": "failed", "failures": \(index), "failing_since": 1700000000000,
                 "error_kind": "network", "error_message": "evil \\u001b[31m \\"quoted\\"\\n message", "error_at": 1700000000000, "items": \(index)}
                """, nextDue: Date(timeIntervalSince1970: 1_700_000_060))
        }
        let document = StatusDocument(sources: sources, states: states)
        let buffers = MonitorEndpoint.buffers(of: document)
        #expect(buffers.count == 3)
        for buffer in buffers { #expect(buffer.getInteger(at: buffer.writerIndex - 1, as: UInt8.self) == 0x0A) }
        let sent = buffers.reduce(into: [UInt8]()) { bytes, buffer in bytes += buffer.readableBytesView }
        #expect(sent == document.jsonLines(sources.indices))
        let lines = String(decoding: sent, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2_345 && lines.allSatisfy { $0.utf8.allSatisfy { $0 >= 0x20 } })
        let failing = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(failing["source"] as? String == "s-1" && failing["health"] as? String == "failing")
        #expect((failing["last_error"] as? [String: Any])?["message"] as? String == "evil \u{1B}[31m \"quoted\"\n message")
        let unrecorded = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(unrecorded["source"] as? String == "s-2" && unrecorded["health"] as? String == "never_fetched")
        #expect(MonitorEndpoint.buffers(of: StatusDocument(sources: [], states: states)).isEmpty)
    }

    /// A client that asks and stops reading loses its connection once a write has waited
    /// the limit; writes it takes, however long ago, never count against it.
    @Test func aConnectionWhoseClientStopsReadingIsClosedAfterTheLimit() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(handler: StalledWriteGuard(limit: .seconds(30)), loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9464)).wait()
        // Each write's outcome as it comes; the embedded loop runs callbacks at once.
        let taken = Mutex<Result<Void, any Error>?>(nil), notTaken = Mutex<Result<Void, any Error>?>(nil)
        // Taken: a flushed write finishes, and an hour later the connection is still there.
        channel.writeAndFlush(ByteBuffer(string: "taken")).whenComplete { result in taken.withLock { $0 = result } }
        loop.advanceTime(by: .hours(1))
        #expect(taken.withLock { (try? $0?.get()) != nil })
        // (Flags are read first: describing a channel whose pipeline was closed traps in NIO.)
        var open = channel.isActive
        #expect(open)
        // Not taken: a write that never finishes (never flushed, as if the socket stayed full).
        channel.write(ByteBuffer(string: "not taken")).whenComplete { result in notTaken.withLock { $0 = result } }
        loop.advanceTime(by: .seconds(29))
        open = channel.isActive
        #expect(open)
        loop.advanceTime(by: .seconds(1))
        open = channel.isActive
        #expect(!open)
        #expect(notTaken.withLock { (try? $0?.get()) == nil })
    }

    @Test func labelValuesCarryEveryScriptAsUTF8() {
        for line in TextEncodingTests.corpus {
            let prefix = SourceSeries.prefix("fetchrun_deliveries_total", [("output", line + "\"\n\\")])
            let text = String(decoding: prefix, as: UTF8.self)
            #expect(text == "fetchrun_deliveries_total{output=\"\(line)\\\"\\n\\\\\"} ", "\(text)")
        }
    }
}
