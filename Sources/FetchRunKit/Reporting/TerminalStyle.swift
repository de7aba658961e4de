#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether output gets ANSI colour: only on a terminal, and never with `NO_COLOR` set.
public struct TerminalStyle: Sendable {
    public var colored: Bool

    public init(colored: Bool) {
        self.colored = colored
    }

    /// Colour for a stream when it is a terminal and `NO_COLOR` is unset or empty (no-color.org).
    public static func forStream(_ descriptor: Int32, environment: [String: String]) -> TerminalStyle {
        let noColor = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        return TerminalStyle(colored: !noColor && isatty(descriptor) == 1)
    }

    public enum Color: String, Sendable {
        case green = "32", yellow = "33", red = "31", dim = "2", bold = "1"
    }

    public func paint(_ text: String, _ color: Color) -> String {
        colored ? "\u{1B}[\(color.rawValue)m\(text)\u{1B}[0m" : text
    }
}
