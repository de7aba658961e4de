import Foundation
import Testing

/// Time comes from the injected clock (``FetchClock``): a rule about time read from the system
/// clock directly could not be tested by advancing a test clock. This keeps the sources so,
/// with the few places that rightly keep real time named, each with why.
@Suite struct ClockReadsTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The targets that make up fetchrun (the fixture server and benchmarks are not fetchrun).
    static let targets = ["FetchRunCore", "FetchRunTransport", "FetchRunKit", "FetchRunMonitor", "FetchRunCluster", "fetchrun"]

    /// Reading the system's time, or waiting on it, other than through a clock.
    static var clockRead: Regex<(Substring, Substring?)> { #/ContinuousClock\.now|ContinuousClock\(\)|SuspendingClock|\bDate\(\)|timeIntervalSinceNow|DispatchTime\.now|\.now\(\)|Task\.sleep|Thread\.sleep|\busleep\(|(^|[^A-Za-z0-9_)\]])\.now\b/# }

    /// Files that keep real time, and why.
    static let allowed: [String: String] = [
        "FetchRunCore/FetchClock.swift": "the system clock itself",
        "FetchRunCore/DeadlineTimer.swift": "the system clock's timer thread",
        "FetchRunCore/OffPoolWork.swift": "how long an idle thread of the pool waits for work",
        "FetchRunTransport/CurlSocketWatch.swift": "libcurl's timers, on its thread, in real time",
        "FetchRunTransport/CurlTransfer+Download.swift": "a stalled download, measured on libcurl's thread",
        "FetchRunTransport/CurlTransfer+Mail.swift": "a mail's deadline in libcurl's progress callback (it arrives as time left)",
        "FetchRunTransport/CurlTransfer.swift": "a transfer's start and last activity, on libcurl's thread",
        "FetchRunTransport/CurlMultiLoop.swift": "a transfer's start, on libcurl's thread",
        "FetchRunTransport/CurlHTTPClient+execute.swift": "a mail's start, on the thread that runs libcurl for it",
        "FetchRunKit/Plugins/PluginProcess.swift": "a child process runs in real time: its deadline, SIGTERM's grace",
        "FetchRunKit/Plugins/PluginDescription.swift": "a plugin's --describe, a child process, while the config loads",
        "FetchRunKit/Outputs/CommandOutput.swift": "a command output is a child process, in real time",
        "FetchRunKit/Snapshots/StateDirectory.swift": "waiting for another process's lock on the state folder",
        "FetchRunKit/State/SQLiteConnection.swift": "waiting for another process's lock on state.db",
        "fetchrun/ConsoleLogHandler.swift": "log lines' timestamps",
        "fetchrun/Console.swift": "log lines' timestamps",
        "fetchrun/Monitoring.swift": "the stall hook of the health tests (FETCHRUN_TEST_STALL_FILE) holds the real loop",
    ]

    @Test func timeIsReadThroughTheInjectedClockOutsideTheAllowedPlaces() throws {
        var reads: [String] = []
        var used: Set<String> = []
        for target in Self.targets {
            let folder = Self.packageRoot.appendingPathComponent("Sources/\(target)")
            let files = try #require(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
            for file in files.sorted() {
                let name = "\(target)/\(file)"
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    // Doc comments may name what they speak of.
                    if line.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                    // A cheap look first: the pattern is costly over every line of the sources.
                    guard line.contains("now") || line.contains("Date()") || line.contains("sleep") || line.contains("Clock"),
                          line.contains(Self.clockRead) else { continue }
                    if Self.allowed[name] != nil {
                        used.insert(name)
                    } else {
                        reads.append("\(name):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
        }
        #expect(reads.isEmpty, "read the time through the injected clock (FetchClock), or add the file to the allowed list with why:\n\(reads.joined(separator: "\n"))")
        // An entry that no longer reads the time goes: the list stays the short list it is.
        #expect(Set(Self.allowed.keys).subtracting(used).isEmpty, "allowed but no longer reading the time: \(Set(Self.allowed.keys).subtracting(used).sorted())")
    }
}
