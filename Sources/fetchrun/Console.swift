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

    /// Messages carry text from outside (config keys, server errors, plugin output): it is
    /// made safe for a terminal here, where every message passes.
    static func error(_ message: String) {
        FileHandle.standardError.write(Data(("fetchrun: " + TerminalText.safe(message) + "\n").utf8))
    }

    static var stdoutStyle: TerminalStyle {
        TerminalStyle.forStream(STDOUT_FILENO, environment: ProcessInfo.processInfo.environment)
    }
}
