import Foundation
import Logging

/// Something fetchrun can fetch: a feed, a generator, a plugin, or an embedding program's own.
///
/// An adapter is made once per source and then asked to fetch — once in a one-shot run,
/// again and again in watch mode. A program that builds its sources in code needs only this
/// protocol; to be named by `type:` in a config file, an adapter also conforms to
/// ``ConfigurableAdapter``.
///
/// The contract of `fetch(_:)`:
/// - It returns the source's current items. It never touches the snapshot store: the runner
///   compares the items with the previous snapshot and decides what is new.
/// - Cancellation: when the source's deadline passes, or the run is stopped, the fetch task
///   is cancelled. The adapter must stop its work promptly (a cancelled `Task.sleep` or HTTP
///   transfer throws) and throw; whatever it returns after that is discarded.
/// - Errors: throw ``FetchFailure`` to say what kind of failure it was (network, HTTP status,
///   parse); any other error is reported as an adapter failure with its description.
public protocol SourceAdapter: Sendable {
    func fetch(_ context: FetchContext) async throws -> FetchOutput

    /// Whether `fetch` reads `context.previous` (its items or adapter state). An adapter that
    /// needs only `context.validators` and `context.lastBodyHash` says `false`: then a fetch
    /// that finds nothing changed (``FetchOutput/unchanged``) costs no snapshot read or write.
    /// `true` unless the adapter says otherwise.
    var readsPreviousSnapshot: Bool { get }
}

extension SourceAdapter {
    public var readsPreviousSnapshot: Bool { true }
}

/// An adapter a config file can name: the `type:` that selects it, the options it reads, and
/// how it is made from them. The ``AdapterRegistry`` holds these.
///
/// `init(options:)` validates the options. Invalid ones are reported through the
/// ``AdapterOptions`` accessors (with their line:column); the adapter may also throw. Either
/// way the source is invalid and the config does not load.
public protocol ConfigurableAdapter: SourceAdapter {
    /// The `type:` that selects this adapter, such as `rss` or `traffic`.
    static var type: String { get }
    /// One line for `fetchrun adapters`.
    static var summary: String { get }
    /// Every option the adapter reads, beyond the ones all sources share.
    static var options: [AdapterOption] { get }

    init(options: AdapterOptions) throws
}

/// An option an adapter understands, for `fetchrun adapters` and unknown-key checks.
public struct AdapterOption: Sendable, Hashable {
    public var name: String
    /// What kind of value: "duration", "whole number", "duration or range".
    public var kind: String
    /// The default as a config file would write it; `nil` when the option is required.
    public var defaultValue: String?
    public var summary: String

    public init(_ name: String, kind: String, default defaultValue: String?, _ summary: String) {
        self.name = name
        self.kind = kind
        self.defaultValue = defaultValue
        self.summary = summary
    }
}

/// What an adapter gets for one fetch.
public struct FetchContext: Sendable {
    /// The source's `name`.
    public var sourceName: String
    /// What the last successful fetch left behind; `nil` before the first — and for an
    /// adapter that does not ``SourceAdapter/readsPreviousSnapshot``, which gets
    /// ``validators`` and ``lastBodyHash`` instead.
    public var previous: Snapshot?
    /// The HTTP validators of the last good response, to send back for a conditional GET.
    public var validators: HTTPValidators?
    /// ``FetchOutput/bodyHash`` of the last good fetch: the same hash now means nothing changed.
    public var lastBodyHash: String?
    /// When the fetch is cancelled if none of its requests waits for its host: the end it
    /// started with (``remaining`` follows the end as such waits move it). Work with its own
    /// time-outs should end before it.
    public var deadline: ContinuousClock.Instant
    /// The run's shared HTTP client: connections are reused and limited per host across sources.
    public var http: any HTTPExchange
    public var logger: Logger
    /// The fetch's deadline as the runner keeps it (paused while a request waits for its
    /// host): carried by the requests the fetch makes (``HTTPRequest/budget``).
    package var budget: FetchDeadline?
    /// The runner's clock: ``deadline`` is one of its instants.
    package var clock: any FetchClock = SystemClock()
    /// The browser `render: browser` pages are fetched through; `nil` when the run has none.
    package var renderer: (any PageRenderer)?

