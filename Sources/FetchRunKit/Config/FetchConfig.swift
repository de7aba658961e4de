/// A loaded, checked config file: where state lives and the sources to fetch.
public struct FetchConfig: Sendable {
    /// The config file as the user named it.
    public var file: String
    /// The state directory, resolved against the config file's folder.
    public var stateDirectory: String
    public var defaults: SourceSettings
    /// The most fetches in flight at once, across sources (one-shot runs and watch mode).
    public var maxInFlight: Int = FetchConfig.defaultMaxInFlight
    public static let defaultMaxInFlight = 512
    /// `downloads:`: limits for enclosure downloads.
    public var downloads = DownloadLimits()
    /// Every source in file order, disabled ones included.
    public var sources: [SourceConfig]

    /// The sources a run fetches: enabled ones, or only `names` when given.
    public func sources(named names: [String]) -> [SourceConfig] {
        names.isEmpty ? sources.filter(\.enabled) : sources.filter { names.contains($0.name) }
    }
}

/// What `defaults:` sets and a source may override.
public struct SourceSettings: Sendable, Equatable {
    public var deadline: Duration = .seconds(30)
    public var interval: FetchInterval = .every(.seconds(15 * 60))
    /// Watch mode: how far the interval stretches after fetches with no data; `nil` is 4× `interval`.
    public var maxInterval: Duration?
    /// Watch mode: the longest wait after failures.
    public var maxBackoff: Duration = .seconds(3600)
    public var keep: Int = 200

    public init() {}

    /// The settings as text for a source's fingerprint; written out rather than interpolated
    /// whole, which goes through reflection and was a fifth of loading a large config.
    var fingerprintText: String {
        "\(deadline)|\(interval)|\(maxInterval.map { "\($0)" } ?? "-")|\(maxBackoff)|\(keep)"
    }
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
    /// Watch mode: the longest the interval stretches to; `nil` is 4× `interval`.
    public var maxInterval: Duration?
    /// Watch mode: the longest wait after failures.
    public var maxBackoff: Duration
    /// How many items the snapshot keeps.
    public var keep: Int
    /// Where the entry starts in the config file.
    public var mark: SourceMark
    public var adapter: any SourceAdapter
    /// `download:`: enclosures of new items to download; `nil` downloads nothing.
    public var download: DownloadSettings?
    /// The entry's settings and options, without their places: equal fingerprints mean a
    /// reloaded config left the source as it was.
    public var fingerprint: String = ""

    public init(name: String, type: String, enabled: Bool = true, deadline: Duration = .seconds(30), interval: FetchInterval = .every(.seconds(900)), maxInterval: Duration? = nil, maxBackoff: Duration = .seconds(3600), keep: Int = 200, mark: SourceMark = SourceMark(line: 0, column: 0), adapter: any SourceAdapter) {
        self.name = name
        self.type = type
        self.enabled = enabled
        self.deadline = deadline
        self.interval = interval
        self.maxInterval = maxInterval
        self.maxBackoff = maxBackoff
        self.keep = keep
        self.mark = mark
        self.adapter = adapter
    }
}
