/// One problem found in a config file, pointing at the place it was found.
///
/// Its description is the line a user sees:
/// `sources.yaml:14:5: source 'traffic': unknown key 'intervall' (did you mean 'interval'?)`.
public struct ConfigDiagnostic: Error, Sendable, Hashable, CustomStringConvertible {
    /// The config file as the user named it.
    public var file: String
    /// Where in the file; `nil` when the problem is the file as a whole (missing, empty).
    public var mark: SourceMark?
    /// The source the problem belongs to, when it belongs to one.
    public var sourceName: String?
    public var message: String

    public init(file: String, mark: SourceMark?, sourceName: String? = nil, message: String) {
        self.file = file
        self.mark = mark
        self.sourceName = sourceName
        self.message = message
    }

    public var description: String {
        var text = file
        if let mark { text += ":\(mark)" }
        text += ": "
        if let sourceName { text += "source '\(sourceName)': " }
        return text + message
    }
}

/// Every problem found while loading a config file, in file order.
///
/// Loading never stops at the first problem: `fetchrun validate` shows them all at once.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [ConfigDiagnostic]

    public init(_ diagnostics: [ConfigDiagnostic]) {
        self.diagnostics = diagnostics
    }

    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }
}

extension Array where Element == ConfigDiagnostic {
    /// File order: by line, then column; problems without a place first.
    func sortedByPlace() -> [ConfigDiagnostic] {
        enumerated().sorted { lhs, rhs in
            let l = lhs.element.mark.map { ($0.line, $0.column) } ?? (0, 0)
            let r = rhs.element.mark.map { ($0.line, $0.column) } ?? (0, 0)
            return l != r ? l < r : lhs.offset < rhs.offset
        }.map(\.element)
    }
}
