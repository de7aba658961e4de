import FetchRunKit
import FetchRunMonitor
import Foundation
import Logging
import ServiceLifecycle

/// What `watch` and `worker` share — they are one loop, the worker's with a lease policy: the
/// engine's watcher and services under the command's ``Lifecycle``, every fetch printed as it
/// ends (the events `run` prints, in NDJSON), deliveries reported, SIGHUP reloading sources,
/// outputs and `max_in_flight`, and the summary at the end.
struct WatchSession {
    let engine: FetchEngine
    let watcher: Watcher
    /// A watch's downloads; a worker downloads nothing.
    let downloads: DownloadService?
    let configOptions: ConfigOptions
    let output: OutputOptions
    let printBaseline: Bool
    /// What the outside hears of the loop (`--listen`, systemd); `nil`: nothing.
    var monitoring: Monitoring?

    /// Runs the watch until it stops; `services` are those the store needs (PostgreSQL's pool),
    /// `before` what the work does before watching (a worker's schedule).
    /// - Parameters:
    ///   - still: what the command goes on doing when a reload is refused ("still watching").
    ///   - reloaded: the sources to watch of a reloaded config, and the sections of it that
    ///     wait for the next start.
    /// - Throws: what `before` threw.
    func run(
        _ lifecycle: Lifecycle, services: [any Service] = [], stopAfter: Duration?, still: String,
        reloaded: @escaping @Sendable (FetchConfig) -> (sources: [SourceConfig], waiting: [String]),
        before: @escaping @Sendable () async throws -> Void = {}
    ) async throws {
        let console = DownloadConsole(format: output.format)
        let report = WatchReport(format: output.format, style: Console.stdoutStyle, verbose: output.verbose > 0, printBaseline: printBaseline)
        let clock = engine.clock
        let started = clock.now
        let watcher = self.watcher, delivery = engine.delivery, downloads = self.downloads, output = self.output, monitoring = self.monitoring
        async let printed: Void = console.printUntilFinished()
        let ending = await withTaskGroup(of: Void.self) { tasks in
            if let downloads { tasks.addTask { _ = await console.show(downloads.events) } }
            tasks.addTask {
                for await results in delivery.results {
                    switch output.format {
                    case .text: for line in DeliveryReport.lines(for: results) { console.error(line) }
                    case .json: console.out(results.map(DeliveryReport.jsonLine))
                    }
                }
            }
            tasks.addTask {
                for await event in watcher.events {
                    guard case .fetched(let source, let next) = event else { continue }
                    monitoring?.status.fetched(source.name, failed: source.outcome.failure != nil)
                    let now = clock.date
                    console.out(report.lines(for: source, at: now, nextFetch: next.map { now.addingTimeInterval($0.seconds) }))
                    if let failure = source.outcome.failure, output.verbose == 0 {
                        console.error("\(source.name): \(TerminalText.safe(failure.message))")
                    }
                    if !source.queuedDownloads.isEmpty, let downloads {
                        for entry in source.queuedDownloads { console.sink(.queued(entry)) }
                        await downloads.wake()
                    }
                }
            }
            let ending: Result<Void, any Error>
            do {
                let reload: @Sendable () async -> Void = { await self.reload(still: still, reloaded: reloaded) }
                _ = try await lifecycle.run(services + engine.services + (downloads.map { [$0] } ?? []), stopAfter: stopAfter, reload: reload) {
                    try await before()
                    await watcher.run()
                }
                ending = .success(())
            } catch {
                // The watcher never ran, so its events never end: nothing is left to print.
                ending = .failure(error)
                tasks.cancelAll()
            }
            await tasks.waitForAll()
            return ending
        }
        console.finish()
        await printed
        try ending.get()
        Console.out(report.summary(await watcher.tallies, duration: clock.now - started))
    }

    /// SIGHUP: the config again. Sources, outputs and `max_in_flight` change at once; what the
    /// command opened at start (its state, the HTTP client's limits, the download queue) is
    /// named and waits for the next start. A config with problems — or, for a worker,
    /// PostgreSQL refusing its schedule — keeps the previous one running, and says why.
    private func reload(still: String, reloaded: (FetchConfig) -> (sources: [SourceConfig], waiting: [String])) async {
        monitoring?.reloading()
        guard let config = await configOptions.reload(still: still) else {
            monitoring?.reloaded(failure: "the config has problems (see the log); \(still) with the previous one")
            return
        }
        let (sources, waiting) = reloaded(config)
        for section in waiting { Console.error("SIGHUP: \(section): changed; it takes effect at the next start") }
        do {
            let change = try await watcher.reload(sources, outputs: config.outputs, maxInFlight: config.maxInFlight)
            await engine.delivery.use(outputs: config.outputs)
            configOptions.reportReloaded(added: change.added, removed: change.removed, changed: change.changed, outputs: config.outputs)
            monitoring?.status.sourcesChanged(to: sources.count)
            monitoring?.served.update(sources: config.sources, outputs: config.outputs)
            engine.metrics.recordSources(sources.count)
            monitoring?.reloaded(failure: nil)
        } catch {
            Console.error("SIGHUP: \(error); \(still) with the previous config")
            monitoring?.reloaded(failure: "\(error)")
        }
    }
}

extension WatchSession {
    /// What `watch` and `worker` build alike, in one place: the monitoring (its `--listen`
    /// address checked first, before anything starts), the metrics, the engine over `store`,
    /// its watcher — leased with `leasing`, a worker's — and the endpoint to serve. With
    /// `downloadsIn`, a watch's: enclosures queued there and downloaded while it runs.
    /// - Throws: ``CommandFailure`` when the listen address cannot be bound.
    static func assemble(
        config: FetchConfig, sources: [SourceConfig], store: any SourceStateStore, monitor: MonitorOptions,
        downloadsIn stateDirectory: StateDirectory?, options: Watcher.Options, leasing: LeasePolicy?,
        configOptions: ConfigOptions, output: OutputOptions, printBaseline: Bool, logger: Logger
    ) async throws -> (session: WatchSession, endpoint: MonitorEndpoint?) {
        let monitoring = Monitoring(settings: try monitor.settings(for: config), sourceCount: sources.count)
        try monitoring.checkListenAddress()
        let metrics = monitoring.fetchMetrics(sourceCount: sources.count, logger: logger)
        let client = CurlHTTPClient(configuration: config.http, metrics: metrics)
        let renderer = config.renderer(http: client, logger: logger)
        let screenshots = ScreenshotFolder(stateDirectory: stateDirectory?.path ?? config.stateDirectory)
        let engine = FetchEngine(
            sources: sources, store: store, http: client, outputs: config.outputs, maxInFlight: config.maxInFlight,
            settings: .init(metrics: metrics, downloads: stateDirectory?.downloads, renderer: renderer, screenshots: screenshots), logger: logger
        )
        let watcher = await engine.watcher(options: monitoring.watching(options), leasing: leasing)
        let downloads = stateDirectory.map {
            DownloadService(stateDirectory: $0, limits: config.downloads, mode: .untilShutdown, lockHeld: .watch, metrics: metrics, logger: logger)
        }
        let session = WatchSession(
            engine: engine, watcher: watcher, downloads: downloads, configOptions: configOptions, output: output,
            printBaseline: printBaseline, monitoring: monitoring
        )
        let endpoint = monitoring.endpoint(
            store: store, config: config, metrics: metrics, watcher: watcher, delivery: engine.delivery, screenshots: screenshots, clock: engine.clock, logger: logger
        )
        monitoring.health.setNotReady(nil)
        return (session, endpoint)
    }
}
