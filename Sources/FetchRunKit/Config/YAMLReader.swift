import CYAML

/// Reads a YAML document into a ``YAMLNode`` tree with libyaml's event API, keeping every
/// node's line and column.
///
/// Config files get stricter rules than YAML itself: aliases are rejected (they let a small
/// file expand into a huge one), duplicate keys are errors instead of "last one wins",
/// nesting deeper than ``maximumDepth`` is refused (libyaml 0.2.5 has no limit of its own),
/// and a file holds one document.
package struct YAMLReader: Sendable {
    /// Deeper than any sensible config; shallow enough that a hostile file cannot exhaust the stack.
    package static let maximumDepth = 32

    package var file: String

    package init(file: String) {
        self.file = file
    }

    /// The document's root node (`nil` for an empty document) and every problem found.
    ///
    /// A syntax error ends reading, since libyaml cannot go past one; the other problems are
    /// collected and reading goes on, so one pass reports them all.
    package func read(_ text: String) -> (root: YAMLNode?, diagnostics: [ConfigDiagnostic]) {
        var builder = TreeBuilder(file: file)
        let bytes = Array(text.utf8)
        if bytes.isEmpty { return (nil, []) }

        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            return (nil, [ConfigDiagnostic(file: file, mark: nil, message: "cannot start the YAML parser (out of memory)")])
        }
        defer { yaml_parser_delete(&parser) }

        // libyaml reads the buffer in place: it must outlive every call to yaml_parser_parse.
        bytes.withUnsafeBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(&parser, &event) == 1 else {
                    builder.fail(syntaxError(parser))
                    return
                }
                let done = event.type == YAML_STREAM_END_EVENT
                let keepGoing = builder.consume(event)
                yaml_event_delete(&event)
                if done || !keepGoing { return }
            }
        }
        return (builder.root, builder.diagnostics)
    }

    private func syntaxError(_ parser: yaml_parser_t) -> ConfigDiagnostic {
        let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
        var message = "YAML syntax error: \(problem)"
        if let context = parser.context.map({ String(cString: $0) }) {
            message += " (\(context) started at \(parser.context_mark.line + 1):\(parser.context_mark.column + 1))"
        }
        let mark = SourceMark(line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1)
        return ConfigDiagnostic(file: file, mark: mark, message: message)
    }
}

/// Turns the flat event stream into a tree, one open collection per stack frame.
///
/// Frames are changed in place (`stack[top].…`), never popped, changed and pushed back: a
/// popped frame's array is shared with its enum copy, so appending to it copied the whole
/// list — once per source, which made a config of 40,000 sources take 30 seconds to load.
private struct TreeBuilder {
    struct Frame {
        let isMapping: Bool
        let mark: SourceMark
        var items: [YAMLNode] = []
        var entries: [YAMLMappingEntry] = []
        var pendingKey: YAMLScalar?
        /// The pending key repeats an earlier one: its value is reported, then dropped.
        var pendingKeyIsDuplicate = false
        /// Each key as first written, in order. Looked through while there are few — below
        /// ``linearSearchLimit`` that is cheaper than hashing, and nearly every mapping of a
        /// config (a source's few keys) stays below — and indexed by `firstMarks` beyond.
        var keys: [YAMLScalar] = []
        var firstMarks: [String: SourceMark] = [:]

        static let linearSearchLimit = 16

        /// Where `key` was first written in this mapping, or `nil` (and it is recorded now).
        mutating func recordKey(_ key: YAMLScalar) -> SourceMark? {
            if keys.count < Self.linearSearchLimit {
                if let first = keys.first(where: { $0.value == key.value }) { return first.mark }
            } else {
                if firstMarks.isEmpty {
                    for known in keys { firstMarks[known.value] = known.mark }
                }
                if let first = firstMarks[key.value] { return first }
                firstMarks[key.value] = key.mark
            }
            keys.append(key)
            return nil
        }
    }

    let file: String
    var stack: [Frame] = []
    var root: YAMLNode?
    var diagnostics: [ConfigDiagnostic] = []
    var documents = 0

    init(file: String) {
        self.file = file
    }

    mutating func fail(_ diagnostic: ConfigDiagnostic) {
        diagnostics.append(diagnostic)
        root = nil
    }

    /// Handles one event; `false` ends reading.
    mutating func consume(_ event: yaml_event_t) -> Bool {
        let mark = SourceMark(line: Int(event.start_mark.line) + 1, column: Int(event.start_mark.column) + 1)
        switch event.type {
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                diagnostics.append(ConfigDiagnostic(file: file, mark: mark, message: "a config file holds one YAML document; found a second one here"))
                return false
            }
        case YAML_ALIAS_EVENT:
            diagnostics.append(ConfigDiagnostic(file: file, mark: mark, message: "YAML aliases (*name) are not allowed in a config file"))
            // Drop the aliased value so that nothing else complains about the placeholder.
            if let top = stack.indices.last, stack[top].isMapping, stack[top].pendingKey != nil {
                stack[top].pendingKeyIsDuplicate = true
            }
            attach(.scalar(YAMLScalar(value: "", isPlain: true, mark: mark)))
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
            let explicitString = scalar.tag.map { String(cString: $0) } == "tag:yaml.org,2002:str"
            let plain = scalar.style == YAML_PLAIN_SCALAR_STYLE && !explicitString
            attach(.scalar(YAMLScalar(value: text, isPlain: plain, mark: mark)))
        case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
            guard stack.count < YAMLReader.maximumDepth else {
                fail(ConfigDiagnostic(file: file, mark: mark, message: "nesting deeper than \(YAMLReader.maximumDepth) levels is not allowed in a config file"))
                return false
            }
            stack.append(Frame(isMapping: event.type == YAML_MAPPING_START_EVENT, mark: mark))
        case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
            let frame = stack.removeLast()
            attach(frame.isMapping ? .mapping(frame.entries, mark: frame.mark) : .sequence(frame.items, mark: frame.mark))
        default:
            break
        }
        return true
    }

    private mutating func attach(_ node: YAMLNode) {
        guard let top = stack.indices.last else {
            root = node
            return
        }
        guard stack[top].isMapping else {
            stack[top].items.append(node)
            return
        }
        if let key = stack[top].pendingKey {
            if !stack[top].pendingKeyIsDuplicate {
                stack[top].entries.append(YAMLMappingEntry(key: key, value: node))
            }
            stack[top].pendingKey = nil
            stack[top].pendingKeyIsDuplicate = false
        } else if case .scalar(let key) = node {
            stack[top].pendingKey = key
            if let first = stack[top].recordKey(key) {
                diagnostics.append(ConfigDiagnostic(file: file, mark: key.mark, message: "duplicate key '\(key.value)' (first written at \(first))"))
                stack[top].pendingKeyIsDuplicate = true
            }
        } else {
            diagnostics.append(ConfigDiagnostic(file: file, mark: node.mark, message: "a mapping key must be a plain value, not \(node.kindDescription)"))
            stack[top].pendingKey = YAMLScalar(value: "", isPlain: true, mark: node.mark)
            stack[top].pendingKeyIsDuplicate = true
        }
    }
}
