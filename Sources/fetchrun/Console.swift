import FetchRunKit
import Foundation

/// stdout carries results only; everything else goes to stderr.
enum Console {
    /// Writes at once, unbuffered: watch mode's lines must appear the moment they are ready,
    /// also in a pipe.
    static func out(_ lines: [String]) {
        guard !lines.isEmpty else { return }
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }

    /// Lines already rendered as bytes, each with its newline, written at once.
    static func out(bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        FileHandle.standardOutput.write(Data(bytes))
    }

    /// Messages carry text from outside (config keys, server errors, plugin output): it is
    /// made safe for a terminal here, where every message passes.
    /// Under `--log-format json` a message is a JSON record like the logs', so that a log
    /// collector reads every stderr line alike; under journald it carries its priority.
    static func error(_ message: String) {
        error([message])
    }

    /// Messages that belong together (a reload's verdict and the problems it found), in one
    /// write: nothing another thread prints comes between them, and a reader that sees the
    /// first sees the rest.
    static func error(_ messages: [String]) {
        guard !messages.isEmpty else { return }
        let format = LogFormat.current.withLock { $0 }
        let priority = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil ? "<\(ConsoleLogHandler.syslogPriority(.error))>" : ""
        let lines = messages.map { message in
            switch format {
            case .json: ConsoleLogHandler.jsonLine(level: .error, message: TerminalText.safe(message), fields: [:], at: Date())
            case .text: priority + "fetchrun: " + TerminalText.safe(message)
            }
        }
        FileHandle.standardError.write(Data(lines.map { $0 + "\n" }.joined().utf8))
    }

    static var stdoutStyle: TerminalStyle {
        TerminalStyle.forStream(STDOUT_FILENO, environment: ProcessInfo.processInfo.environment)
    }
}
