import ArgumentParser
import FetchRunKit
import FetchRunMonitor
import UnixSignals

/// fetchrun's exit codes; the sysexits.h numbers where one fits.
enum ExitStatus {
    static let someSourcesFailed = ExitCode(2)
    static let allSourcesFailed = ExitCode(3)
    static let usage = ExitCode(64)
    static let invalidConfig = ExitCode(65)
    /// `--listen`'s address cannot be bound (in use, not this machine's): sysexits' EX_UNAVAILABLE.
    static let cannotListen = ExitCode(69)
    static let stateDirectoryUnusable = ExitCode(73)
    static let stateDirectoryLocked = ExitCode(75)
    /// Stopped by SIGINT (130) or SIGTERM (143), the shell's 128 + the signal, after saving
    /// what was done.
    static func interrupted(by signal: UnixSignal) -> ExitCode {
        ExitCode(signal == .sigterm ? 143 : 130)
    }

    /// 0 when every source succeeded, 2 when some failed, 3 when all did.
    static func forRun(_ report: RunReport) -> ExitCode {
        switch report.failedCount {
        case 0: return .success
        case report.sources.count: return allSourcesFailed
        default: return someSourcesFailed
        }
    }

    static func forStateDirectory(_ error: StateDirectoryError) -> ExitCode {
        if case .locked = error { return stateDirectoryLocked }
        return stateDirectoryUnusable
    }
}

/// Why a command ends without success: its exit status and what it says on stderr first.
///
/// Every command throws this (or an error of swift-argument-parser's own, for usage); the root
/// command prints the lines and exits with the status in one place (``FetchRun/main()``), as
/// swift-argument-parser maps its own errors once.
struct CommandFailure: Error {
    var exitCode: ExitCode
    /// Printed on stderr, one line each, in one write; none when the command has printed what
    /// it had to say (a run's report).
    var messages: [String]

    init(_ exitCode: ExitCode, _ messages: [String] = []) {
        self.exitCode = exitCode
        self.messages = messages
    }

    init(_ exitCode: ExitCode, _ message: String) {
        self.init(exitCode, [message])
    }

    /// `--listen`'s address cannot be bound: one line naming it and the reason, exit 69.
    init(listen failure: MonitorEndpoint.ListenFailure) {
        self.init(ExitStatus.cannotListen, failure.description)
    }
}
