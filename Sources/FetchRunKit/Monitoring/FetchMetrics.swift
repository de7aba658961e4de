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
package struct FetchMetrics: Sendable {
    /// Sources above which per-source labels fold into totals.
    package static let perSourceLabelLimit = 10_000
    /// The `source` label of folded counters.
    package static let foldedSource = "_all"

    private let factory: any MetricsFactory
    private let handles = Handles()
    /// `false` for swift-metrics' no-op factory: a run nobody watches then skips the handle
    /// lookup and the recording on every fetch.
    private let records: Bool
    /// Whether per-source labels are folded (more sources than ``perSourceLabelLimit``).
    package let foldsSources: Bool

    /// Records into `factory`, for `sourceCount` sources (which decides the folding).
    package init(factory: any MetricsFactory, sourceCount: Int) {
        self.factory = factory
        records = !(factory is NOOPMetricsHandler)
        foldsSources = sourceCount > Self.perSourceLabelLimit
        Gauge(label: "fetchrun_sources", factory: factory).record(sourceCount)
    }

    /// Records nothing: the default of an engine nobody watches.
    package static let none = FetchMetrics(factory: NOOPMetricsHandler.instance, sourceCount: 0)

    /// Makes the per-source series of `sources` before their first fetch: the fetch counters of
    /// every outcome and the new-items counter at 0, and the gauges from what `states` holds (a
    /// gauge with nothing to say yet is listed from its first value on). A ``Watcher`` calls it
    /// as it is made and for the sources a reload adds; a source never prepared gets its series
    /// at its first fetch.
    ///
    /// A counter that exists before its first step is one Prometheus's `increase()` and `rate()`
    /// see that step of. And the handles are made here in one pass, on one thread: made as the
    /// first fetches ended, among their short-lived allocations, they left the allocator's heaps
    /// fragmented, and every later fetch paid for it (a busy watch's malloc and free took a
    /// third longer; Benchmarks/RESULTS.md).
    package func prepare(sources: [String], states: [String: SourceState]) {
        guard records else { return }
        guard !foldsSources else {
            handles.prepare(Self.foldedSource, gauges: false, factory)
            return
        }
        for name in sources {
            let series = handles.prepare(name, gauges: true, factory)
            guard let state = states[name] else { continue }
            series.consecutiveFailures?.record(state.consecutiveFailures)
            if let lastSuccess = state.lastSuccess {
                series.lastSuccess?.record(lastSuccess.timeIntervalSince1970)
            }
        }
    }

    /// The version of fetchrun running, as a gauge of 1.
    package func recordBuild(version: String) {
        Gauge(label: "fetchrun_build_info", dimensions: [("version", version)], factory: factory).record(1)
    }

    /// The number of sources after a reload.
    package func recordSources(_ count: Int) {
        Gauge(label: "fetchrun_sources", factory: factory).record(count)
    }

    /// One fetch that ended (not a cancelled one): its outcome, duration and new items, and
    /// — when its state was recorded — the source's failures in a row and last success.
    package func recordFetch(_ report: SourceReport, state: SourceState?) {
        guard records else { return }
        let source = foldsSources ? Self.foldedSource : report.name
        let perSourceGauges = !foldsSources && state != nil
        let series = handles.source(source, outcome: report.outcome, gauges: perSourceGauges, lastSuccess: state?.lastSuccess != nil, factory)
        series.fetches.increment()
        handles.duration(type: report.type, factory).recordNanoseconds(max(0, report.duration.nanoseconds))
        series.newItems.increment(by: report.newCount)
        guard perSourceGauges, let state else { return }
        series.consecutiveFailures?.record(state.consecutiveFailures)
        if let lastSuccess = state.lastSuccess {
            series.lastSuccess?.record(lastSuccess.timeIntervalSince1970)
        }
    }

    /// One HTTP response, of any request fetchrun made (feeds, downloads, webhooks).
    package func recordHTTPResponse(status: Int) {
        guard records, (100...999).contains(status) else { return }
        handles.httpResponses(status: status, factory).increment()
    }

    /// Delivery attempts to `output` that came to `outcome` (delivered, failed, given_up).
    package func recordDeliveries(_ count: Int, output: String, outcome: String) {
        Counter(label: "fetchrun_deliveries_total", dimensions: [("output", output), ("outcome", outcome)], factory: factory).increment(by: count)
    }

    /// Deliveries waiting in the outbox for `output`.
    package func recordOutboxPending(output: String, count: Int) {
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

/// The metrics' handles, made once per label set and found by one lookup a fetch: a fetch
/// records five series, and asking the factory each time (a lookup under its lock, with
/// label checks), or building a key per series, cost more than the recording itself at a few
/// hundred fetches a second.
private final class Handles: Sendable {
    /// One source's series; the outcome counters and the gauges made as first needed, so that
    /// a source that never failed has no `failed` series.
    struct PerSource {
        var fetches: [Counter?] = [nil, nil, nil]
        var newItems: Counter
        var consecutiveFailures: Gauge?
        var lastSuccess: Gauge?

        /// The series a fetch of `source` with `outcome` records into, made where missing.
        mutating func prepare(_ source: String, outcome: String, at index: Int, gauges: Bool, lastSuccess needsLastSuccess: Bool, _ factory: any MetricsFactory) -> FetchSeries {
            let counter = fetches[index] ?? Counter(label: "fetchrun_fetches_total", dimensions: [("source", source), ("outcome", outcome)], factory: factory)
            fetches[index] = counter
            if gauges, consecutiveFailures == nil {
                consecutiveFailures = Gauge(label: "fetchrun_source_consecutive_failures", dimensions: [("source", source)], factory: factory)
            }
            if gauges, needsLastSuccess, lastSuccess == nil {
                lastSuccess = Gauge(label: "fetchrun_source_last_success_timestamp_seconds", dimensions: [("source", source)], factory: factory)
            }
            return FetchSeries(fetches: counter, newItems: newItems, consecutiveFailures: consecutiveFailures, lastSuccess: lastSuccess)
        }
    }

    /// What one fetch records into.
    struct FetchSeries {
        var fetches: Counter
        var newItems: Counter
        var consecutiveFailures: Gauge?
        var lastSuccess: Gauge?
    }

    private let sources = Mutex<[String: PerSource]>([:])
    private let durations = Mutex<[String: CoreMetrics.Timer]>([:])
    private let responses = Mutex<[Int: Counter]>([:])

    func source(_ source: String, outcome: SourceOutcome, gauges: Bool, lastSuccess: Bool, _ factory: any MetricsFactory) -> FetchSeries {
        sources.withLock { sources in
            Self.addEntry(for: source, in: &sources, factory)
            // In place: a copy out and back would copy the outcome array at every fetch.
            return sources[source]!.prepare(source, outcome: outcome.name, at: outcome.ordinal, gauges: gauges, lastSuccess: lastSuccess, factory)
        }
    }

    /// Makes all of `source`'s series: each outcome's counter and, with `gauges`, both gauges.
    @discardableResult
    func prepare(_ source: String, gauges: Bool, _ factory: any MetricsFactory) -> FetchSeries {
        sources.withLock { sources in
            Self.addEntry(for: source, in: &sources, factory)
            var series: FetchSeries?
            for (index, outcome) in SourceOutcome.names.enumerated() {
                series = sources[source]!.prepare(source, outcome: outcome, at: index, gauges: gauges, lastSuccess: gauges, factory)
            }
            return series!
        }
    }

    private static func addEntry(for source: String, in sources: inout [String: PerSource], _ factory: any MetricsFactory) {
        guard sources[source] == nil else { return }
        sources[source] = PerSource(newItems: Counter(label: "fetchrun_new_items_total", dimensions: [("source", source)], factory: factory))
    }

    func duration(type: String, _ factory: any MetricsFactory) -> CoreMetrics.Timer {
        durations.withLock { durations in
            if let timer = durations[type] { return timer }
            let timer = CoreMetrics.Timer(label: "fetchrun_fetch_duration_seconds", dimensions: [("type", type)], factory: factory)
            durations[type] = timer
            return timer
        }
    }

    func httpResponses(status: Int, _ factory: any MetricsFactory) -> Counter {
        responses.withLock { responses in
            if let counter = responses[status] { return counter }
            let counter = Counter(label: "fetchrun_http_responses_total", dimensions: [("code", String(status))], factory: factory)
            responses[status] = counter
            return counter
        }
    }
}

extension CurlHTTPClient {
    /// A client whose responses are counted in `metrics` (`fetchrun_http_responses_total`).
    package convenience init(configuration: Configuration = Configuration(), metrics: FetchMetrics) {
        self.init(configuration: configuration, countResponse: { status in metrics.recordHTTPResponse(status: status) })
    }
}
