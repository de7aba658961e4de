/// A loaded, checked config file: where state lives and the sources to fetch.
public struct FetchConfig: Sendable {
    /// The config file as the user named it.
    public var file: String
    /// The state directory, resolved against the config file's folder.
    public var stateDirectory: String
    public var defaults: SourceDefaults
    /// Every source in file order, disabled ones included.
    public var sources: [SourceConfig]

    /// The sources a run fetches: enabled ones, or only `names` when given.
    public func sources(named names: [String]) -> [SourceConfig] {
        names.isEmpty ? sources.filter(\.enabled) : sources.filter { names.contains($0.name) }
    }
}

/// The `defaults:` block: what a source gets when it does not say.
public struct SourceDefaults: Sendable, Equatable {
    public var deadline: Duration = .seconds(30)
    public var interval: FetchInterval = .every(.seconds(15 * 60))
    public var keep: Int = 200

    public init() {}
}

/// How often watch mode fetches a source.
public enum FetchInterval: Sendable, Hashable, CustomStringConvertible {
    case every(Duration)
    /// `interval: never`: the source is left out of watch mode.
    case never

    public var description: String {
        switch self {
        case .every(let duration): return DurationText.format(duration)
        case .never: return "never"
        }
    }
}

/// One entry of `sources:`.
public struct SourceConfig: Sendable {
    public var name: String
    public var type: String
    public var enabled: Bool
    public var deadline: Duration
    public var interval: FetchInterval
    /// How many items the snapshot keeps.
    public var keep: Int
    /// Where the entry starts in the config file.
    public var mark: SourceMark
    public var adapter: any SourceAdapter

    public init(name: String, type: String, enabled: Bool = true, deadline: Duration = .seconds(30), interval: FetchInterval = .every(.seconds(900)), keep: Int = 200, mark: SourceMark = SourceMark(line: 0, column: 0), adapter: any SourceAdapter) {
        self.name = name
        self.type = type
        self.enabled = enabled
        self.deadline = deadline
        self.interval = interval
        self.keep = keep
        self.mark = mark
        self.adapter = adapter
    }
}
