import Foundation
import Logging
import ServiceLifecycle

/// The engine, as a program embeds it (and as `fetchrun run`, `watch` and `worker` use it):
/// sources, where their state lives, outputs — fetched once, or watched.
///
/// Two services do the work beside the fetches: the HTTP client every source shares, and the
/// delivery of the outbox to the outputs. ``run(only:)`` runs them for its pass; a watch runs
/// them with its ``watcher(options:)`` in one `ServiceGroup` (``services`` first, the watcher
/// last, so that it stops first and its last fetches still reach the network and the outbox).
public struct FetchEngine: Sendable {
    /// Every fetch goes through it: the store, the HTTP client, the outputs. The engine's own:
    /// a command says what it wants (``Settings``) and calls the engine.
    private var pipeline: FetchPipeline
    package var sources: [SourceConfig]
    package var maxInFlight: Int
    package let delivery: DeliveryService

    /// What a command sets beside the sources, store and outputs.
    package struct Settings: Sendable {
        /// Where the fetches' counts go (none by default).
        package var metrics = FetchMetrics.none
        /// Where enclosures to download are queued; `nil`: none are.
        package var downloads: DownloadQueue?
        /// Fetch and report, record nothing (`run --dry-run`).
        package var dryRun = false
        /// Where `render: browser` pages are fetched (the command line's Chromium); `nil`:
        /// such sources fail saying that no browser is available.
        package var renderer: (any PageRenderer)?
        /// Where rendered pages' screenshots are kept with their changes; `nil`: nowhere.
        package var screenshots: ScreenshotFolder?

        package init(metrics: FetchMetrics = .none, downloads: DownloadQueue? = nil, dryRun: Bool = false, renderer: (any PageRenderer)? = nil, screenshots: ScreenshotFolder? = nil) {
            self.metrics = metrics
            self.downloads = downloads
            self.dryRun = dryRun
            self.renderer = renderer
            self.screenshots = screenshots
        }
    }

    /// The sources of a loaded config, with its outputs and `http:` settings; their state in the
    /// config's state directory (created when missing).
    /// - Throws: ``StateStoreError`` when the state directory or its database cannot be used.
    public init(config: FetchConfig, logger: Logger = Logger(label: "fetchrun")) async throws {
        try await self.init(sources: config.sources, stateDirectory: config.stateDirectory, outputs: config.outputs, http: config.http, maxInFlight: config.maxInFlight, logger: logger)
    }

    /// Sources built in code, their state in `stateDirectory` (created when missing).
    /// - Throws: ``StateStoreError`` when the state directory or its database cannot be used.
    public init(
        sources: [SourceConfig], stateDirectory: String, outputs: [OutputConfig] = [], http: CurlHTTPClient.Configuration = .init(),
        maxInFlight: Int = FetchConfig.defaultMaxInFlight, logger: Logger = Logger(label: "fetchrun")
    ) async throws {
        let directory = StateDirectory(path: stateDirectory)
        do {
            try directory.prepare()
        } catch {
            throw StateStoreError(store: stateDirectory, reason: error.description)
        }
        let store = try await SQLiteStateStore.open(in: directory).store
        self.init(
            sources: sources, store: store, http: CurlHTTPClient(configuration: http), outputs: outputs, maxInFlight: maxInFlight,
            settings: Settings(downloads: directory.downloads), logger: logger
        )
    }

    /// The command line's: any store, its own HTTP client, its settings.
    package init(sources: [SourceConfig], store: any SourceStateStore, http: CurlHTTPClient, outputs: [OutputConfig], maxInFlight: Int, settings: Settings = Settings(), logger: Logger) {
        let delivery = DeliveryService(delivery: OutboxDelivery(outputs: outputs, database: store, http: http, metrics: settings.metrics, clock: http.clock, logger: logger))
        pipeline = FetchPipeline(store: store, http: http, logger: logger)
        pipeline.outputs = outputs
        pipeline.metrics = settings.metrics
        pipeline.downloads = settings.downloads
        pipeline.dryRun = settings.dryRun
        pipeline.renderer = settings.renderer
        pipeline.screenshots = settings.screenshots
        pipeline.onOutboxChanged = { delivery.wake() }
        self.sources = sources
        self.maxInFlight = maxInFlight
        self.delivery = delivery
    }

