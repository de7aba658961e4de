import ArgumentParser
import FetchRunKit
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
