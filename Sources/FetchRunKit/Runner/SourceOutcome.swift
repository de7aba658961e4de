/// What happened to one source in one fetch — `UIBackgroundFetchResult` per source.
public enum SourceOutcome: Sendable, Hashable {
    /// Items whose id the previous snapshot lacked, newest first.
    case newData([Item])
    case noData
    case failed(FetchFailure)

    /// `newData`, `noData` or `failed`, as reports print it.
    public var name: String { Self.names[ordinal] }

    /// Every outcome's ``name``, in the order of the cases.
    package static let names = ["newData", "noData", "failed"]

    /// This outcome's place in ``names``.
    package var ordinal: Int {
        switch self {
        case .newData: 0
        case .noData: 1
        case .failed: 2
        }
    }

    public var newItems: [Item] {
        if case .newData(let items) = self { return items }
        return []
    }

    public var failure: FetchFailure? {
        if case .failed(let failure) = self { return failure }
        return nil
    }
}

/// The run's one overall result, aggregated from every source's outcome.
public enum RunResult: String, Sendable, Hashable, Codable {
    case newData, noData, failed

    /// `newData` if any source had new data; else `failed` if every source failed;
    /// else `noData` (which is also the result of a run with no sources).
    public init(aggregating outcomes: [SourceOutcome]) {
        if outcomes.contains(where: { if case .newData = $0 { return true } else { return false } }) {
            self = .newData
        } else if !outcomes.isEmpty, outcomes.allSatisfy({ $0.failure != nil }) {
            self = .failed
        } else {
            self = .noData
        }
    }
}

/// One source's part of a run report.
public struct SourceReport: Sendable {
    public var name: String
    public var type: String
    public var outcome: SourceOutcome
    /// Items the snapshot holds after this fetch (or would hold, in a dry run).
    public var totalItems: Int
    public var duration: Duration
    /// Things worth knowing that did not fail the source, such as a corrupt snapshot moved aside.
    public var notes: [String]
    /// There was no snapshot before this fetch: everything it found is a baseline, not news.
    public var isBaseline: Bool
    /// How many items were new. The same as `outcome.newItems.count` unless the run kept only
    /// the first few of them (``FetchRunner/run(_:maxInFlight:keepingNewItems:keepingBaselineItems:onSourceFinished:)``).
    public var newCount: Int
    /// Enclosures of new items this fetch put in the download queue (sources with `download:`).
    package var queuedDownloads: [DownloadEntry] = []
    /// The source's own title (a feed's), when this fetch or the snapshot knows it.
    public var title: String?
    /// Known items whose title or link changed, for sources with `report_updates: true` (a run
    /// may keep only the first few; ``updatedCount`` counts them all).
    public var updatedItems: [Item] = [] {
        didSet { updatedCount = max(updatedCount, updatedItems.count) }
    }
    public var updatedCount = 0
    /// How long the fetch waited for its host's slot (fetchrun's per-host limits), and which
    /// host: part of ``duration`` but not of the deadline.
    public var queueWait: Duration = .zero
    public var queueHost: String?
    /// ``FetchOutput/freshFor`` of the fetch: the next one is not due before then.
    public var freshFor: Duration?
    /// ``FetchOutput/movedTo`` of the fetch: the URL has permanently moved here.
    public var movedTo: String?

    public init(name: String, type: String, outcome: SourceOutcome, totalItems: Int, duration: Duration, notes: [String] = [], isBaseline: Bool = false) {
        self.name = name
        self.type = type
        self.outcome = outcome
        self.totalItems = totalItems
        self.duration = duration
        self.notes = notes
        self.isBaseline = isBaseline
        self.newCount = outcome.newItems.count
    }
}

/// Everything one run found, sources in config order.
public struct RunReport: Sendable {
    public var sources: [SourceReport]
    public var duration: Duration

    public init(sources: [SourceReport], duration: Duration) {
        self.sources = sources
        self.duration = duration
    }

    public var result: RunResult { RunResult(aggregating: sources.map(\.outcome)) }

    /// New items across all sources: the badge number.
    public var newItemCount: Int { sources.reduce(0) { $0 + $1.newCount } }

    public var failedCount: Int { sources.filter { $0.outcome.failure != nil }.count }
}
