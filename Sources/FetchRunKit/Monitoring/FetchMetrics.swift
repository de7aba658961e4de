import CoreMetrics
import Foundation
import Synchronization

/// What the engine counts, recorded through swift-metrics' API into the factory it is given:
/// a program embedding the kit picks its own backend; `fetchrun` exposes them to Prometheus.
///
/// The names and labels are a contract (README, *Monitoring*) and stay as they are:
///
/// | metric | kind | labels |
/// |---|---|---|
/// | `fetchrun_fetches_total` | counter | `source`, `outcome` (newData, noData, failed) |
/// | `fetchrun_fetch_duration_seconds` | histogram | `type` (the adapter) |
/// | `fetchrun_new_items_total` | counter | `source` |
/// | `fetchrun_source_consecutive_failures` | gauge | `source` |
/// | `fetchrun_source_last_success_timestamp_seconds` | gauge | `source` |
/// | `fetchrun_http_responses_total` | counter | `code` |
/// | `fetchrun_outbox_pending` | gauge | `output` |
/// | `fetchrun_deliveries_total` | counter | `output`, `outcome` (delivered, failed, given_up) |
/// | `fetchrun_download_bytes_total` | counter | |
/// | `fetchrun_leases_total` | counter | |
/// | `fetchrun_sources` | gauge | |
/// | `fetchrun_build_info` | gauge | `version` |
///
/// A label per source is one series per source in every scrape: past
/// ``perSourceLabelLimit`` sources the counters fold into one series with `source="_all"`, and
/// the per-source gauges are left out (``foldsSources``).
public struct FetchMetrics: Sendable {
    /// Sources above which per-source labels fold into totals.
    public static let perSourceLabelLimit = 10_000
    /// The `source` label of folded counters.
    public static let foldedSource = "_all"

    private let factory: any MetricsFactory
    private let handles = Handles()
    /// Whether per-source labels are folded (more sources than ``perSourceLabelLimit``).
    public let foldsSources: Bool

    /// Records into `factory`, for `sourceCount` sources (which decides the folding).
    public init(factory: any MetricsFactory, sourceCount: Int) {
        self.factory = factory
        foldsSources = sourceCount > Self.perSourceLabelLimit
        Gauge(label: "fetchrun_sources", factory: factory).record(sourceCount)
    }

    /// Records nothing: the default of an engine nobody watches.
    public static let none = FetchMetrics(factory: NOOPMetricsHandler.instance, sourceCount: 0)

    /// The version of fetchrun running, as a gauge of 1.
    public func recordBuild(version: String) {
        Gauge(label: "fetchrun_build_info", dimensions: [("version", version)], factory: factory).record(1)
    }

    /// The number of sources after a reload.
    public func recordSources(_ count: Int) {
        Gauge(label: "fetchrun_sources", factory: factory).record(count)
    }

    /// One fetch that ended (not a cancelled one): its outcome, duration and new items, and
    /// — when its state was recorded — the source's failures in a row and last success.
    package func recordFetch(_ report: SourceReport, state: SourceState?) {
        let source = foldsSources ? Self.foldedSource : report.name
        handles.counter("fetchrun_fetches_total", [("source", source), ("outcome", report.outcome.name)], factory).increment()
        handles.timer("fetchrun_fetch_duration_seconds", [("type", report.type)], factory).recordNanoseconds(max(0, report.duration.nanoseconds))
        handles.counter("fetchrun_new_items_total", [("source", source)], factory).increment(by: report.newCount)
        guard !foldsSources, let state else { return }
        handles.gauge("fetchrun_source_consecutive_failures", [("source", source)], factory).record(state.consecutiveFailures)
        if let lastSuccess = state.lastSuccess {
            handles.gauge("fetchrun_source_last_success_timestamp_seconds", [("source", source)], factory).record(lastSuccess.timeIntervalSince1970)
        }
    }

    /// One HTTP response, of any request fetchrun made (feeds, downloads, webhooks).
    package func recordHTTPResponse(status: Int) {
        guard (100...999).contains(status) else { return }
        handles.counter("fetchrun_http_responses_total", [("code", String(status))], factory).increment()
    }

    /// Delivery attempts to `output` that came to `outcome` (delivered, failed, given_up).
    package func recordDeliveries(_ count: Int, output: String, outcome: String) {
        Counter(label: "fetchrun_deliveries_total", dimensions: [("output", output), ("outcome", outcome)], factory: factory).increment(by: count)
    }

    /// Deliveries waiting in the outbox for `output`.
    public func recordOutboxPending(output: String, count: Int) {
        Gauge(label: "fetchrun_outbox_pending", dimensions: [("output", output)], factory: factory).record(count)
    }

    /// Bytes of enclosures written to disk.
    package func recordDownloaded(bytes: Int64) {
        guard bytes > 0 else { return }
        Counter(label: "fetchrun_download_bytes_total", factory: factory).increment(by: bytes)
    }

    /// Sources a worker leased.
    package func recordLeases(_ count: Int) {
        guard count > 0 else { return }
        Counter(label: "fetchrun_leases_total", factory: factory).increment(by: count)
    }
}

/// The metrics' handles, made once per label set: a fetch records four or five series, and
/// asking the factory each time (a lookup under its lock, with label checks) cost more than
/// the recording itself at a few hundred fetches a second.
private final class Handles: Sendable {
    private let counters = Mutex<[String: Counter]>([:])
    private let gauges = Mutex<[String: Gauge]>([:])
    private let timers = Mutex<[String: CoreMetrics.Timer]>([:])

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        var key = label
        for (name, value) in dimensions {
            key += "\u{0}" + name + "\u{0}" + value
        }
        return key
    }

    func counter(_ label: String, _ dimensions: [(String, String)], _ factory: any MetricsFactory) -> Counter {
        let key = Self.key(label, dimensions)
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: label, dimensions: dimensions, factory: factory)
            counters[key] = counter
            return counter
        }
    }

    func gauge(_ label: String, _ dimensions: [(String, String)], _ factory: any MetricsFactory) -> Gauge {
        let key = Self.key(label, dimensions)
        return gauges.withLock { gauges in
            if let gauge = gauges[key] { return gauge }
            let gauge = Gauge(label: label, dimensions: dimensions, factory: factory)
            gauges[key] = gauge
            return gauge
        }
    }

    func timer(_ label: String, _ dimensions: [(String, String)], _ factory: any MetricsFactory) -> CoreMetrics.Timer {
        let key = Self.key(label, dimensions)
        return timers.withLock { timers in
            if let timer = timers[key] { return timer }
            let timer = CoreMetrics.Timer(label: label, dimensions: dimensions, factory: factory)
            timers[key] = timer
            return timer
        }
    }
}
