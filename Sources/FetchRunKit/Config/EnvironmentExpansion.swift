import Foundation

/// Expands `${VAR}` and `${VAR:-default}` in config values from the environment.
///
/// `$$` writes a literal `$`; a `$` followed by anything else stays as written. As in the
/// shell, `:-` uses the default when the variable is unset or empty.
package struct EnvironmentExpansion: Sendable {
    package struct ExpansionError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    package var environment: [String: String]

    package init(environment: [String: String]) {
        self.environment = environment
    }

    /// Whether `text` names any variable at all — values that do are never echoed back in
    /// messages, since what they expand to may be a secret.
    package static func mentionsVariables(_ text: String) -> Bool {
        // By bytes: Foundation's substring search went through NSString for every value of
        // every source, a tenth of loading a config of 100,000 sources.
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if previous == UInt8(ascii: "$"), byte == UInt8(ascii: "{") { return true }
            // `$$` is a literal `$`: the pair is done, and what follows starts afresh.
            previous = previous == UInt8(ascii: "$") && byte == UInt8(ascii: "$") ? 0 : byte
        }
        return false
    }

    package func expand(_ text: String) throws(ExpansionError) -> String {
        guard text.utf8.contains(UInt8(ascii: "$")) else { return text }
        var result = ""
        var index = text.startIndex
        while let dollar = text[index...].firstIndex(of: "$") {
            result += text[index..<dollar]
            let next = text.index(after: dollar)
            if next < text.endIndex, text[next] == "$" {
                result += "$"
                index = text.index(after: next)
                continue
            }
            guard next < text.endIndex, text[next] == "{" else {
                result += "$"
                index = next
                continue
            }
            guard let close = text[next...].firstIndex(of: "}") else {
                throw ExpansionError(description: "'${' without a closing '}'")
            }
            let body = text[text.index(after: next)..<close]
            result += try value(for: body)
            index = text.index(after: close)
        }
        result += text[index...]
        return result
    }

    private func value(for body: Substring) throws(ExpansionError) -> String {
        let name: Substring
        let fallback: Substring?
        if let separator = body.range(of: ":-") {
            name = body[..<separator.lowerBound]
            fallback = body[separator.upperBound...]
        } else {
            name = body
            fallback = nil
        }
        guard let first = name.first, first == "_" || (first.isASCII && first.isLetter),
              name.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }) else {
            throw ExpansionError(description: "'${\(body)}' is not a variable name (letters, digits and _, not starting with a digit)")
        }
        if let value = environment[String(name)], !(fallback != nil && value.isEmpty) {
            return value
        }
        if let fallback { return String(fallback) }
        throw ExpansionError(description: "environment variable '\(name)' is not set (write ${\(name):-default} to give it a fallback)")
    }
}
