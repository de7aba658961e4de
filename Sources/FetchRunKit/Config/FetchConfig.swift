import Foundation

/// A loaded, checked config file: where state lives and the sources to fetch.
public struct FetchConfig: Sendable {
    /// The config file as the user named it.
    public var file: String
    /// The state directory, resolved against the config file's folder.
    public var stateDirectory: String
    /// `state: postgres://…`: the state many workers share (`fetchrun worker`); `nil` keeps
    /// it in the state directory. `${VAR}` expanded: it may hold a password, never printed.
    public var stateURL: String?
    public var defaults: SourceSettings
    /// The most fetches in flight at once, across sources (one-shot runs and watch mode).
    public var maxInFlight: Int = FetchConfig.defaultMaxInFlight
    public static let defaultMaxInFlight = 512
    /// `http:`: per-host limits of the HTTP client every source shares.
    public var http = CurlHTTPClient.Configuration()
    /// The HTTP options `defaults:` sets, which HTTP sources start from.
    package var httpDefaults = HTTPSourceOptions()
    /// `outputs:`: where new items and failure alerts are sent.
    public var outputs: [OutputConfig] = []
    /// Where `watch` and `worker` serve metrics and health (`listen:`); `nil`: nowhere.
    package var listen: ListenSettings?
    /// The browser `render: browser` pages are fetched through (`browser:`).
    package var browser = BrowserSettings()
    /// How logs are written on stderr (`log_format:`): `text` or `json`; `nil`: as the command line says.
    public var logFormat: String?
    /// `downloads:`: limits for enclosure downloads.
    package var downloads = DownloadLimits()
    /// `timezone:` (an IANA name such as `Europe/Berlin`): where digests' times are read and
    /// mails show dates; the system's when the config names none.
    package var timeZone: TimeZone = .current
    /// Every source in file order, disabled ones included.
    public var sources: [SourceConfig]
    /// Sources left out for problems of their own, when the loader keeps the valid ones
    /// (``ConfigLoader/keepsValidSources``); empty otherwise.
    package var rejectedSources: [RejectedSource] = []

    /// The sources a run fetches: enabled ones, or only `names` when given.
    public func sources(named names: [String]) -> [SourceConfig] {
        guard names.isEmpty else { return sources.filter { names.contains($0.name) } }
        // Usually every source is enabled: the list itself, shared, rather than a copy of every
        // source (~0.8 ms of each start at 1,000 sources, before the first fetch).
        return sources.allSatisfy(\.enabled) ? sources : sources.filter(\.enabled)
    }
}

/// A source the config names but that cannot run, and why (with line:col).
package struct RejectedSource: Sendable {
    public var name: String
    public var diagnostics: [ConfigDiagnostic]

    /// What a run reports for it: a `config` failure quoting the problems.
    public var failure: FetchFailure {
        FetchFailure(.config, diagnostics.map(\.description).joined(separator: "; "))
    }
}

/// What `defaults:` sets and a source may override.
public struct SourceSettings: Sendable, Hashable {
    /// How long one fetch may take; past it the fetch is cancelled and fails.
    public var deadline: Duration
    /// Watch mode: how often the source is fetched.
    public var interval: FetchInterval
    /// Watch mode: how far the interval stretches after fetches with no data; `nil` is 4× `interval`.
    public var maxInterval: Duration?
    /// Watch mode: the longest wait after failures.
    public var maxBackoff: Duration
    /// How many items the snapshot keeps.
    public var keep: Int
    /// What identifies the source's items (`identity:`).
    package var identity: ItemIdentity = .guid
    /// How much of the source's history is kept (`history:`). Not part of the fingerprint: a
    /// change of what is kept is no reason to fetch again.
    package var history: HistoryRetention = .standard

    public init(deadline: Duration = .seconds(30), interval: FetchInterval = .every(.seconds(15 * 60)), maxInterval: Duration? = nil, maxBackoff: Duration = .seconds(3600), keep: Int = 200) {
        self.deadline = deadline
        self.interval = interval
        self.maxInterval = maxInterval
        self.maxBackoff = maxBackoff
        self.keep = keep
    }

    /// The settings as text for a source's fingerprint; written out rather than interpolated
    /// whole, which goes through reflection and was a fifth of loading a large config. The
    /// default identity adds nothing: fingerprints recorded before it existed stay the same.
    var fingerprintText: String {
        "\(deadline)|\(interval)|\(maxInterval.map { "\($0)" } ?? "-")|\(maxBackoff)|\(keep)" + (identity == .guid ? "" : "|" + identity.rawValue)
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

/// One source: what the runner fetches, from a config file's `sources:` or built in code.
public struct SourceConfig: Sendable {
    /// The source's name: its snapshot's file name and its label in reports.
    public var name: String
    /// The adapter's `type:`, for reports and `validate`.
    public var type: String
    public var enabled: Bool
    public var settings: SourceSettings
    public var adapter: any SourceAdapter
    /// `download:`: enclosures of new items to download; `nil` downloads nothing.
    package var download: DownloadSettings?
    /// `tags:`: the user's labels for the source (an OPML import writes its folders here);
    /// `export --opml` nests sources by their first tag.
    public var tags: [String] = []
    /// The `url:` as the config writes it — `${VAR}` unexpanded, credentials removed — for
    /// the dashboard; `nil` for a source without one.
    package var shownURL: String?
    /// `report_updates: true`: items whose title or link changed under a known id are
    /// reported as updated (off by default: many feeds rewrite titles for no reader's benefit).
    public var reportsUpdates = false
    /// `outputs`, `include`, `exclude`, `send_baseline`: which outputs hear of the source's
    /// news, and which of its items are news at all.
    package var routing = SourceRouting()
    /// Where the entry starts in the config file; line 0 for a source built in code.
    public var mark: SourceMark
    /// The entry's settings and options, without their places: equal fingerprints mean a
    /// reloaded config left the source as it was. A source built in code has its settings'.
    public var fingerprint: String

    /// A source as an embedding program builds one. `type` defaults to the adapter's
    /// ``ConfigurableAdapter/type`` when it has one, else to its Swift type's name.
    public init(name: String, adapter: any SourceAdapter, settings: SourceSettings = SourceSettings(), type: String? = nil, enabled: Bool = true) {
        self.init(name: name, adapter: adapter, settings: settings, type: type, enabled: enabled, download: nil, fingerprint: settings.fingerprintText)
    }

    /// The config loader's, with the fingerprint it wrote (settings and entry): written once,
    /// not once here and again there, for each source of a large config.
    init(name: String, adapter: any SourceAdapter, settings: SourceSettings, type: String?, enabled: Bool, download: DownloadSettings?, fingerprint: String) {
        self.name = name
        self.adapter = adapter
        self.settings = settings
        self.type = type ?? Self.typeName(of: adapter)
        self.enabled = enabled
        self.download = download
        self.mark = SourceMark(line: 0, column: 0)
        self.fingerprint = fingerprint
    }

    private static func typeName(of adapter: any SourceAdapter) -> String {
        if let configurable = adapter as? any ConfigurableAdapter {
            return Swift.type(of: configurable).type
        }
        return String(describing: Swift.type(of: adapter))
    }
}
