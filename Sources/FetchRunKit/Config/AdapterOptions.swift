/// The options of one source, as its adapter reads them while the config loads.
///
/// Accessors return `nil` when an option is absent or invalid; an invalid one is recorded
/// with its line:column and the source's name, and loading goes on so that `fetchrun validate`
/// lists every error. An adapter reads only the options it declares in
/// ``SourceAdapter/options``; keys it does not declare are reported as unknown for it.
public final class AdapterOptions {
    /// The source's `name`.
    public let sourceName: String
    /// The folder of the config file, for options that name files relative to it.
    public let configDirectory: String
    /// Where the source's entry starts in the file.
    public let mark: SourceMark

    /// The source's own keys, as written (looked up with `entry(_:)`).
    private let entries: [YAMLMappingEntry]
    private let reader: ConfigValueReader
    private let declared: Set<String>
    /// What `defaults:` sets for HTTP sources.
    private let httpDefaults: HTTPSourceOptions

    /// - Parameter declared: the names of the options the adapter declares (``AdapterDescriptor``
    ///   keeps them as a set, made once per type rather than once per source).
    init(sourceName: String, configDirectory: String, mark: SourceMark, entries: [YAMLMappingEntry], declared: Set<String>, reader: ConfigValueReader, httpDefaults: HTTPSourceOptions = HTTPSourceOptions()) {
        self.httpDefaults = httpDefaults
        self.entries = entries
        self.sourceName = sourceName
        self.configDirectory = configDirectory
        self.mark = mark
        self.reader = reader
        self.declared = declared
    }

    /// Whether the source sets `key` at all.
    public func contains(_ key: String) -> Bool {
        node(key) != nil
    }

    /// Where `key`'s value is written, for messages about it.
    public func mark(of key: String) -> SourceMark? {
        node(key)?.mark
    }

    /// Where `member` of the mapping `key` is written (`items: { title: … }`), for messages
    /// about one member; `nil` when `key` is not a mapping or lacks it.
    public func mark(of key: String, member: String) -> SourceMark? {
        guard case .mapping(let members, _)? = node(key) else { return nil }
        return members.entry(member)?.value.mark
    }

    /// The option's text as the file writes it, `${VAR}` unexpanded: safe to show in messages.
    public func writtenText(_ key: String) -> String? {
        if case .scalar(let scalar)? = node(key) { return scalar.value }
        return nil
    }

    public func string(_ key: String) -> String? {
        node(key).flatMap { reader.string($0, key: key, source: sourceName) }
    }

    /// A positive duration such as `30s`.
    public func duration(_ key: String) -> Duration? {
        node(key).flatMap { reader.duration($0, key: key, source: sourceName) }
    }

    public func integer(_ key: String, in range: ClosedRange<Int>) -> Int? {
        node(key).flatMap { reader.integer($0, key: key, source: sourceName, in: range) }
    }

    public func number(_ key: String, in range: ClosedRange<Double>) -> Double? {
        node(key).flatMap { reader.number($0, key: key, source: sourceName, in: range) }
    }

    public func boolean(_ key: String) -> Bool? {
        node(key).flatMap { reader.boolean($0, key: key, source: sourceName) }
    }

    /// A mapping of strings, such as HTTP `headers`.
    public func stringMap(_ key: String) -> [String: String]? {
        guard let node = node(key), let entries = reader.mapping(node, key: key, source: sourceName) else { return nil }
        var result: [String: String] = [:]
        for entry in entries {
            if let value = reader.string(entry.value, key: "\(key).\(entry.key.value)", source: sourceName) {
                result[entry.key.value] = value
            }
        }
        return result
    }

    /// A list of strings, such as a command line.
    public func stringList(_ key: String) -> [String]? {
        guard let node = node(key) else { return nil }
        guard case .sequence(let items, _) = node else {
            reader.report("'\(key)' must be a list (such as [a, b]), not \(node.kindDescription)", at: node.mark, source: sourceName)
            return nil
        }
        return items.compactMap { reader.string($0, key: key, source: sourceName) }
    }

    /// The source's own options (those beyond `name`, `type` and the scheduling keys) as JSON,
    /// `${VAR}` expanded, leaving out `excluded`: what an external adapter receives. Plain
    /// `true`/`false` and numbers become JSON booleans and numbers.
    public func jsonOptions(excluding excluded: Set<String> = []) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for entry in entries where !excluded.contains(entry.key.value) {
            result[entry.key.value] = json(entry.value, key: entry.key.value)
        }
        return result
    }

    private func json(_ node: YAMLNode, key: String) -> JSONValue {
        switch node {
        case .scalar(let scalar):
            if scalar.isNull { return .null }
            guard let text = reader.string(node, key: key, source: sourceName) else { return .null }
            if scalar.isPlain {
                if text == "true" || text == "false" { return .bool(text == "true") }
                if let number = JSONNumber(json: text), text.first.map({ $0.isNumber || $0 == "-" }) == true { return .number(number) }
            }
            return .string(text)
        case .sequence(let items, _):
            return .array(items.map { json($0, key: key) })
        case .mapping(let members, _):
            return .object(Dictionary(members.map { ($0.key.value, json($0.value, key: "\(key).\($0.key.value)")) }, uniquingKeysWith: { first, _ in first }))
        }
    }

    /// A value of the adapter's own format. `parse` throws a reason phrased to follow
    /// "invalid <what> '<text>': ".
    public func value<T>(_ key: String, what: String, parse: (String) throws -> T) -> T? {
        node(key).flatMap { reader.value($0, key: key, what: what, source: sourceName, parse: parse) }
    }

    /// The source's HTTP options (``HTTPSourceOptions/keys``) over those of `defaults:`, for an
    /// adapter that declares them (``HTTPSourceOptions/adapterOptions``).
    package func httpOptions() -> HTTPSourceOptions {
        var options = httpDefaults
        let own = entries.filter { HTTPSourceOptions.keys.contains($0.key.value) && declared.contains($0.key.value) }
        options.apply(own, configDirectory: configDirectory, source: sourceName, reader: reader)
        return options
    }

    /// Records a problem that involves the option `key` (or the whole source when `nil`),
    /// such as `min` greater than `max`.
    public func report(_ message: String, key: String? = nil) {
        reader.report(message, at: key.flatMap(mark(of:)) ?? mark, source: sourceName)
    }

    /// Records a problem with `member` of the mapping `key`, at the member's place.
    public func report(_ message: String, key: String, member: String) {
        reader.report(message, at: mark(of: key, member: member) ?? mark(of: key) ?? mark, source: sourceName)
    }

    private func node(_ key: String) -> YAMLNode? {
        precondition(declared.contains(key), "adapter reads option '\(key)' that it does not declare")
        return entries.entry(key)?.value
    }
}
