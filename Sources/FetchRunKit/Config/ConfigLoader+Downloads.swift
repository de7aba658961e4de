extension ConfigLoader {
    static let downloadKeys = ["dir", "types", "max_size", "keep", "max_rate"]
    static let downloadLimitKeys = ["max_in_flight", "per_host", "stall_timeout", "connect_timeout"]

    /// A source's `download:` block; `nil` when it has problems (reported).
    func decodeDownload(_ node: YAMLNode, sourceName: String?, directory: String, source: String, reader: ConfigValueReader) -> DownloadSettings? {
        guard let entries = reader.mapping(node, key: "download", source: source) else { return nil }
        reader.reportUnknownKeys(entries, known: Self.downloadKeys, source: source, context: "'download'")
        let errorsBefore = reader.diagnostics.count
        var settings = DownloadSettings(directory: Self.resolve("downloads/\(sourceName ?? "source")", against: directory))
        for entry in entries {
            switch entry.key.value {
            case "dir":
                if let path = reader.string(entry.value, key: "dir", source: source) {
                    if path.isEmpty {
                        reader.report("'dir' must not be empty", at: entry.value.mark, source: source)
                    } else {
                        settings.directory = Self.resolve(path, against: directory)
                    }
                }
            case "types":
                settings.types = decodeTypes(entry.value, source: source, reader: reader) ?? settings.types
            case "max_size":
                if let size = reader.value(entry.value, key: "max_size", what: "size", source: source, parse: { try ByteSizeText.parse($0) }) {
                    settings.maxSize = size
                }
            case "keep":
                settings.keep = reader.integer(entry.value, key: "keep", source: source, in: 1...Self.maximumKeep)
            case "max_rate":
                settings.maxRate = reader.value(entry.value, key: "max_rate", what: "rate", source: source) { try ByteSizeText.parse($0, rate: true) }
            default:
                break
            }
        }
        return reader.diagnostics.count == errorsBefore ? settings : nil
    }

    /// `types: [audio/*, video/mp4]` (or one pattern as a plain string).
    private func decodeTypes(_ node: YAMLNode, source: String, reader: ConfigValueReader) -> [String]? {
        let items: [YAMLNode]
        switch node {
        case .sequence(let list, _): items = list
        case .scalar: items = [node]
        case .mapping:
            reader.report("'types' must be a list of MIME patterns such as [audio/*, video/mp4], not a mapping", at: node.mark, source: source)
            return nil
        }
        var patterns: [String] = []
        for item in items {
            guard let text = reader.string(item, key: "types", source: source) else { continue }
            let pattern = text.trimmingCharacters(in: .whitespaces).lowercased()
            let halves = pattern.split(separator: "/", omittingEmptySubsequences: false)
            guard pattern == "*" || (halves.count == 2 && !halves[0].isEmpty && !halves[1].isEmpty && (halves[0] != "*" || halves[1] == "*")) else {
                reader.report("'types': '\(text)' is not a MIME pattern; write it like audio/*, video/mp4 or */*", at: item.mark, source: source)
                continue
            }
            patterns.append(pattern)
        }
        if items.isEmpty { reader.report("'types' is empty: no enclosure would ever be downloaded", at: node.mark, source: source) }
        return patterns
    }

    /// The top-level `downloads:` block.
    func decodeDownloadLimits(_ node: YAMLNode, reader: ConfigValueReader) -> DownloadLimits {
        var limits = DownloadLimits()
        guard let entries = reader.mapping(node, key: "downloads", source: nil) else { return limits }
        reader.reportUnknownKeys(entries, known: Self.downloadLimitKeys, source: nil, context: "'downloads'")
        for entry in entries {
            switch entry.key.value {
            case "max_in_flight":
                limits.maxInFlight = reader.integer(entry.value, key: "max_in_flight", source: nil, in: 1...256) ?? limits.maxInFlight
            case "per_host":
                limits.maxPerHost = reader.integer(entry.value, key: "per_host", source: nil, in: 1...64) ?? limits.maxPerHost
            case "stall_timeout":
                limits.stallTimeout = reader.duration(entry.value, key: "stall_timeout", source: nil) ?? limits.stallTimeout
            case "connect_timeout":
                limits.connectTimeout = reader.duration(entry.value, key: "connect_timeout", source: nil) ?? limits.connectTimeout
            default:
                break
            }
        }
        return limits
    }
}
