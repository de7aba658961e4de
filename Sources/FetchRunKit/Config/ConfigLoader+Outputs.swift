import Foundation

extension ConfigLoader {
    /// The keys every source (and `defaults:`) may set about where its news goes.
    static let routingKeys = ["outputs", "include", "exclude", "send_baseline"]
    static let outputKeys = ["name", "type", "events", "alert_after", "template", "timeout"]
    static let outputTypeKeys: [String: [String]] = [
        "command": ["command", "per_item"],
        "webhook": ["url", "headers", "batch", "proxy", "ca_file", "insecure"],
        "email": ["url", "from", "to", "username", "password", "per_item", "subject", "ca_file", "insecure"],
    ]

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
            guard let typeNode = fields["type"]?.value, let type = reader.string(typeNode, key: "type", source: nil) else {
                if fields["type"] == nil { reader.report("\(label) has no 'type' (command, webhook or email)", at: mark) }
                continue
            }
            guard let typeKeys = Self.outputTypeKeys[type] else {
                reader.report("unknown output type '\(type)'; known: command, webhook, email", at: typeNode.mark)
                continue
            }
            reader.reportUnknownKeys(entries, known: Self.outputKeys + typeKeys, source: nil, context: "output '\(name.isEmpty ? label : name)'")
            let context = OutputContext(fields: fields, mark: mark, directory: directory, reader: reader)
            var events: Set<OutputConfig.Event> = [.items]
            if let node = fields["events"]?.value {
                events = []
                for text in context.strings(node, key: "events") {
                    if let event = OutputConfig.Event(rawValue: text) { events.insert(event) } else {
                        reader.report("'events': unknown event '\(text)'; use items, failures", at: node.mark)
                    }
                }
            }
            let destination: OutputConfig.Destination?
            switch type {
            case "command":
                let command = fields["command"].map { context.strings($0.value, key: "command") } ?? []
                if fields["command"] == nil { reader.report("output '\(name)': missing 'command' (the program and its arguments, as a list)", at: mark) }
                let program = command.first ?? ""
                let executable = program.contains("/") && !program.hasPrefix("/")
                    ? URL(fileURLWithPath: directory).appendingPathComponent(program).standardizedFileURL.path
                    : PluginLocator.searchPath(for: program) ?? program
                if fields["command"] != nil, command.isEmpty { reader.report("'command' must name a program", at: fields["command"]!.value.mark) }
                destination = .command(executable: executable, arguments: Array(command.dropFirst()), perItem: context.boolean("per_item") ?? false)
            case "webhook":
                let url = context.httpURL("url")
                var transport = HTTPTransport()
                transport.apply(proxy: context.proxy(), caFile: context.path("ca_file"), insecure: context.boolean("insecure"))
                var headers: [(name: String, value: String)] = []
                if let node = fields["headers"]?.value, let map = reader.mapping(node, key: "headers", source: nil) {
                    for entry in map {
                        guard let value = reader.string(entry.value, key: "headers.\(entry.key.value)", source: nil) else { continue }
                        if !HTTPText.isHeaderName(entry.key.value) {
                            reader.report("header '\(TerminalText.safe(entry.key.value))' is not a valid header name", at: entry.key.mark)
                        } else if let problem = HTTPText.controlCharacterProblem(value) {
                            reader.report("header '\(entry.key.value)': its value \(problem)", at: entry.value.mark)
                        } else {
                            headers.append((entry.key.value, value))
                        }
                    }
                }
                destination = url.map { .webhook(url: $0, headers: headers, batch: context.integer("batch", in: 1...1000) ?? 1, transport: transport) }
            default:
                let url = context.string("url")
                if let url, !(url.lowercased().hasPrefix("smtp://") || url.lowercased().hasPrefix("smtps://")) {
                    reader.report("'url' must be smtp://host[:port] or smtps://host[:port]", at: fields["url"]!.value.mark)
                }
                if fields["url"] == nil { reader.report("output '\(name)': missing 'url' (smtp:// or smtps://)", at: mark) }
                let from = context.address("from")
                if fields["from"] == nil { reader.report("output '\(name)': missing 'from'", at: mark) }
                let to = fields["to"].map { node in context.strings(node.value, key: "to").filter { address in
                    guard Self.isAddress(address) else {
                        reader.report("'to': '\(TerminalText.safe(address))' is not a mail address", at: node.value.mark)
                        return false
                    }
                    return true
                } } ?? []
                if fields["to"] == nil { reader.report("output '\(name)': missing 'to' (a list of addresses)", at: mark) }
                var transport = HTTPTransport()
                transport.apply(proxy: nil, caFile: context.path("ca_file"), insecure: context.boolean("insecure"))
                let password = context.secret("password")
                let subject = context.template("subject")
                destination = .email(.init(
                    url: url ?? "", from: from ?? "", to: to, username: context.string("username"), password: password,
                    perItem: context.boolean("per_item") ?? false, subject: subject, transport: transport
                ))
            }
            let template = context.template("template")
            let alertAfter = context.integer("alert_after", in: 1...1000) ?? 3
            let timeout = fields["timeout"].flatMap { reader.duration($0.value, key: "timeout", source: nil) } ?? .seconds(60)
            guard reader.diagnostics.count == errorsBefore, let destination, !name.isEmpty else { continue }
            var output = OutputConfig(name: name, destination: destination)
            output.events = events
            output.alertAfter = alertAfter
            output.template = template
            output.timeout = timeout
            output.mark = mark
            outputs.append(output)
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

