import FetchRunKit
import Foundation

/// stdout carries results only; everything else goes to stderr.
enum Console {
    static func out(_ lines: [String]) {
        for line in lines { print(line) }
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data(("fetchrun: " + message + "\n").utf8))
    }

    static var stdoutStyle: TerminalStyle {
        TerminalStyle.forStream(STDOUT_FILENO, environment: ProcessInfo.processInfo.environment)
    }
}
