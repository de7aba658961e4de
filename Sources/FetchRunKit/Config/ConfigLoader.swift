import Foundation

/// Loads `sources.yaml`: YAML through libyaml, then typed and checked, every source's options
/// checked by its adapter.
///
/// Loading reports every problem it finds, not only the first, as a ``ConfigError``.
public struct ConfigLoader: Sendable {
    /// Source names become file names, so they are kept to a safe alphabet.
    public static let namePattern = "[a-z0-9][a-z0-9._-]{0,63}"
    static let topLevelKeys = ["state_dir", "state", "max_in_flight", "http", "downloads", "outputs", "listen", "browser", "log_format", "timezone", "defaults", "sources"]
    /// The keys every source reads, whatever its type.
    static let sharedKeys = ["deadline", "interval", "max_interval", "max_backoff", "keep", "identity", "history"]
    /// `defaults:` also sets the HTTP options of the sources whose adapter reads them.
    static let defaultsKeys = sharedKeys + HTTPSourceOptions.keys + routingKeys
    static let commonSourceKeys = ["name", "type", "enabled", "download", "tags", "report_updates"] + sharedKeys + routingKeys
    static let maximumKeep = 100_000
    /// 64 MiB holds about a million sources; anything bigger is not a config.
    static let maximumFileBytes = 64 << 20

    public var registry: AdapterRegistry
    /// The output types `outputs:` may name.
    public var outputTypes: OutputRegistry = .builtIn
    public var environment: [String: String]
    /// When set, problems that belong to one source (an unset `${VAR}` in it, an invalid
    /// option) reject that source alone — it is listed in ``FetchConfig/rejectedSources`` —
    /// as long as another source is valid. Problems anywhere else still fail the load. Off by
    /// default: `validate` and embedding programs see every problem as an error.
    public var keepsValidSources = false

    public init(registry: AdapterRegistry = .builtIn, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.registry = registry
        self.environment = environment
    }

    /// ``load(path:)`` off the cooperative pool, for async callers: loading reads the file and
    /// may ask plugins to `--describe` themselves (up to 0.7 s each), which blocks a thread.
    /// - Throws: ``ConfigError`` with every problem found.
    public func load(path: String) async throws(ConfigError) -> FetchConfig {
        let loaded = await BlockingWork.run { Result { () throws(ConfigError) in try self.load(path: path) } }
        return try loaded.get()
    }

