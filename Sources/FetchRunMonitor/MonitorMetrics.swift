import CoreMetrics
import FetchRunKit
import Foundation
import NIOCore
import Prometheus

/// fetchrun's metrics as Prometheus reads them: a registry the engine records into (through
/// swift-metrics, ``factory``), the process's own `process_*` figures, and the text
/// exposition format (version 0.0.4) with a `# HELP` line for every metric.
///
/// The per-source series live in ``SourceSeries`` rather than the registry, so that a scrape
/// renders only what changed since the last one.
package final class MonitorMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let sourceSeries = SourceSeries()
    /// What ``FetchMetrics`` records into.
    package let factory: any MetricsFactory
    private let process: ProcessMetrics

    package init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Fetches take from milliseconds (a 304 nearby) to a deadline (30 s by default).
        factory.durationHistogramBuckets["fetchrun_fetch_duration_seconds"] = [
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
        ]
        self.registry = registry
        self.factory = MonitorMetricsFactory(registry: factory, sourceSeries: sourceSeries)
        process = ProcessMetrics(factory: factory)
    }

    /// Every metric now, `process_*` read at this moment, in the text exposition format.
    package func exposition() -> String {
        String(decoding: expositionBytes(), as: UTF8.self)
    }

    /// ``exposition()`` as UTF-8 bytes, as a file takes them.
    package func expositionBytes() -> [UInt8] {
        let buffers = expositionBuffers()
        var result: [UInt8] = []
        result.reserveCapacity(buffers.reduce(0) { $0 + $1.readableBytes })
        for buffer in buffers { buffer.withUnsafeReadableBytes { result.append(contentsOf: $0) } }
        return result
    }

    /// ``exposition()`` in pieces to send in order, as a response takes them. At 10,000 sources
    /// it is some 60,000 lines and 3.6 MB, nearly all of them the per-source series' text,
    /// which goes out as ``SourceSeries`` keeps it: copying it into one buffer for each scrape
    /// was a seventh of the scrape's CPU.
    package func expositionBuffers() -> [ByteBuffer] {
        process.update()
        var registryPart: [UInt8] = []
        registry.emit(into: &registryPart)
        var buffers = [ByteBuffer(bytes: Self.withHelp(registryPart))]
        buffers += sourceSeries.buffers(help: Self.help)
        return buffers
    }

    /// What each metric means, as the README's *Monitoring* table says.
    static let help: [String: String] = [
        "fetchrun_fetches_total": "Fetches that ended, by source and outcome (newData, noData, failed).",
        "fetchrun_fetch_duration_seconds": "How long fetches took, by adapter type.",
        "fetchrun_new_items_total": "New items found, by source.",
        "fetchrun_source_consecutive_failures": "Failed fetches in a row, by source.",
        "fetchrun_source_last_success_timestamp_seconds": "When a source last fetched successfully (Unix time).",
        "fetchrun_http_responses_total": "HTTP responses received, by status code.",
        "fetchrun_outbox_pending": "Deliveries waiting in the outbox, by output.",
        "fetchrun_deliveries_total": "Delivery attempts, by output and outcome (delivered, failed, given_up).",
        "fetchrun_download_bytes_total": "Bytes of enclosures downloaded.",
        "fetchrun_leases_total": "Sources a worker leased.",
        "fetchrun_sources": "Sources configured.",
        "fetchrun_build_info": "The fetchrun version running (value 1).",
        "process_cpu_seconds_total": "User and system CPU time spent, in seconds.",
        "process_resident_memory_bytes": "Resident memory size, in bytes.",
        "process_virtual_memory_bytes": "Virtual memory size, in bytes.",
        "process_open_fds": "Open file descriptors.",
        "process_max_fds": "The most file descriptors the process may open.",
        "process_start_time_seconds": "When the process started (Unix time).",
    ]

    /// The registry's exposition with a `# HELP` line before each metric's `# TYPE` line:
    /// swift-metrics has no place for help text, and Prometheus's linter asks for it. One pass
    /// over the bytes; only the few `# TYPE` lines are looked at.
    static func withHelp(_ exposition: [UInt8]) -> [UInt8] {
        let typePrefix = Array("# TYPE ".utf8)
        var result: [UInt8] = []
        result.reserveCapacity(exposition.count + help.count * 100)
        var lineStart = 0
        exposition.withUnsafeBufferPointer { bytes in
            while lineStart < bytes.count {
                var lineEnd = lineStart
                while lineEnd < bytes.count, bytes[lineEnd] != 0x0A { lineEnd += 1 }
                if bytes[lineStart] == UInt8(ascii: "#"), lineEnd - lineStart > typePrefix.count,
                   bytes[lineStart..<(lineStart + typePrefix.count)].elementsEqual(typePrefix) {
                    let nameStart = lineStart + typePrefix.count
                    var nameEnd = nameStart
                    while nameEnd < lineEnd, bytes[nameEnd] != 0x20 { nameEnd += 1 }
                    let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[nameStart..<nameEnd]), as: UTF8.self)
                    if let text = help[name] {
                        result.append(contentsOf: "# HELP \(name) \(text)\n".utf8)
                    }
                }
                let next = min(lineEnd + 1, bytes.count)
                result.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[lineStart..<next]))
                lineStart = next
            }
        }
        return result
    }
}
