import Foundation

/// The keys of one `outputs:` entry, as its output reads them while the config loads.
///
/// Accessors return `nil` when a key is absent or invalid; an invalid one is recorded with its
/// line:column, and loading goes on so that `fetchrun validate` lists every error. Messages
/// never quote a secret (a password, a token, a proxy URL).
public final class OutputOptions {
    /// What every output takes, whatever its type.
    public static let commonKeys = ["name", "type", "events", "alert_after", "template", "timeout", "give_up_attempts", "give_up_after"]

    /// The output's `name`.
    public let outputName: String
    /// The folder of the config file, for keys that name files relative to it.
    public let configDirectory: String
    /// The config's `timezone:`: where a digest's schedule and a mail's dates are read.
    package let timeZone: TimeZone
    /// Where the entry starts in the file.
    public let mark: SourceMark
    /// `timeout`: the longest one delivery attempt may take (default 60 s).
    public let timeout: Duration
    /// `template`: the text to send per delivery, instead of the output's own form.
    package let template: OutputTemplate?

    private let fields: [String: YAMLMappingEntry]
    private let reader: ConfigValueReader
    private var digestRead: (combined: Bool, schedule: DigestSchedule?)?

    init(outputName: String, configDirectory: String, timeZone: TimeZone = .current, mark: SourceMark, fields: [String: YAMLMappingEntry], reader: ConfigValueReader) {
        self.outputName = outputName
        self.configDirectory = configDirectory
        self.timeZone = timeZone
        self.mark = mark
        self.fields = fields
        self.reader = reader
        timeout = fields["timeout"].flatMap { reader.duration($0.value, key: "timeout", source: nil) } ?? .seconds(60)
        template = fields["template"].flatMap { entry in reader.value(entry.value, key: "template", what: "template", source: nil) { try OutputTemplate($0) } }
    }

    public func contains(_ key: String) -> Bool {
        fields[key] != nil
    }

    public func string(_ key: String) -> String? {
        fields[key].flatMap { reader.string($0.value, key: key, source: nil) }
    }

    /// The key's text as the config file writes it, `${VAR}` unexpanded (a list's items
    /// joined by spaces): what is printed and stored in place of the value, which may hold a
    /// secret from the environment (a webhook URL's token).
    public func written(_ key: String) -> String? {
        func text(_ node: YAMLNode) -> String? {
            if case .scalar(let scalar) = node { return scalar.value }
            return nil
        }
        guard let node = fields[key]?.value else { return nil }
        if case .sequence(let list, _) = node { return list.compactMap(text).joined(separator: " ") }
        return text(node)
    }

    /// A string that must be there: its absence is reported with `what` it should be.
    public func required(_ key: String, _ what: String) -> String? {
        guard contains(key) else {
            report("output '\(outputName)': missing '\(key)' (\(what))")
            return nil
        }
        return string(key)
    }

    public func boolean(_ key: String) -> Bool? {
        fields[key].flatMap { reader.boolean($0.value, key: key, source: nil) }
    }

    /// `digest`: `true` (everything due in one message), `false`, or a schedule
    /// (``DigestSchedule``), which also makes one message. Read once, however often it is asked.
    package func digest() -> (combined: Bool, schedule: DigestSchedule?) {
        if let digestRead { return digestRead }
        var read: (combined: Bool, schedule: DigestSchedule?) = (false, nil)
        if let node = fields["digest"]?.value {
            let zone = timeZone
            let value = reader.value(node, key: "digest", what: "digest schedule", source: nil) { text -> (Bool, DigestSchedule?) in
                switch text.lowercased() {
                case "true": return (true, nil)
                case "false": return (false, nil)
                default: return (true, try DigestSchedule(text, timeZone: zone))
                }
            }
            if let value { read = value }
        }
        digestRead = read
        return read
    }

    public func integer(_ key: String, in range: ClosedRange<Int>) -> Int? {
        fields[key].flatMap { reader.integer($0.value, key: key, source: nil, in: range) }
    }

