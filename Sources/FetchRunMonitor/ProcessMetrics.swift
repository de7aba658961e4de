import CoreMetrics
import Foundation
import Synchronization

/// The `process_*` metrics Prometheus's own clients export, read from `/proc/self` when
/// asked: CPU seconds, memory, file descriptors, start time.
final class ProcessMetrics: Sendable {
    private let cpuSeconds: FloatingPointCounter
    private let residentMemory: Gauge
    private let virtualMemory: Gauge
    private let openFDs: Gauge
    private let maxFDs: Gauge
    private let startTime: Gauge
    /// CPU seconds already added to the counter, which only counts up.
    private let counted = Mutex<Double>(0)

    init(factory: any MetricsFactory) {
        cpuSeconds = FloatingPointCounter(label: "process_cpu_seconds_total", factory: factory)
        residentMemory = Gauge(label: "process_resident_memory_bytes", factory: factory)
        virtualMemory = Gauge(label: "process_virtual_memory_bytes", factory: factory)
        openFDs = Gauge(label: "process_open_fds", factory: factory)
        maxFDs = Gauge(label: "process_max_fds", factory: factory)
        startTime = Gauge(label: "process_start_time_seconds", factory: factory)
        update()
    }

    func update() {
        let ticks = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
        let pageSize = Double(max(1, sysconf(Int32(_SC_PAGESIZE))))
        if let stat = Self.read("/proc/self/stat"), let fields = Self.statFields(stat), fields.count > 21 {
            // Fields after the command's closing parenthesis, from `state` (field 3 of proc(5)).
            let number = { (field: Int) in Double(fields[field - 3]) ?? 0 }
            let cpu = (number(14) + number(15)) / ticks
            let added = counted.withLock { counted -> Double in
                let added = max(0, cpu - counted)
                counted += added
                return added
            }
            if added > 0 { cpuSeconds.increment(by: added) }
            virtualMemory.record(number(23))
            residentMemory.record(number(24) * pageSize)
            if let bootTime = Self.bootTime() { startTime.record(bootTime + number(22) / ticks) }
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            openFDs.record(Double(entries.count))
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { maxFDs.record(Double(limit.rlim_cur)) }
    }

    /// `/proc/self/stat` after the command name, which may hold spaces and parentheses.
    static func statFields(_ stat: String) -> [Substring]? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    /// The system's boot time (Unix time), which `starttime` counts from.
    static func bootTime() -> Double? {
        guard let stat = read("/proc/stat") else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
