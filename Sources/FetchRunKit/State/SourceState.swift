import Foundation

/// What the state database knows of one source: its health, when it is due, its last error.
public struct SourceState: Sendable, Equatable {
    public var name: String
    /// The last fetch that ended (cancelled ones are not recorded).
    public var lastFetch: Date?
    /// `newData`, `noData` or `failed`.
    public var lastOutcome: String?
    public var lastSuccess: Date?
    public var consecutiveFailures: Int
    /// The first of the current run of failures; `nil` while the source is healthy.
    public var failingSince: Date?
    public var lastError: RecordedError?
    /// When the schedule (interval, stretch, backoff, Retry-After) wants it fetched again;
    /// `nil` for `interval: never`.
    public var nextDue: Date?
    /// The adaptive interval now: `interval` after new data, stretched after fetches without.
    public var currentInterval: Duration?
    /// Items in the snapshot after the last successful fetch.
    public var itemCount: Int
    /// The HTTP validators of the last good response, sent back for a conditional GET.
    public var validators: HTTPValidators?
    /// The fingerprint of the last body fetched: the same one again is nothing new.
    public var bodyHash: String?
    /// Where the source's URL permanently redirects (301/308), and how many successful
    /// fetches in a row found it so.
    public var movedTo: String?
    public var movedCount = 0

    /// Fetches in a row that must find the same permanent redirect before fetchrun suggests
    /// updating the config: one could be a server's mistake, corrected the next hour.
    public static let movedHintAfter = 3

    /// The hint to give, once the redirect has been seen ``movedHintAfter`` times.
    public var movedHint: String? {
        guard let movedTo, movedCount >= Self.movedHintAfter else { return nil }
        return "moved permanently to \(movedTo) (\(movedCount) fetches in a row): update its 'url' in the config"
    }

    public struct RecordedError: Sendable, Equatable {
        public var kind: FetchFailure.Kind
        public var message: String
        public var at: Date

        public init(kind: FetchFailure.Kind, message: String, at: Date) {
            self.kind = kind
            self.message = message
            self.at = at
        }
    }

    public enum Health: String, Sendable {
        case ok, failing, neverFetched = "never fetched"
    }

    public var health: Health {
        if consecutiveFailures > 0 { return .failing }
        return lastFetch == nil ? .neverFetched : .ok
    }

    public init(name: String) {
        self.name = name
        consecutiveFailures = 0
        itemCount = 0
    }

    /// Whether `run --due` fetches it at `now`: never fetched, or its due time has come.
    public func isDue(at now: Date) -> Bool {
        guard lastFetch != nil else { return true }
        guard let nextDue else { return false }
        return nextDue <= now
    }
}
