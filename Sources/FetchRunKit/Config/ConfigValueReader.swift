/// Reads typed values out of YAML nodes and collects every problem on the way.
///
/// Each accessor returns `nil` when the value is missing or wrong and records a diagnostic
/// for the latter, so decoding goes on and one pass finds every error. Messages quote what
/// the file says, never what `${VAR}` expanded to: the expansion may be a secret.
final class ConfigValueReader {
    let file: String
    let expansion: EnvironmentExpansion
    private(set) var diagnostics: [ConfigDiagnostic] = []

    init(file: String, environment: [String: String]) {
        self.file = file
        self.expansion = EnvironmentExpansion(environment: environment)
    }

    func report(_ message: String, at mark: SourceMark?, source: String? = nil) {
        diagnostics.append(ConfigDiagnostic(file: file, mark: mark, sourceName: source, message: message))
    }

    /// A scalar's text with `${VAR}` expanded; `nil` (reported) for collections or a bad expansion.
    func string(_ node: YAMLNode, key: String, source: String?) -> String? {
        guard case .scalar(let scalar) = node, !scalar.isNull else {
            report("'\(key)' must be a string, not \(node.kindDescription)", at: node.mark, source: source)
            return nil
        }
        do {
            return try expansion.expand(scalar.value)
        } catch {
            report("'\(key)': \(error)", at: scalar.mark, source: source)
            return nil
        }
    }

    /// Parses a scalar with `parse`, which throws a reason phrased to follow "invalid <what> '<text>': ".
    func value<T>(_ node: YAMLNode, key: String, what: String, source: String?, parse: (String) throws -> T) -> T? {
        guard case .scalar(let scalar) = node, !scalar.isNull else {
            let article = "aeiou".contains(what.first ?? "x") ? "an" : "a"
            report("'\(key)' must be \(article) \(what), not \(node.kindDescription)", at: node.mark, source: source)
            return nil
        }
        guard let text = string(node, key: key, source: source) else { return nil }
        do {
            return try parse(text)
        } catch {
            var reason = "\(error)"
            // Reasons quote the offending part of the text; after an expansion that part may be
            // a secret, so only reasons that quote nothing are kept.
            if text != scalar.value, reason.contains("'") {
                reason = "the value from the environment is not valid"
            }
            report("'\(key)': invalid \(what) '\(scalar.value)': \(reason)", at: scalar.mark, source: source)
            return nil
        }
    }

    func duration(_ node: YAMLNode, key: String, source: String?, allowZero: Bool = false) -> Duration? {
        value(node, key: key, what: "duration", source: source) { text in
            let duration = try DurationText.parse(text)
            guard allowZero || duration > .zero else { throw ValueError("must be longer than zero") }
            return duration
        }
    }

    func integer(_ node: YAMLNode, key: String, source: String?, in range: ClosedRange<Int>) -> Int? {
        value(node, key: key, what: "whole number", source: source) { text in
            guard let number = Int(text) else { throw ValueError("not a whole number") }
            guard range.contains(number) else { throw ValueError("must be between \(range.lowerBound) and \(range.upperBound)") }
            return number
        }
    }

    func number(_ node: YAMLNode, key: String, source: String?, in range: ClosedRange<Double>) -> Double? {
        value(node, key: key, what: "number", source: source) { text in
            guard let number = Double(text), number.isFinite else { throw ValueError("not a number") }
            guard range.contains(number) else { throw ValueError("must be between \(range.lowerBound) and \(range.upperBound)") }
            return number
        }
    }

    /// `true` or `false` only: YAML 1.1's `yes`, `on` and friends are refused, not guessed at.
    func boolean(_ node: YAMLNode, key: String, source: String?) -> Bool? {
        value(node, key: key, what: "boolean", source: source) { text in
            switch text.lowercased() {
            case "true": return true
            case "false": return false
            default: throw ValueError("write true or false")
            }
        }
    }

    func mapping(_ node: YAMLNode, key: String, source: String?) -> [YAMLMappingEntry]? {
        if case .mapping(let entries, _) = node { return entries }
        report("'\(key)' must be a mapping (key: value lines), not \(node.kindDescription)", at: node.mark, source: source)
        return nil
    }

    /// Reports every key of `entries` not in `known`, with the nearest known key as a hint.
    func reportUnknownKeys(_ entries: [YAMLMappingEntry], known: [String], source: String?, context: String? = nil) {
        for entry in entries where !known.contains(entry.key.value) {
            var message = "unknown key '\(entry.key.value)'"
            if let context { message += " in \(context)" }
            if let suggestion = Self.nearest(to: entry.key.value, among: known) {
                message += " (did you mean '\(suggestion)'?)"
            } else {
                message += " (known keys: \(known.joined(separator: ", ")))"
            }
            report(message, at: entry.key.mark, source: source)
        }
    }

    /// The candidate within a small edit distance of `word`, if there is one.
    static func nearest(to word: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, editDistance(word, $0)) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return best.1 <= max(1, min(word.count, best.0.count) / 3) ? best.0 : nil
    }

    /// Levenshtein distance, one row at a time.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            previous = current
        }
        return previous[b.count]
    }
}
