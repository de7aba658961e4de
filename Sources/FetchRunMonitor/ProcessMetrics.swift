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
        // Both halves of the start time are fixed for the process's life: read once, not at
        // every scrape (reading /proc/stat was half of what a scrape's process figures cost).
        if let bootTime = Self.bootTime(), let fields = Self.read("/proc/self/stat").flatMap(Self.statFields), fields.count > 19 {
            startTime.record(bootTime + (Double(fields[22 - 3]) ?? 0) / Double(max(1, sysconf(Int32(_SC_CLK_TCK)))))
        }
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
        }
        if let count = Self.openDescriptors() { openFDs.record(Double(count)) }
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

    /// The entries of `/proc/self/fd` (the one that reads the folder among them, as in
    /// Prometheus's own clients).
    static func openDescriptors() -> Int? {
        entries(in: "/proc/self/fd")
    }

    /// How many entries a folder has, "." and ".." aside — counted, not listed by name.
    static func entries(in path: String) -> Int? {
        guard let folder = opendir(path) else { return nil }
        defer { closedir(folder) }
        var count = 0
        while let entry = readdir(folder) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in name[0] == 0x2E && (name[1] == 0 || (name[1] == 0x2E && name[2] == 0)) }
            if !isDot { count += 1 }
        }
        return count
    }

    static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
