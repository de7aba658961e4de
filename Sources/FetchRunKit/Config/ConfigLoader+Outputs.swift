import Foundation

extension ConfigLoader {
    /// The keys every source (and `defaults:`) may set about where its news goes.
    static let routingKeys = ["outputs", "include", "exclude", "send_baseline"]

    /// The top-level `outputs:` list; entries with problems are left out (and reported).
    /// `declared` gets every name the list gives, also of entries with problems: a source that
    /// names one is not wrong too.
    func decodeOutputs(_ node: YAMLNode, directory: String, declared: inout [String], reader: ConfigValueReader) -> [OutputConfig] {
        guard case .sequence(let nodes, _) = node else {
            reader.report("'outputs' must be a list of outputs (lines starting with '- '), not \(node.kindDescription)", at: node.mark)
            return []
        }
        var outputs: [OutputConfig] = []
        var seen: [String: SourceMark] = [:]
        for (index, node) in nodes.enumerated() {
            guard case .mapping(let entries, let mark) = node else {
                reader.report("output #\(index + 1) must be a mapping with 'name' and 'type'", at: node.mark)
                continue
            }
            let errorsBefore = reader.diagnostics.count
            let fields = Dictionary(entries.map { ($0.key.value, $0) }, uniquingKeysWith: { first, _ in first })
            let label = "output #\(index + 1)"
            var name = ""
            if let node = fields["name"]?.value, let value = reader.string(node, key: "name", source: nil) {
                if !Self.isValidName(value) {
                    reader.report("invalid output name '\(value)': use lower-case letters, digits, '.', '_' and '-'", at: node.mark)
                } else if let first = seen[value] {
                    reader.report("duplicate output name '\(value)' (first used at \(first))", at: node.mark)
                } else {
                    seen[value] = node.mark
                    declared.append(value)
                    name = value
                }
            } else if fields["name"] == nil {
                reader.report("\(label) has no 'name'", at: mark)
            }
            let known = outputTypes.typeNames.joined(separator: ", ")
            guard let typeNode = fields["type"]?.value, let type = reader.string(typeNode, key: "type", source: nil) else {
                if fields["type"] == nil { reader.report("\(label) has no 'type' (\(known))", at: mark) }
                continue
            }
            guard let outputType = outputTypes.type(named: type) else {
                reader.report("unknown output type '\(TerminalText.safe(type))'; known: \(known)", at: typeNode.mark)
                continue
            }
            reader.reportUnknownKeys(entries, known: OutputOptions.commonKeys + outputType.keys, source: nil, context: "output '\(name.isEmpty ? label : name)'")
            var events: Set<OutputConfig.Event> = [.items]
            if let node = fields["events"]?.value {
                events = []
                let items: [YAMLNode]
                if case .sequence(let list, _) = node { items = list } else { items = [node] }
                for text in items.compactMap({ reader.string($0, key: "events", source: nil) }) {
                    if let event = OutputConfig.Event(rawValue: text) { events.insert(event) } else {
                        reader.report("'events': unknown event '\(text)'; use items, failures", at: node.mark)
                    }
                }
            }
            let alertAfter = fields["alert_after"].flatMap { reader.integer($0.value, key: "alert_after", source: nil, in: 1...1000) } ?? 3
            var giveUp = OutputConfig.GiveUp()
            if let attempts = fields["give_up_attempts"].flatMap({ reader.integer($0.value, key: "give_up_attempts", source: nil, in: 1...100_000) }) { giveUp.attempts = attempts }
            if let age = fields["give_up_after"].flatMap({ reader.duration($0.value, key: "give_up_after", source: nil) }) { giveUp.age = age }
            let options = OutputOptions(outputName: name.isEmpty ? label : name, configDirectory: directory, mark: mark, fields: fields, reader: reader)
            let output: any Output
            do {
                output = try outputType.init(options: options)
            } catch {
                reader.report("output '\(name.isEmpty ? label : name)': \(error)", at: mark)
                continue
            }
            guard reader.diagnostics.count == errorsBefore, !name.isEmpty else { continue }
            var config = OutputConfig(name: name, type: type, output: output, events: events, alertAfter: alertAfter)
            config.mark = mark
            config.giveUp = giveUp
            outputs.append(config)
        }
        return outputs
    }

    /// `outputs`, `include`, `exclude`, `send_baseline` of a source or of `defaults:`, over `routing`.
    func decodeRouting(_ entries: [YAMLMappingEntry], into routing: inout SourceRouting, outputNames: [String], source: String?, reader: ConfigValueReader) {
        for entry in entries {
            switch entry.key.value {
            case "outputs":
                let node = entry.value
                guard case .sequence(let items, _) = node else {
                    reader.report("'outputs' must be a list of output names, such as [phone] (or [] for none)", at: node.mark, source: source)
                    continue
                }
                var names: [String] = []
                for item in items {
                    guard let name = reader.string(item, key: "outputs", source: source) else { continue }
                    if outputNames.contains(name) {
                        names.append(name)
                    } else {
                        var message = "'outputs': no output named '\(name)'"
                        if let suggestion = ConfigValueReader.nearest(to: name, among: outputNames) { message += " (did you mean '\(suggestion)'?)" }
                        reader.report(message + (outputNames.isEmpty ? "; the config defines none" : "; defined: \(outputNames.joined(separator: ", "))"), at: item.mark, source: source)
                    }
                }
                routing.outputs = names
            case "include", "exclude":
                let rules = decodeRules(entry.value, key: entry.key.value, source: source, reader: reader)
                if entry.key.value == "include" { routing.filter.include = rules } else { routing.filter.exclude = rules }
            case "send_baseline":
                if let value = reader.boolean(entry.value, key: "send_baseline", source: source) { routing.sendBaseline = value }
            default:
                break
            }
        }
    }

    /// `[pattern, {field: pattern}, …]` (or one pattern).
    private func decodeRules(_ node: YAMLNode, key: String, source: String?, reader: ConfigValueReader) -> [ItemFilter.Rule] {
        let items: [YAMLNode]
        if case .sequence(let list, _) = node { items = list } else { items = [node] }
        var rules: [ItemFilter.Rule] = []
        for item in items {
            var field: String?
            var patternNode = item
            if case .mapping(let pairs, _) = item {
                guard pairs.count == 1 else {
                    reader.report("'\(key)': a rule is a pattern, or one 'field: pattern' pair", at: item.mark, source: source)
                    continue
                }
                field = pairs[0].key.value
                patternNode = pairs[0].value
            }
            if let rule = reader.value(patternNode, key: key, what: "pattern", source: source, parse: { try ItemFilter.Rule(field: field, pattern: $0) }) {
                rules.append(rule)
            }
        }
        return rules
    }
}