    /// A list of strings (or one string).
    public func strings(_ key: String) -> [String]? {
        guard let node = fields[key]?.value else { return nil }
        let items: [YAMLNode]
        if case .sequence(let list, _) = node { items = list } else { items = [node] }
        return items.compactMap { reader.string($0, key: key, source: nil) }
    }

    /// A secret: checked for control characters, never quoted.
    public func secret(_ key: String) -> String? {
        guard let value = string(key) else { return nil }
        guard HTTPText.controlCharacterProblem(value) == nil else {
            report("'\(key)' holds a control character", key: key)
            return nil
        }
        return value
    }

    /// `local@domain`: nothing that could end a header line or an SMTP command.
    public func address(_ key: String) -> String? {
        guard let value = string(key) else { return nil }
        guard Self.isAddress(value) else {
            report("'\(key)': '\(TerminalText.safe(value))' is not a mail address", key: key)
            return nil
        }
        return value
    }

    /// Mail addresses, each checked like ``address(_:)``.
    public func addresses(_ key: String) -> [String]? {
        strings(key)?.filter { address in
            guard Self.isAddress(address) else {
                report("'\(key)': '\(TerminalText.safe(address))' is not a mail address", key: key)
                return false
            }
            return true
        }
    }

    static func isAddress(_ text: String) -> Bool {
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || "<>,;\"\\".unicodeScalars.contains($0) }) else { return false }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
    }

    /// An `http://` or `https://` URL, which must be there.
    public func httpURL(_ key: String) -> String? {
        guard let node = fields[key]?.value else {
            report("missing '\(key)' (an http:// or https:// URL)")
            return nil
        }
        guard let url = reader.string(node, key: key, source: nil) else { return nil }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://"), HTTPText.controlCharacterProblem(url) == nil else {
            report("'\(key)' must be an http:// or https:// URL", key: key)
            return nil
        }
        return url
    }

    /// HTTP headers, `Name: value`: names are tokens, values hold no control character (and
    /// are never quoted).
    public func headers(_ key: String) -> [(name: String, value: String)] {
        guard let node = fields[key]?.value, let map = reader.mapping(node, key: key, source: nil) else { return [] }
        var headers: [(name: String, value: String)] = []
        for entry in map {
            guard let value = reader.string(entry.value, key: "\(key).\(entry.key.value)", source: nil) else { continue }
            if !HTTPText.isHeaderName(entry.key.value) {
                reader.report("header '\(TerminalText.safe(entry.key.value))' is not a valid header name", at: entry.key.mark)
            } else if let problem = HTTPText.controlCharacterProblem(value) {
                reader.report("header '\(entry.key.value)': its value \(problem)", at: entry.value.mark)
            } else {
                headers.append((entry.key.value, value))
            }
        }
        return headers
    }

    /// A template with placeholders (``OutputTemplate``), such as a mail's `subject`.
    package func template(_ key: String) -> OutputTemplate? {
        fields[key].flatMap { entry in reader.value(entry.value, key: key, what: "template", source: nil) { try OutputTemplate($0) } }
    }

    /// `proxy`, `ca_file` and `insecure`, for outputs that reach the network.
    package func transport(proxy allowsProxy: Bool = true) -> HTTPTransport {
        var transport = HTTPTransport()
        if allowsProxy, let text = string("proxy") {
            do {
                transport.proxy = try HTTPSourceOptions.checkProxy(text)
            } catch {
                // Not quoted: a proxy URL may hold a password.
                report("'proxy': not a usable proxy URL: \(error)", key: "proxy")
            }
        }
        if let file = string("ca_file") {
            let resolved = ConfigLoader.resolve(file, against: configDirectory)
            if SafeFile.exists(resolved) { transport.caFile = resolved } else { report("'ca_file': no file at \(TerminalText.safe(resolved))", key: "ca_file") }
        }
        if let insecure = boolean("insecure") { transport.insecure = insecure }
        return transport
    }

    /// Records a problem with `key` (or the whole entry when `nil`).
    public func report(_ message: String, key: String? = nil) {
        reader.report(message, at: key.flatMap { fields[$0]?.value.mark } ?? mark)
    }
}
