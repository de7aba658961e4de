import Foundation

extension ConfigLoader {
    /// The keys every source (and `defaults:`) may set about where its news goes.
    static let routingKeys = ["outputs", "include", "exclude", "send_baseline", "notify_when", "number_format"]

    /// The top-level `outputs:` list; entries with problems are left out (and reported).
    /// `declared` gets every name the list gives, also of entries with problems: a source that
    /// names one is not wrong too.
    /// - Parameter timeZone: the config's `timezone:`, for digests' schedules and mails' dates.
    func decodeOutputs(_ node: YAMLNode, directory: String, timeZone: TimeZone, declared: inout [String], reader: ConfigValueReader) -> [OutputConfig] {
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
            let options = OutputOptions(outputName: name.isEmpty ? label : name, configDirectory: directory, timeZone: timeZone, mark: mark, fields: fields, reader: reader)
            let output: any Output
            do {
                output = try outputType.init(options: options)
            } catch {
                reader.report("output '\(name.isEmpty ? label : name)': \(error)", at: mark)
                continue
            }
            // Read (and checked) here for every type that takes it, whatever else is wrong.
            let digest = outputType.keys.contains("digest") ? options.digest().schedule : nil
            guard reader.diagnostics.count == errorsBefore, !name.isEmpty else { continue }
            var config = OutputConfig(name: name, type: type, output: output, events: events, alertAfter: alertAfter)
            config.mark = mark
            config.giveUp = giveUp
            config.digest = digest
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
            case "notify_when":
                if let condition = decodeCondition(entry.value, source: source, reader: reader) { routing.notifyWhen = condition }
            case "number_format":
                guard let text = reader.string(entry.value, key: "number_format", source: source) else { continue }
                if let format = NumberText.Format(rawValue: text) {
                    routing.numberFormat = format
                } else {
                    reader.report("'number_format' must be one of \(NumberText.Format.allCases.map(\.rawValue).joined(separator: ", ")), not '\(TerminalText.safe(text, maximumLength: 40))'", at: entry.value.mark, source: source)
                }
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

    /// `notify_when:`: one condition per mapping — `appears`, `disappears`, `matches`, `value`
    /// (`below`, `above`, `changes_by`), or `any` / `all` of a list of them.
    func decodeCondition(_ node: YAMLNode, source: String?, reader: ConfigValueReader) -> NotifyCondition? {
        let example = "for example { appears: \"In stock\" } or { value: { below: 100 } }"
        guard case .mapping(let entries, _) = node, entries.count == 1, let entry = entries.first else {
            reader.report("'notify_when' must be a mapping with one condition (appears, disappears, matches, value, any, all), \(example); combine several with any: or all:", at: node.mark, source: source)
            return nil
        }
        let key = entry.key.value
        switch key {
        case "appears", "disappears":
            guard let text = reader.string(entry.value, key: key, source: source), !text.isEmpty else { return nil }
            return key == "appears" ? .appears(text) : .disappears(text)
        case "matches":
            guard let text = reader.string(entry.value, key: key, source: source) else { return nil }
            do {
                return .matches(try UserPattern(text))
            } catch {
                reader.report("'notify_when' 'matches': \(error)", at: entry.value.mark, source: source)
                return nil
            }
        case "value":
            guard case .mapping(let tests, _) = entry.value, tests.count == 1, let test = tests.first else {
                reader.report("'notify_when' 'value' must be a mapping with one of below, above, changes_by, for example { below: 100 } or { changes_by: \"5%\" }", at: entry.value.mark, source: source)
                return nil
            }
            switch test.key.value {
            case "below", "above":
                guard let limit = reader.number(test.value, key: test.key.value, source: source, in: -1e15...1e15) else { return nil }
                return .value(test.key.value == "below" ? .below(limit) : .above(limit))
            case "changes_by":
                guard let text = reader.string(test.value, key: "changes_by", source: source) else { return nil }
                let percent = text.hasSuffix("%")
                let number = Double(text.dropLast(percent ? 1 : 0).trimmingCharacters(in: .whitespaces))
                guard let number, number > 0, number < 1e15 else {
                    reader.report("'changes_by' must be an amount or a share, such as 5 or \"5%\", more than zero; not '\(TerminalText.safe(text, maximumLength: 40))'", at: test.value.mark, source: source)
                    return nil
                }
                return .value(.changesBy(number, percent: percent))
            default:
                reader.report("'notify_when' 'value': unknown test '\(TerminalText.safe(test.key.value, maximumLength: 40))' (below, above, changes_by)", at: test.key.mark, source: source)
                return nil
            }
        case "any", "all":
            guard case .sequence(let items, _) = entry.value, !items.isEmpty else {
                reader.report("'notify_when' '\(key)' must be a list of conditions, such as [{ appears: \"In stock\" }, { value: { below: 100 } }]", at: entry.value.mark, source: source)
                return nil
            }
            let conditions = items.compactMap { decodeCondition($0, source: source, reader: reader) }
            guard conditions.count == items.count else { return nil }
            return key == "any" ? .any(conditions) : .all(conditions)
        default:
            reader.report("'notify_when': unknown condition '\(TerminalText.safe(key, maximumLength: 40))' (appears, disappears, matches, value, any, all)", at: entry.key.mark, source: source)
            return nil
        }
    }
}
