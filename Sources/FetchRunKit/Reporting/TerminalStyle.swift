#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether output gets ANSI colour: only on a terminal, and never with `NO_COLOR` set.
package struct TerminalStyle: Sendable {
    package var colored: Bool

    package init(colored: Bool) {
        self.colored = colored
    }

    /// Colour for a stream when it is a terminal and `NO_COLOR` is unset or empty (no-color.org).
    package static func forStream(_ descriptor: Int32, environment: [String: String]) -> TerminalStyle {
        let noColor = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        return TerminalStyle(colored: !noColor && isatty(descriptor) == 1)
    }

    package enum Color: String, Sendable {
        case green = "32", yellow = "33", red = "31", dim = "2", bold = "1"
    }

    package func paint(_ text: String, _ color: Color) -> String {
        colored ? "\u{1B}[\(color.rawValue)m\(text)\u{1B}[0m" : text
    }
}
