extension ConfigLoader {
    static let listenKeys = ["address", "token", "allow", "feed_token", "dashboard"]

    /// The top-level `listen:` block: `address`, and `token` or `allow` for an address that is
    /// not loopback; `feed_token` for feed readers; `dashboard` (`on`, `read_only`, `off`). A
    /// token's value is never echoed.
    func decodeListen(_ node: YAMLNode, reader: ConfigValueReader) -> ListenSettings? {
        guard let entries = reader.mapping(node, key: "listen", source: nil) else { return nil }
        reader.reportUnknownKeys(entries, known: Self.listenKeys, source: nil, context: "'listen'")
        guard let addressEntry = entries.entry("address") else {
            reader.report("'listen' needs 'address' (HOST:PORT, for example 127.0.0.1:9464)", at: node.mark)
            return nil
        }
        guard let text = reader.string(addressEntry.value, key: "address", source: nil) else { return nil }
        var settings: ListenSettings
        do {
            let (host, port) = try ListenSettings.address(text)
            settings = ListenSettings(host: host, port: port)
        } catch {
            reader.report("'listen' 'address': \(error)", at: addressEntry.value.mark)
            return nil
        }
        for entry in entries {
            switch entry.key.value {
            case "token", "feed_token":
                let key = entry.key.value
                guard let token = reader.string(entry.value, key: key, source: nil) else { continue }
                if token.isEmpty || token.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F }) {
                    reader.report("'listen' '\(key)' must be a non-empty value without spaces or control characters", at: entry.value.mark)
                } else if key == "token" {
                    settings.token = token
                } else {
                    settings.feedToken = token
                }
            case "dashboard":
                guard let text = reader.string(entry.value, key: "dashboard", source: nil) else { continue }
                if let mode = ListenSettings.DashboardMode(rawValue: text) {
                    settings.dashboard = mode
                } else {
                    reader.report("'listen' 'dashboard' must be on, read_only or off, not '\(TerminalText.safe(text, maximumLength: 40))'", at: entry.value.mark)
                }
            case "allow":
                guard case .sequence(let items, _) = entry.value else {
                    reader.report("'listen' 'allow' must be a list of networks, for example [10.0.0.0/8, 192.168.1.7]", at: entry.value.mark)
                    continue
                }
                for item in items {
                    guard let text = reader.string(item, key: "allow", source: nil) else { continue }
                    do {
                        settings.allow.append(try IPNetwork(text))
                    } catch {
                        reader.report("'listen' 'allow': \(error)", at: item.mark)
                    }
                }
            default:
                break
            }
        }
        if let problem = settings.problem { reader.report(problem, at: node.mark) }
        return settings
    }
}