    /// `local@domain`, nothing that could end a header line or an SMTP command.
    static func isAddress(_ text: String) -> Bool {
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || "<>,;\"\\".unicodeScalars.contains($0) }) else { return false }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
    }
}

/// Reading one output entry's values, with its problems reported where they are.
private struct OutputContext {
    let fields: [String: YAMLMappingEntry]
    let mark: SourceMark
    let directory: String
    let reader: ConfigValueReader

    func string(_ key: String) -> String? {
        fields[key].flatMap { reader.string($0.value, key: key, source: nil) }
    }

    func boolean(_ key: String) -> Bool? {
        fields[key].flatMap { reader.boolean($0.value, key: key, source: nil) }
    }

    func integer(_ key: String, in range: ClosedRange<Int>) -> Int? {
        fields[key].flatMap { reader.integer($0.value, key: key, source: nil, in: range) }
    }

    func strings(_ node: YAMLNode, key: String) -> [String] {
        let items: [YAMLNode]
        if case .sequence(let list, _) = node { items = list } else { items = [node] }
        return items.compactMap { reader.string($0, key: key, source: nil) }
    }

    /// A secret: checked for control characters, never quoted.
    func secret(_ key: String) -> String? {
        guard let value = string(key) else { return nil }
        if HTTPText.controlCharacterProblem(value) != nil {
            reader.report("'\(key)' holds a control character", at: fields[key]!.value.mark)
            return nil
        }
        return value
    }

    func address(_ key: String) -> String? {
        guard let value = string(key) else { return nil }
        guard ConfigLoader.isAddress(value) else {
            reader.report("'\(key)': '\(TerminalText.safe(value))' is not a mail address", at: fields[key]!.value.mark)
            return nil
        }
        return value
    }

    /// Not quoted in messages: a proxy URL may hold a password.
    func proxy() -> String? {
        guard let text = string("proxy") else { return nil }
        do {
            return try HTTPSourceOptions.checkProxy(text)
        } catch {
            reader.report("'proxy': not a usable proxy URL: \(error)", at: fields["proxy"]!.value.mark)
            return nil
        }
    }

    func path(_ key: String) -> String? {
        guard let value = string(key) else { return nil }
        let resolved = ConfigLoader.resolve(value, against: directory)
        guard SafeFile.exists(resolved) else {
            reader.report("'\(key)': no file at \(TerminalText.safe(resolved))", at: fields[key]!.value.mark)
            return nil
        }
        return resolved
    }

    func httpURL(_ key: String) -> String? {
        guard let node = fields[key]?.value else {
            reader.report("missing '\(key)' (an http:// or https:// URL)", at: mark)
            return nil
        }
        guard let url = reader.string(node, key: key, source: nil) else { return nil }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://"), HTTPText.controlCharacterProblem(url) == nil else {
            reader.report("'\(key)' must be an http:// or https:// URL", at: node.mark)
            return nil
        }
        return url
    }

    func template(_ key: String) -> OutputTemplate? {
        fields[key].flatMap { entry in reader.value(entry.value, key: key, what: "template", source: nil) { try OutputTemplate($0) } }
    }
}

extension HTTPTransport {
    /// The TLS and proxy settings an output may set.
    mutating func apply(proxy: String?, caFile: String?, insecure: Bool?) {
        if let proxy { self.proxy = proxy }
        if let caFile { self.caFile = caFile }
        if let insecure { self.insecure = insecure }
    }
}
