import Foundation

extension ConfigLoader {
    static let browserKeys = ["command", "url", "tabs"]

    /// The top-level `browser:` block (``BrowserSettings``).
    func decodeBrowser(_ node: YAMLNode, reader: ConfigValueReader) -> BrowserSettings {
        var settings = BrowserSettings()
        guard let entries = reader.mapping(node, key: "browser", source: nil) else { return settings }
        reader.reportUnknownKeys(entries, known: Self.browserKeys, source: nil, context: "'browser'")
        for entry in entries {
            switch entry.key.value {
            case "command":
                var words: [String] = []
                switch entry.value {
                case .sequence(let items, _):
                    for item in items {
                        if let word = reader.string(item, key: "command", source: nil) { words.append(word) }
                    }
                default:
                    if let word = reader.string(entry.value, key: "command", source: nil) { words.append(word) }
                }
                if words.first.map({ $0.isEmpty }) ?? true {
                    reader.report("'browser' 'command' must name a program, e.g. [chromium] or [/usr/bin/chromium, --lang=de]", at: entry.value.mark)
                } else if let problem = words.lazy.compactMap(HTTPText.controlCharacterProblem).first {
                    reader.report("'browser' 'command': an argument \(problem)", at: entry.value.mark)
                } else {
                    settings.command = words
                }
            case "url":
                guard let text = reader.string(entry.value, key: "url", source: nil) else { continue }
                let lowered = text.lowercased()
                if ["ws://", "wss://", "http://", "https://"].contains(where: lowered.hasPrefix), HTTPText.controlCharacterProblem(text) == nil {
                    settings.url = text
                } else {
                    reader.report("'browser' 'url' must be a ws:// or wss:// DevTools URL, or http://host:port of a browser started with --remote-debugging-port", at: entry.value.mark)
                }
            case "tabs":
                if let tabs = reader.integer(entry.value, key: "tabs", source: nil, in: 1...64) { settings.tabs = tabs }
            default:
                break
            }
        }
        if settings.command != nil, settings.url != nil {
            reader.report("'browser' takes 'command' (a browser fetchrun starts) or 'url' (one that runs already), not both", at: node.mark)
        }
        return settings
    }
}
