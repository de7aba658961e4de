/// A place in a config file, 1-based, as an editor shows it.
public struct SourceMark: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "\(line):\(column)" }
}

/// A YAML node with the place it was written, as read by ``YAMLReader``.
///
/// Scalars keep their raw text: typing (`true`, `42`, `30s`) is the decoder's decision, not
/// YAML 1.1's, so `yes` stays a string and `on` never turns into a boolean by surprise.
package indirect enum YAMLNode: Sendable, Equatable {
    case scalar(YAMLScalar)
    case mapping([YAMLMappingEntry], mark: SourceMark)
    case sequence([YAMLNode], mark: SourceMark)

    package var mark: SourceMark {
        switch self {
        case .scalar(let scalar): return scalar.mark
        case .mapping(_, let mark), .sequence(_, let mark): return mark
        }
    }

    /// What a message calls this kind of node: "a mapping", "a list", "a string".
    package var kindDescription: String {
        switch self {
        case .scalar(let scalar): return scalar.isNull ? "nothing (null)" : "a scalar"
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        }
    }
}

/// A scalar's text, whether it was quoted, and where it was written.
package struct YAMLScalar: Sendable, Equatable {
    package var value: String
    /// Quoted or block scalars are always strings; only plain ones can be null, numbers or booleans.
    package var isPlain: Bool
    package var mark: SourceMark

    package init(value: String, isPlain: Bool, mark: SourceMark) {
        self.value = value
        self.isPlain = isPlain
        self.mark = mark
    }

    package var isNull: Bool {
        isPlain && ["", "~", "null", "Null", "NULL"].contains(value)
    }
}

/// One `key: value` pair of a mapping. Keys are scalars: config files have no use for others.
package struct YAMLMappingEntry: Sendable, Equatable {
    package var key: YAMLScalar
    package var value: YAMLNode

    package init(key: YAMLScalar, value: YAMLNode) {
        self.key = key
        self.value = value
    }
}

extension Array where Element == YAMLMappingEntry {
    /// The entry written for `key` (the reader keeps only the first of repeated keys). A
    /// mapping of a config has a handful of keys: looking through them is cheaper than hashing
    /// them, which every source of every load would pay.
    package func entry(_ key: String) -> YAMLMappingEntry? {
        first { $0.key.value == key }
    }
}
