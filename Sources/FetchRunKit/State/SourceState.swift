import Foundation

/// What a state store knows of one source: its health, when it is due, its last error, what
/// the next fetch sends back (validators, body hash). Both stores keep it as one JSON document
/// per source (``json`` / ``init(name:json:)``) beside the columns they select on (the due time,
/// the lease), so a field is added here, in the rule that sets it
/// (``record(_:validators:bodyHash:type:settings:at:jitter:)``) and where it is shown — the
/// stores' schemas do not change.
package struct SourceState: Sendable, Equatable {
    public var name: String
    /// The last fetch that ended (cancelled ones are not recorded).
    public var lastFetch: Date?
    /// `newData`, `noData` or `failed`.
    public var lastOutcome: String?
    public var lastSuccess: Date?
    public var consecutiveFailures = 0
    /// The first of the current run of failures; `nil` while the source is healthy.
    public var failingSince: Date?
    public var lastError: RecordedError?
    /// When the schedule (interval, stretch, backoff, Retry-After) wants it fetched again;
    /// `nil` for `interval: never`. Stored as a column of its own: stores select by it.
    public var nextDue: Date?
    /// The adaptive interval now: `interval` after new data, stretched after fetches without.
    public var currentInterval: Duration?
    /// Items the source held after its last successful fetch: its feed's and those kept from
    /// before (the snapshot keeps at most `keep` of them).
    public var itemCount = 0
    /// The HTTP validators of the last good response, sent back for a conditional GET.
    public var validators: HTTPValidators?
    /// The fingerprint of the last body fetched: the same one again is nothing new.
    public var bodyHash: String?
    /// Where the source's URL permanently redirects (301/308), and how many successful
    /// fetches in a row found it so.
    public var movedTo: String?
    public var movedCount = 0
    /// The adapter `type` of the last successful fetch: a source whose type changed starts
    /// from a new baseline (its snapshot was made by another adapter).
    public var type: String?
    /// Where the source's `notify_when:` stood after its last fetch: whether it held, and the
    /// value `changes_by` measures from; `nil` without a condition, or before one was read.
    public var condition: NotifyCondition.State?
    /// The last fetch that found something new (not a first fetch's baseline): the dashboard's
    /// "last change".
    public var lastChange: Date?
    /// The last ``recentLimit`` fetches that ended, oldest first: what the dashboard draws.
    /// Kept in the document as one string (``recentText``) and read from it only when asked:
    /// every state a lease or `/status` reads carries it, and 72 JSON numbers a source made
    /// reading 10,000 states a third slower.
    public var recentFetches: [RecentFetch] {
        get { Self.recentFetches(recentText) }
        set { recentText = Self.recentText(newValue.suffix(Self.recentLimit)) }
    }

    /// ``recentFetches`` as stored: `at,ms,outcome` per fetch (milliseconds since 1970, the
    /// fetch's milliseconds, its outcome's place), `;` between fetches.
    var recentText = ""

    /// Fetches kept in ``recentFetches``: a day of hourly fetches, ~20 bytes each in the document.
    public static let recentLimit = 24

    /// One fetch that ended: when, how long it took, and its outcome's place in
    /// ``SourceOutcome/names`` (0 new data, 1 no data, 2 failed).
    public struct RecentFetch: Sendable, Equatable {
        public var at: Date
        public var milliseconds: Int
        public var outcome: Int

        public init(at: Date, milliseconds: Int, outcome: Int) {
            self.at = at
            self.milliseconds = milliseconds
            self.outcome = outcome
        }

        /// `newData`, `noData` or `failed`.
        public var outcomeName: String { SourceOutcome.names[outcome] }
    }

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
    }

    /// Whether `run --due` fetches it at `now`: never fetched, or its due time has come.
    public func isDue(at now: Date) -> Bool {
        guard lastFetch != nil else { return true }
        guard let nextDue else { return false }
        return nextDue <= now
    }

    // MARK: The stored document

    /// The document the stores keep, dates as milliseconds since 1970. ``nextDue`` and
    /// ``name`` are columns of their own and not part of it.
    package var json: String {
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        json.field("last_fetch", lastFetch.map(Self.milliseconds))
        json.field("last_outcome", lastOutcome)
        json.field("last_success", lastSuccess.map(Self.milliseconds))
        if consecutiveFailures > 0 { json.field("failures", consecutiveFailures) }
        json.field("failing_since", failingSince.map(Self.milliseconds))
        if let lastError {
            json.field("error_kind", lastError.kind.rawValue)
            json.field("error_message", lastError.message)
            json.field("error_at", Self.milliseconds(lastError.at))
        }
        json.field("interval_ms", currentInterval?.milliseconds)
        json.field("items", itemCount)
        json.field("etag", validators?.etag)
        json.field("last_modified", validators?.lastModified)
        // Stored validators that are both absent still say "the last response had none".
        if let validators, validators.etag == nil, validators.lastModified == nil { json.field("validators", "none") }
        json.field("body_hash", bodyHash)
        json.field("moved_to", movedTo)
        if movedCount > 0 { json.field("moved_count", movedCount) }
        json.field("type", type)
        json.field("last_change", lastChange.map(Self.milliseconds))
        if !recentText.isEmpty { json.field("recent", recentText) }
        if let condition {
            json.field("condition_met", condition.isMet)
            if let reference = condition.reference, reference.isFinite {
                json.key("condition_value")
                json.value(reference)
            }
        }
        json.endObject()
        return json.string
    }

    /// Reads a stored document. Anyone who can write the state folder or the database can
    /// write it: a member of the wrong type is ignored, numbers are clamped, and a document
    /// that is not an object reads as a source with nothing recorded.
    package init(name: String, json: String, nextDue: Date?) {
        self.init(name: name)
        self.nextDue = nextDue
        // Member by member, not into a dictionary of values first: every fetch's lease reads
        // one. A document that does not parse whole reads as nothing recorded.
        var read = Self(name: name)
        read.nextDue = nextDue
        var errorKind: String?, errorMessage: String?, errorAt: Date?
        var conditionMet: Bool?, conditionValue: Double?
        var etag: String?, lastModified: String?, validatorsNone = false
        let parsed: Void? = try? JSONReader.read(Data(json.utf8)) { reader throws(JSONReader.Failure) in
            try reader.readObject { reader, key throws(JSONReader.Failure) in
                let value = try reader.readValue()
                // A later duplicate wins, as in the dictionary this once was.
                switch key {
                case "last_fetch": read.lastFetch = Self.date(value)
                case "last_outcome": read.lastOutcome = value.stringValue
                case "last_success": read.lastSuccess = Self.date(value)
                case "failures": read.consecutiveFailures = Self.count(value)
                case "failing_since": read.failingSince = Self.date(value)
                case "error_kind": errorKind = value.stringValue
                case "error_message": errorMessage = value.stringValue
                case "error_at": errorAt = Self.date(value)
                case "interval_ms": read.currentInterval = Self.integer(value).map { .milliseconds(max(0, $0)) }
                case "items": read.itemCount = Self.count(value)
                case "etag": etag = value.stringValue
                case "last_modified": lastModified = value.stringValue
                case "validators": validatorsNone = value.stringValue == "none"
                case "body_hash": read.bodyHash = value.stringValue
                case "moved_to": read.movedTo = value.stringValue
                case "moved_count": read.movedCount = Self.count(value)
                case "type": read.type = value.stringValue
                case "last_change": read.lastChange = Self.date(value)
                case "recent": read.recentText = value.stringValue ?? ""
                case "condition_met": if case .bool(let met) = value { conditionMet = met }
                case "condition_value": if case .number(let exact) = value, exact.value.isFinite { conditionValue = exact.value }
                default: break // a newer fetchrun's
                }
            }
        }
        guard parsed != nil else { return }
        if let kind = errorKind.flatMap(FetchFailure.Kind.init(rawValue:)), let errorAt {
            read.lastError = RecordedError(kind: kind, message: errorMessage ?? "", at: errorAt)
        }
        if let conditionMet { read.condition = NotifyCondition.State(isMet: conditionMet, reference: conditionValue) }
        if etag != nil || lastModified != nil || validatorsNone {
            read.validators = HTTPValidators(etag: etag, lastModified: lastModified)
        }
        self = read
    }

    /// `recent`'s entries that read whole, at most ``recentLimit`` of the newest: anyone who
    /// can write the store can write it.
    static func recentFetches(_ text: String) -> [RecentFetch] {
        guard !text.isEmpty else { return [] }
        let fetches = text.split(separator: ";").suffix(recentLimit).compactMap { entry -> RecentFetch? in
            let parts = entry.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 3, let at = Int64(parts[0]), let took = Int(parts[1]), let outcome = Int(parts[2]),
                  took >= 0, SourceOutcome.names.indices.contains(outcome) else { return nil }
            return RecentFetch(at: date(at), milliseconds: took, outcome: outcome)
        }
        return Array(fetches)
    }

    static func recentText(_ fetches: some Sequence<RecentFetch>) -> String {
        fetches.map(recentEntry).joined(separator: ";")
    }

    private static func recentEntry(_ fetch: RecentFetch) -> String {
        "\(milliseconds(fetch.at)),\(fetch.milliseconds),\(fetch.outcome)"
    }

    /// Adds `fetch` as the newest of ``recentFetches``, the oldest going past ``recentLimit``:
    /// on the text, which every fetch changes, without reading the others into values.
    mutating func appendRecent(_ fetch: RecentFetch) {
        recentText += (recentText.isEmpty ? "" : ";") + Self.recentEntry(fetch)
        var separators = recentText.utf8.reduce(0) { $1 == UInt8(ascii: ";") ? $0 + 1 : $0 }
        while separators >= Self.recentLimit, let first = recentText.utf8.firstIndex(of: UInt8(ascii: ";")) {
            recentText = String(recentText[recentText.index(after: first)...])
            separators -= 1
        }
    }

    private static func date(_ value: JSONValue) -> Date? {
        integer(value).map(date)
    }

    private static func count(_ value: JSONValue) -> Int {
        integer(value).map { Int(clamping: max(0, $0)) } ?? 0
    }

    /// A number from a stored document as a 64-bit integer, clamped: a hostile value must not trap.
    private static func integer(_ value: JSONValue) -> Int64? {
        guard case .number(let exact) = value, case let number = exact.value, number.isFinite else { return nil }
        return number >= 9.2e18 ? 9_200_000_000_000_000_000 : number <= -9.2e18 ? -9_200_000_000_000_000_000 : Int64(number)
    }

    /// A date as milliseconds since 1970, clamped: a date read back from a hostile row can be
    /// as far out as `Int64` milliseconds reach, and converting it back must not trap.
    package static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        guard value.isFinite else { return 0 }
        return value >= 9.2e18 ? 9_200_000_000_000_000_000 : value <= -9.2e18 ? -9_200_000_000_000_000_000 : Int64(value)
    }

    package static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// Every state read, by name (the last of a name wins). The rows are read into an array
    /// first so that the dictionary is made at its size: grown a row at a time, it moved and
    /// rehashed every state at each doubling, a sixth of `/status`'s CPU at 100,000 sources.
    package static func byName(_ states: [SourceState]) -> [String: SourceState] {
        var byName = [String: SourceState](minimumCapacity: states.count)
        for state in states { byName[state.name] = state }
        return byName
    }
}