    public init(sourceName: String, previous: Snapshot?, deadline: ContinuousClock.Instant, http: any HTTPExchange, logger: Logger, validators: HTTPValidators? = nil, lastBodyHash: String? = nil) {
        self.sourceName = sourceName
        self.previous = previous
        self.validators = validators ?? previous?.validators
        self.lastBodyHash = lastBodyHash
        self.deadline = deadline
        self.http = http
        self.logger = logger
    }

    /// The items of the previous snapshot, newest first.
    public var previousItems: [Item] { previous?.items ?? [] }

    /// Time left until the deadline, which moves later by the time a request of the fetch
    /// waited for its host's slot; zero once it has passed.
    public var remaining: Duration {
        budget?.remaining ?? max(.zero, deadline - clock.now)
    }

    /// The calendar time now, as the runner keeps it: what an adapter stamps on what it makes.
    public var date: Date { clock.date }

    /// The instant `duration` from now on the runner's clock: a deadline for work inside the
    /// fetch (never past ``deadline``, which ends the fetch anyway).
    public func deadline(after duration: Duration) -> ContinuousClock.Instant {
        min(budget?.projectedEnd ?? deadline, clock.now + duration)
    }

    /// Waits `duration` on the runner's clock (a synthetic source's latency); throws
    /// `CancellationError` when the fetch is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await clock.sleep(for: duration)
    }
}

/// What one fetch found.
public struct FetchOutput: Sendable {
    /// The source's current items, newest first. Items already in the snapshot may be
    /// included or left out: the runner keeps what it already knows either way.
    public var items: [Item]
    /// Opaque state kept in the snapshot and handed back in the next ``FetchContext``.
    public var adapterState: JSONValue?
    /// HTTP validators to send with the next request.
    public var validators: HTTPValidators?
    /// Problems the fetch worked around (a feed recovered from broken XML), shown in the report.
    public var notes: [String]
    /// Nothing changed since the last fetch (a 304, the same body again): the source has no
    /// new data and the runner neither reads nor writes its snapshot.
    public var unchanged: Bool
    /// A fingerprint of what was fetched, handed back as ``FetchContext/lastBodyHash``.
    public var bodyHash: String?
    /// The source's own title, when it has one (a feed's): kept in the snapshot and shown.
    public var title: String?
    /// How long what was fetched stays fresh (HTTP `Cache-Control: max-age`, `Expires`): the
    /// next fetch is not due before then, and never sooner than the source's interval.
    public var freshFor: Duration?
    /// The URL the source has permanently moved to (every redirect on the way was a 301 or
    /// 308); counted across fetches, and the config is worth updating.
    public var movedTo: String?
    /// A PNG of what a rendered page showed (`screenshot: true`): kept with the fetch's change.
    package var screenshot: Data?
    /// Where a rendered page ended up and how much HTML the browser built: what `test-source`
    /// says the browser saw.
    package var rendered: (finalURL: String, htmlBytes: Int)?

    public init(items: [Item], adapterState: JSONValue? = nil, validators: HTTPValidators? = nil, notes: [String] = [], unchanged: Bool = false, bodyHash: String? = nil, title: String? = nil) {
        self.title = title
        self.items = items
        self.adapterState = adapterState
        self.validators = validators
        self.notes = notes
        self.unchanged = unchanged
        self.bodyHash = bodyHash
    }

    /// What a fetch that found nothing changed returns.
    public static func unchanged(validators: HTTPValidators? = nil, bodyHash: String? = nil) -> FetchOutput {
        FetchOutput(items: [], validators: validators, unchanged: true, bodyHash: bodyHash)
    }
}