    /// What a watcher needs running beside it: the browser that renders pages when it is a
    /// service (first, so that it stops last), the HTTP client and the outbox's delivery.
    public var services: [any Service] {
        ((pipeline.renderer as? any Service).map { [$0] } ?? []) + [pipeline.http, delivery]
    }

    /// The HTTP client every fetch and delivery of the engine shares.
    package var http: CurlHTTPClient { pipeline.http }

    /// Where the engine's counts go.
    package var metrics: FetchMetrics { pipeline.metrics }

    /// The engine's time: its HTTP client's clock, which every fetch, delivery and schedule reads.
    package var clock: any FetchClock { pipeline.clock }

    /// Fetches `sources` once, as ``run(only:)`` does but without running the HTTP client or
    /// delivering (the command does both, around its own printing): each source's report is
    /// handed to `onSourceFinished` as it ends, keeping at most `keepingNewItems` of its new
    /// items (`keepingBaselineItems` of a first fetch's) in the run's report.
    package func fetchOnce(
        _ sources: [SourceConfig], keepingNewItems: Int = .max, keepingBaselineItems: Int? = nil,
        onSourceFinished: @Sendable (SourceReport) -> Void = { _ in }
    ) async -> RunReport {
        await FetchRunner(pipeline: pipeline).run(
            sources, maxInFlight: maxInFlight, keepingNewItems: keepingNewItems, keepingBaselineItems: keepingBaselineItems, onSourceFinished: onSourceFinished
        )
    }

    /// Sends what waits in the outbox through the engine's outputs, now, whatever a failed
    /// delivery's backoff says (a one-shot run is its next occasion); a service's hold is kept.
    package func deliverDue() async -> [OutboxDelivery.Result] {
        await OutboxDelivery(outputs: pipeline.outputs, database: pipeline.store, http: pipeline.http, metrics: pipeline.metrics, clock: pipeline.clock).deliverDue(ignoringBackoff: true)
    }

    /// Fetches every enabled source once — or only those named, disabled ones too — all at once
    /// as far as `maxInFlight` allows, each within its deadline, and records what each found;
    /// then sends what waits in the outbox. The HTTP client runs for the pass.
    ///
    /// Never throws: every problem is a source's outcome (see ``FetchFailure``), and an output
    /// that does not take a delivery leaves it in the outbox for the next pass.
    /// Cancellation: fetches in flight are cancelled and reported as such; nothing is recorded for them.
    public func run(only names: [String] = []) async -> RunReport {
        let selected = names.isEmpty ? sources.filter(\.enabled) : sources.filter { names.contains($0.name) }
        let runner = FetchRunner(pipeline: pipeline)
        return await withRunning(pipeline.http) {
            let report = await runner.run(selected, maxInFlight: maxInFlight)
            _ = await deliverDue()
            return report
        }
    }

    /// A watcher of the sources that have an interval, carrying on where the store left each
    /// (its due time, its stretched interval, its failures so far). A `Service`: run it after
    /// ``services`` in one `ServiceGroup`.
    public func watcher(options: Watcher.Options = .init()) async -> Watcher {
        await watcher(options: options, leasing: nil)
    }

    /// A watcher, or with `leasing` a worker: due sources from the store's leases.
    package func watcher(options: Watcher.Options, leasing: LeasePolicy?) async -> Watcher {
        var options = options
        options.maxInFlight = min(options.maxInFlight, maxInFlight)
        let recorded = leasing == nil ? (try? await pipeline.store.states()) ?? [:] : [:]
        return Watcher(sources: sources, pipeline: pipeline, options: options, resuming: recorded, leasing: leasing)
    }
}
