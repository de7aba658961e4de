import Foundation
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

    @Test func everyMetricGetsItsHelpLineOnce() {
        let text = String(decoding: MonitorMetrics.withHelp(Array("# TYPE fetchrun_sources gauge\nfetchrun_sources 3.0\n# TYPE unknown_metric counter\nunknown_metric 1\n".utf8)), as: UTF8.self)
        #expect(text == "# HELP fetchrun_sources Sources configured.\n# TYPE fetchrun_sources gauge\nfetchrun_sources 3.0\n# TYPE unknown_metric counter\nunknown_metric 1\n")
    }
}