    /// Reads and loads the file at `path`.
    /// - Throws: ``ConfigError`` when the file cannot be read or holds any problem.
    public func load(path: String) throws(ConfigError) -> FetchConfig {
        let data: Data
        do {
            // A config may be a symbolic link (to a dotfiles checkout, say); it must be a
            // regular file of a sane size, not a FIFO or /dev/zero that would block or never end.
            data = try SafeFile.read(path, maxBytes: Self.maximumFileBytes, followSymlinks: true)
        } catch {
            let hint = error.code == ENOENT ? "; `fetchrun init` writes a starter config, `fetchrun add URL` or `fetchrun import feeds.opml` one with your feeds" : ""
            throw ConfigError([ConfigDiagnostic(file: path, mark: nil, message: "cannot read the config file: \(error.description)\(hint)")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError([ConfigDiagnostic(file: path, mark: nil, message: "the config file is not UTF-8 text")])
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try load(text: text, file: path, directory: directory)
    }

    /// Loads config text; `directory` is what relative paths in it are relative to.
    /// - Throws: ``ConfigError`` listing every problem, in file order.
    public func load(text: String, file: String, directory: String) throws(ConfigError) -> FetchConfig {
        let (root, yamlDiagnostics) = YAMLReader(file: file).read(text)
        let reader = ConfigValueReader(file: file, environment: environment)
        var config = FetchConfig(file: file, stateDirectory: Self.resolve(".fetchrun", against: directory), defaults: SourceSettings(), sources: [])

        if let root {
            decode(root, into: &config, directory: directory, reader: reader)
        } else if yamlDiagnostics.isEmpty {
            reader.report("the config file is empty; it needs at least a 'sources:' list", at: nil)
        }
        let diagnostics = (yamlDiagnostics + reader.diagnostics).sortedByPlace()
        guard !diagnostics.isEmpty else { return config }
        if keepsValidSources, yamlDiagnostics.isEmpty, !config.sources.isEmpty, diagnostics.allSatisfy({ $0.sourceName != nil }) {
            var order: [String] = []
            var byName: [String: [ConfigDiagnostic]] = [:]
            for diagnostic in diagnostics {
                let name = diagnostic.sourceName!
                if byName[name] == nil { order.append(name) }
                byName[name, default: []].append(diagnostic)
            }
            config.rejectedSources = order.map { RejectedSource(name: $0, diagnostics: byName[$0]!) }
            return config
        }
        throw ConfigError(diagnostics)
    }

    private func decode(_ root: YAMLNode, into config: inout FetchConfig, directory: String, reader: ConfigValueReader) {
        guard case .mapping(let entries, _) = root else {
            reader.report("the config file must be a mapping with a 'sources:' list, not \(root.kindDescription)", at: root.mark)
            return
        }
        reader.reportUnknownKeys(entries, known: Self.topLevelKeys, source: nil)
        let top = Dictionary(entries.map { ($0.key.value, $0) }, uniquingKeysWith: { first, _ in first })
        var httpDefaultsText = ""

        if let node = top["state_dir"]?.value, let path = reader.string(node, key: "state_dir", source: nil) {
            if path.isEmpty {
                reader.report("'state_dir' must not be empty", at: node.mark)
            } else {
                config.stateDirectory = Self.resolve(path, against: directory)
            }
        }
        if let node = top["state"]?.value, let url = reader.string(node, key: "state", source: nil) {
            let lowered = url.lowercased()
            if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
                config.stateURL = url
            } else {
                reader.report("'state' must be a postgres://user@host[:port]/database URL (for a folder, use 'state_dir')", at: node.mark)
            }
        }
        if let node = top["max_in_flight"]?.value, let value = reader.integer(node, key: "max_in_flight", source: nil, in: 1...10_000) {
            config.maxInFlight = value
        }
        if let node = top["http"]?.value {
            config.http = decodeHTTPLimits(node, reader: reader)
        }
        if let node = top["downloads"]?.value {
            config.downloads = decodeDownloadLimits(node, reader: reader)
        }
        if let node = top["listen"]?.value {
            config.listen = decodeListen(node, reader: reader)
        }
        if let node = top["browser"]?.value {
            config.browser = decodeBrowser(node, reader: reader)
        }
        if let node = top["log_format"]?.value, let format = reader.string(node, key: "log_format", source: nil) {
            if ["text", "json"].contains(format) {
                config.logFormat = format
            } else {
                reader.report("'log_format' must be text or json, not '\(TerminalText.safe(format))'", at: node.mark)
            }
        }
        if let node = top["timezone"]?.value, let name = reader.string(node, key: "timezone", source: nil) {
            if let zone = TimeZone(identifier: name) {
                config.timeZone = zone
            } else {
                reader.report("'timezone': unknown time zone '\(TerminalText.safe(name, maximumLength: 60))'; use an IANA name such as Europe/Berlin or UTC", at: node.mark)
            }
        }
        var outputNames: [String] = []
        if let node = top["outputs"]?.value {
            config.outputs = decodeOutputs(node, directory: directory, timeZone: config.timeZone, declared: &outputNames, reader: reader)
        }
        var routingDefaults = SourceRouting()
        if let node = top["defaults"]?.value, let defaults = reader.mapping(node, key: "defaults", source: nil) {
            reader.reportUnknownKeys(defaults, known: Self.defaultsKeys, source: nil, context: "'defaults'")
            var values = SourceSettings()
            readShared(defaults, into: &values, source: nil, reader: reader)
            config.defaults = values
            config.httpDefaults.apply(defaults, configDirectory: directory, source: nil, reader: reader)
            decodeRouting(defaults, into: &routingDefaults, outputNames: outputNames, source: nil, reader: reader)
            httpDefaultsText = Self.canonical(.mapping(defaults.filter { !Self.sharedKeys.contains($0.key.value) }, mark: node.mark))
        }
        guard let sourcesEntry = top["sources"] else {
            reader.report("missing 'sources:' — the list of sources to fetch", at: root.mark)
            return
        }
        guard case .sequence(let nodes, _) = sourcesEntry.value else {
            reader.report("'sources' must be a list of sources (lines starting with '- '), not \(sourcesEntry.value.kindDescription)", at: sourcesEntry.value.mark)
            return
        }
        var firstMarkByName: [String: SourceMark] = [:]
        firstMarkByName.reserveCapacity(nodes.count)
        // A plugin type is looked up (and asked --describe) once per load, however many sources use it.
        var descriptors: [String: AdapterDescriptor?] = [:]
        // Most sources share their settings (the defaults): their text is written once per load.
        var settingsTexts: [SourceSettings: String] = [:]
        defer {
            // An output written from the history lists the changes of the sources that send to it.
            for index in config.outputs.indices where config.outputs[index].output is any HistoryOutput {
                let output = config.outputs[index]
                config.outputs[index].historySources = config.sources.filter { source in
                    output.events.contains { !source.routing.outputs(for: $0, among: [output]).isEmpty }
                }.map(\.name)
            }
            // By index: a `for source in` copied every source (a large value) to look at one field.
            for index in config.sources.indices where config.sources[index].download != nil {
                config.downloads.folders.insert(config.sources[index].download!.directory)
                // Only the ones that differ from plain defaults: most configs need no entry.
                if let transport = (config.sources[index].adapter as? RSSAdapter)?.fetcher.transport.anonymous, transport != HTTPTransport() {
                    config.downloads.sourceTransports[config.sources[index].name] = transport
                }
            }
        }
        for (index, node) in nodes.enumerated() {
            if var source = decodeSource(node, index: index, defaults: config.defaults, httpDefaults: config.httpDefaults, routing: routingDefaults, outputNames: outputNames, directory: directory, firstMarkByName: &firstMarkByName, descriptors: &descriptors, settingsTexts: &settingsTexts, reader: reader) {
                // The HTTP defaults are part of what the source does.
                if !httpDefaultsText.isEmpty { source.fingerprint += "|" + httpDefaultsText }
                config.sources.append(source)
            }
        }
    }

    /// One source, or `nil` when it has any problem (all of them reported). Names are checked
    /// for duplicates against `firstMarkByName` even when the rest of the source is invalid.
    private func decodeSource(_ node: YAMLNode, index: Int, defaults: SourceSettings, httpDefaults: HTTPSourceOptions, routing routingDefaults: SourceRouting, outputNames: [String], directory: String, firstMarkByName: inout [String: SourceMark], descriptors: inout [String: AdapterDescriptor?], settingsTexts: inout [SourceSettings: String], reader: ConfigValueReader) -> SourceConfig? {
        guard case .mapping(let entries, let mark) = node else {
            reader.report("source #\(index + 1) must be a mapping with at least 'name' and 'type', not \(node.kindDescription)", at: node.mark)
            return nil
        }
        let errorsBefore = reader.diagnostics.count

        let nameEntry = entries.entry("name"), typeEntry = entries.entry("type")
        let name: String? = nameEntry.flatMap { entry in
            guard let name = reader.string(entry.value, key: "name", source: nil) else { return nil }
            guard Self.isValidName(name) else {
                reader.report("invalid source name '\(name)': it names the snapshot file, so it must match \(Self.namePattern) (lower-case letters, digits, '.', '_', '-'; no '/' or '..')", at: entry.value.mark)
                return nil
            }
            if let first = firstMarkByName[name] {
                reader.report("duplicate source name '\(name)' (first used at \(first))", at: entry.value.mark)
                return nil
            }
            firstMarkByName[name] = entry.value.mark
            return name
        }
        if nameEntry == nil {
            reader.report("source #\(index + 1) has no 'name'", at: mark)
        }
        let label = name ?? "#\(index + 1)"

        var descriptor: AdapterDescriptor?
        if let entry = typeEntry, let type = reader.string(entry.value, key: "type", source: label) {
            if let known = descriptors[type] {
                descriptor = known
            } else {
                descriptor = registry.descriptor(for: type, configDirectory: directory, environment: environment)
                descriptors[type] = descriptor
            }
            if descriptor == nil {
                var message = "unknown adapter type '\(type)'"
                if let suggestion = ConfigValueReader.nearest(to: type, among: registry.typeNames) {
                    message += " (did you mean '\(suggestion)'?)"
                }
                message += "; known types: \(registry.typeNames.joined(separator: ", ")), or a plugin \(PluginLocator.prefix)\(type) in plugins/ or on PATH"
                reader.report(message, at: entry.value.mark, source: label)
            } else if let problem = descriptor?.problem {
                reader.report(problem, at: entry.value.mark, source: label)
            }
        } else if typeEntry == nil {
            reader.report("missing 'type' (one of: \(registry.typeNames.joined(separator: ", ")))", at: mark, source: label)
        }

        var enabled = true
        if let node = entries.entry("enabled")?.value, let value = reader.boolean(node, key: "enabled", source: label) {
            enabled = value
        }
        var tags: [String] = []
        if let node = entries.entry("tags")?.value { tags = decodeTags(node, source: label, reader: reader) }
        var reportsUpdates = false
        if let node = entries.entry("report_updates")?.value, let value = reader.boolean(node, key: "report_updates", source: label) {
            reportsUpdates = value
        }
        var settings = defaults
        readShared(entries, into: &settings, source: label, reader: reader)
        var routing = routingDefaults
        decodeRouting(entries, into: &routing, outputNames: outputNames, source: label, reader: reader)
        let download = entries.entry("download").flatMap { decodeDownload($0.value, sourceName: name, directory: directory, source: label, reader: reader) }

        if case .every(let interval) = settings.interval, let maxInterval = settings.maxInterval, maxInterval < interval {
            let mark = entries.entry("max_interval")?.value.mark ?? mark
            reader.report("'max_interval' (\(DurationText.format(maxInterval))) is shorter than 'interval' (\(DurationText.format(interval)))", at: mark, source: label)
        }

        // Without a known type the adapter's own keys are unknown too; one error for the type says enough.
        guard let descriptor else { return nil }
        if !descriptor.acceptsUndeclaredOptions,
           entries.contains(where: { !Self.commonSourceKeys.contains($0.key.value) && !descriptor.optionNames.contains($0.key.value) }) {
            reader.reportUnknownKeys(entries, known: Self.commonSourceKeys + descriptor.options.map(\.name), source: label)
        }

        let adapterEntries = entries.filter { !Self.commonSourceKeys.contains($0.key.value) }
        let options = AdapterOptions(sourceName: label, configDirectory: directory, mark: mark, entries: adapterEntries, declared: descriptor.optionNames, reader: reader, httpDefaults: httpDefaults)
        let adapter: (any SourceAdapter)?
        do {
            adapter = try descriptor.make(options)
        } catch let diagnostic as ConfigDiagnostic {
            reader.report(diagnostic.message, at: diagnostic.mark ?? mark, source: label)
            adapter = nil
        } catch {
            reader.report("\(error)", at: mark, source: label)
            adapter = nil
        }
        guard let name, let adapter, reader.diagnostics.count == errorsBefore else { return nil }
        let settingsText: String
        if let known = settingsTexts[settings] {
            settingsText = known
        } else {
            settingsText = settings.fingerprintText
            settingsTexts[settings] = settingsText
        }
        var source = SourceConfig(name: name, adapter: adapter, settings: settings, type: descriptor.type, enabled: enabled, download: download, fingerprint: settingsText + "|" + Self.canonical(node))
        source.mark = mark
        source.tags = tags
        if descriptor.optionNames.contains("url") { source.shownURL = options.writtenText("url").map(HTTPText.removingCredentials) }
        source.reportsUpdates = reportsUpdates
        source.routing = routing
        return source
    }

    /// The keys `defaults:` and a source share: `deadline`, `interval`, `max_interval`,
    /// `max_backoff`, `keep`, `identity`, `history`.
    private func readShared(_ entries: [YAMLMappingEntry], into settings: inout SourceSettings, source: String?, reader: ConfigValueReader) {
        for entry in entries {
            switch entry.key.value {
            case "deadline":
                if let value = reader.duration(entry.value, key: "deadline", source: source) { settings.deadline = value }
            case "interval":
                if case .scalar(let scalar) = entry.value, scalar.value == "never" {
                    settings.interval = .never
                } else if let value = reader.duration(entry.value, key: "interval", source: source) {
                    settings.interval = .every(value)
                }
            case "max_interval":
                if let value = reader.duration(entry.value, key: "max_interval", source: source) { settings.maxInterval = value }
            case "max_backoff":
                if let value = reader.duration(entry.value, key: "max_backoff", source: source) { settings.maxBackoff = value }
            case "keep":
                if let value = reader.integer(entry.value, key: "keep", source: source, in: 1...Self.maximumKeep) { settings.keep = value }
            case "identity":
                let choices = ItemIdentity.allCases.map(\.rawValue)
                if let value = reader.value(entry.value, key: "identity", what: "item identity", source: source, parse: { text in
                    guard let identity = ItemIdentity(rawValue: text) else { throw ValueError("it must be one of " + choices.joined(separator: ", ")) }
                    return identity
                }) { settings.identity = value }
            case "history":
                settings.history = decodeHistory(entry.value, over: settings.history, source: source, reader: reader)
            default:
                break
            }
        }
    }

    static let historyKeys = ["keep", "max_age"]

    /// `history: off`, or `history: { keep: 1000, max_age: 90d }` over `retention` (what
    /// `defaults:` said, for a source). A mapping turns history on again.
    private func decodeHistory(_ node: YAMLNode, over retention: HistoryRetention, source: String?, reader: ConfigValueReader) -> HistoryRetention {
        if case .scalar(let scalar) = node, ["off", "false", "no"].contains(scalar.value.lowercased()) {
            return .off
        }
        guard case .mapping = node else {
            reader.report("'history' must be off, or a mapping such as { keep: 1000, max_age: 90d }", at: node.mark, source: source)
            return retention
        }
        guard let entries = reader.mapping(node, key: "history", source: source) else { return retention }
        reader.reportUnknownKeys(entries, known: Self.historyKeys, source: source, context: "'history'")
        var retention = retention
        retention.isEnabled = true
        for entry in entries {
            switch entry.key.value {
            case "keep":
                if let value = reader.integer(entry.value, key: "keep", source: source, in: 1...HistoryRetention.maximumKeep) { retention.keep = value }
            case "max_age":
                if let value = reader.duration(entry.value, key: "max_age", source: source) { retention.maxAge = value }
            default:
                break
            }
        }
        return retention
    }

    /// A node's content without its places, keys sorted: the same text for the same meaning.
    static func canonical(_ node: YAMLNode) -> String {
        var text = ""
        appendCanonical(node, to: &text)
        return text
    }

    /// Written into one string: one per source of every load, and joining the parts' own
    /// strings was a tenth of reading a source.
    private static func appendCanonical(_ node: YAMLNode, to text: inout String) {
        switch node {
        case .scalar(let scalar):
            if !scalar.isPlain { text += "'" }
            text += scalar.value
        case .sequence(let items, _):
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                appendCanonical(item, to: &text)
            }
            text += "]"
        case .mapping(let entries, _):
            text += "{"
            for (index, entry) in entries.sorted(by: { $0.key.value < $1.key.value }).enumerated() {
                if index > 0 { text += "," }
                text += entry.key.value
                text += ":"
                appendCanonical(entry.value, to: &text)
            }
            text += "}"
        }
    }

    public static func isValidName(_ name: String) -> Bool {
        // By bytes: it runs for every source of a config, and Foundation's `contains` bridged
        // each name to an NSString.
        let bytes = name.utf8
        guard (1...64).contains(bytes.count) else { return false }
        var previous: UInt8 = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): break
            case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                // Not first, and no "..".
                guard previous != 0, !(byte == UInt8(ascii: ".") && previous == byte) else { return false }
            default: return false
            }
            previous = byte
        }
        return true
    }

    static func resolve(_ path: String, against directory: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded).standardizedFileURL.path }
        return URL(fileURLWithPath: directory).appendingPathComponent(expanded).standardizedFileURL.path
    }
}

extension ConfigLoader {
    /// A source's `tags`: a list of labels (an OPML import writes its folders here), or one.
    func decodeTags(_ node: YAMLNode, source: String, reader: ConfigValueReader) -> [String] {
        let items: [YAMLNode]
        switch node {
        case .sequence(let list, _): items = list
        case .scalar: items = [node]
        case .mapping:
            reader.report("'tags' must be a list of labels such as [news, linux], not a mapping", at: node.mark, source: source)
            return []
        }
        var tags: [String] = [], seen = Set<String>()
        for item in items {
            guard let text = reader.string(item, key: "tags", source: source) else { continue }
            let tag = text.trimmingCharacters(in: .whitespaces)
            guard !tag.isEmpty else {
                reader.report("'tags': an empty tag", at: item.mark, source: source)
                continue
            }
            if seen.insert(tag).inserted { tags.append(tag) }
        }
        return tags
    }
}
