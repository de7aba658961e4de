extension ConfigLoader {
    static let httpLimitKeys = ["per_host", "per_host_streams", "min_delay", "queue_timeout"]

    /// The top-level `http:` block: fetchrun's per-host limits.
    func decodeHTTPLimits(_ node: YAMLNode, reader: ConfigValueReader) -> CurlHTTPClient.Configuration {
        var limits = CurlHTTPClient.Configuration()
        guard let entries = reader.mapping(node, key: "http", source: nil) else { return limits }
        reader.reportUnknownKeys(entries, known: Self.httpLimitKeys, source: nil, context: "'http'")
        for entry in entries {
            switch entry.key.value {
            case "per_host":
                limits.maxConnectionsPerHost = reader.integer(entry.value, key: "per_host", source: nil, in: 1...256) ?? limits.maxConnectionsPerHost
            case "per_host_streams":
                limits.streamsPerConnection = reader.integer(entry.value, key: "per_host_streams", source: nil, in: 1...1000) ?? limits.streamsPerConnection
            case "min_delay":
                limits.minDelayPerHost = reader.duration(entry.value, key: "min_delay", source: nil, allowZero: true) ?? limits.minDelayPerHost
            case "queue_timeout":
                limits.queueTimeout = reader.duration(entry.value, key: "queue_timeout", source: nil) ?? limits.queueTimeout
            default:
                break
            }
        }
        return limits
    }
}
