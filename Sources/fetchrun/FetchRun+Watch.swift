import ArgumentParser
import FetchRunKit
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

extension FetchRun {
    /// Keeps fetching every source on its own schedule and prints what is new as it arrives.
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Keep fetching each source on its own schedule; print each new item as it arrives.",
            discussion: """
            Each source is fetched at start (spread over the first second), then every `interval`; \
            after fetches with no data the interval stretches ×1.5 up to `max_interval`, and snaps \
            back on new data; failures back off exponentially. SIGINT or SIGTERM stops it: fetches \
            in flight get --grace, snapshots are written, a summary is printed, exit 0. A second \
            SIGINT cancels at once. SIGHUP reloads the config (an invalid one keeps the old running): \
            sources, outputs and max_in_flight at once; state_dir, http and downloads at the next start.
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Option(name: .customLong("source"), help: ArgumentHelp("Watch only this source (repeatable).", valueName: "name"), completion: SourceNameCompletion.kind)
        var sourceNames: [String] = []

        @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long, as if interrupted.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var runFor: Duration?

        @Option(help: ArgumentHelp("Stop after this many fetches in all.", valueName: "n"))
        var fetches: Int?

        @Option(help: ArgumentHelp("How long fetches in flight may finish when stopping.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var grace: Duration = .seconds(5)

        @Flag(help: "Print every item of a source's first fetch, not one baseline line.")
        var printBaseline = false

        func validate() throws {
            if let fetches, fetches < 1 { throw ValidationError("--fetches must be at least 1") }
        }

        func run() async throws {
            // Signals first: from here on a SIGINT is a request to stop, never an abrupt end.
            let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
            output.bootstrapLogging()
            let config = try await configOptions.load()
            for source in config.rejectedSources where sourceNames.isEmpty || sourceNames.contains(source.name) {
                Console.error("source '\(source.name)' is not watched: \(source.diagnostics.map(\.description).joined(separator: "; "))")
            }
            let sources = try selectSources(config)
            let stateDirectory = stateOptions.directory(for: config)
            let lock = try await stateOptions.prepareAndLockWatch(stateDirectory)

            var options = Watcher<ContinuousClock>.Options()
            options.maxInFlight = config.maxInFlight
            options.maxFetches = fetches
            options.grace = grace
            let logger = Logger(label: "fetchrun")
            let database = try await stateOptions.openDatabase(in: stateDirectory)
            let http = HTTPClient(configuration: config.http)
            let delivery = DeliveryService(delivery: OutboxDelivery(outputs: config.outputs, database: database, http: http, logger: logger))
            var configured = FetchRunner(store: stateDirectory.snapshots, http: http, downloads: stateDirectory.downloads, state: database, logger: logger)
            configured.outputs = config.outputs
            configured.onOutboxChanged = { delivery.wake() }
            let runner = configured
            // A restarted watch carries on where the last run or watch left each source.
            let recorded = (try? await database.states()) ?? [:]
            let watcher = Watcher(sources: sources, runner: runner, clock: ContinuousClock(), options: options, resuming: recorded)
            let downloads = DownloadService(stateDirectory: stateDirectory, limits: config.downloads, mode: .untilShutdown, lockHeld: .watch, logger: logger)
            let (shutdownRequests, shutdown) = AsyncStream<Void>.makeStream()
            let control = WatchSignals(signals: signals, isStopping: { await watcher.isStopping }, requestShutdown: { shutdown.yield() }) {
                await reload(into: watcher, delivery: delivery, running: config, stateDirectory: stateDirectory)
            }
            // Shut down in reverse: the watcher first (its fetches get the grace), then the
            // downloads (partial files stay), then the signals. The watcher ending by itself
            // (--fetches) shuts the rest down the same way.
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: control),
                    .init(service: delivery),
                    .init(service: downloads),
                    .init(service: watcher, successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                logger: logger
            ))

            let downloadConsole = DownloadConsole(format: output.format)
            let report = WatchReport(format: output.format, style: Console.stdoutStyle, verbose: output.verbose > 0, printBaseline: printBaseline)
            let started = ContinuousClock.now
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask { _ = await downloadConsole.show(downloads.events) }
                tasks.addTask {
                    for await results in delivery.results {
                        switch output.format {
                        case .text: for line in DeliveryReport.lines(for: results) { downloadConsole.error(line) }
                        case .json: downloadConsole.out(results.map(DeliveryReport.jsonLine))
                        }
                    }
                }
                tasks.addTask {
                    for await event in watcher.events {
                        guard case .fetched(let source, let next) = event else { continue }
                        let now = Date()
                        downloadConsole.out(report.lines(for: source, at: now, nextFetch: next.map { now.addingTimeInterval($0.seconds) }))
                        if let failure = source.outcome.failure, output.verbose == 0 {
                            downloadConsole.error("\(source.name): \(failure.message)")
                        }
                        if !source.queuedDownloads.isEmpty {
                            for entry in source.queuedDownloads { downloadConsole.sink(.queued(entry)) }
                            await downloads.wake()
                        }
                    }
                }
                tasks.addTask {
                    for await _ in shutdownRequests {
                        await group.triggerGracefulShutdown()
                        return
                    }
                }
                let timer = Task { [runFor] in
                    guard let runFor else { return }
                    try await Task.sleep(for: runFor)
                    shutdown.yield()
                }
                do {
                    try await group.run()
                } catch is WatchSignals.CancelRequested {
                    // A second Ctrl-C: fetches in flight were cancelled; the summary follows.
                } catch {
                    downloadConsole.error("watch: \(error)")
                }
                timer.cancel()
                shutdown.finish()
                await tasks.waitForAll()
            }
            await downloadConsole.finish()
            Console.out(report.summary(await watcher.tallies, duration: ContinuousClock.now - started))
            withExtendedLifetime(lock) {}
        }

        private func selectSources(_ config: FetchConfig) throws -> [SourceConfig] {
            try configOptions.requireSources(sourceNames, in: config)
            return config.sources(named: sourceNames)
        }

        /// SIGHUP: read the config again; keep the old one running if the new one is invalid.
        ///
        /// Sources, outputs and `max_in_flight` change at once. `state_dir`, `http:` and
        /// `downloads:` belong to what was opened at start (the state, the connections, the
        /// download queue); a change to them is named and takes effect at the next start.
        private func reload(into watcher: Watcher<ContinuousClock>, delivery: DeliveryService, running started: FetchConfig, stateDirectory: StateDirectory) async {
            guard let config = await configOptions.reload(still: "still watching") else { return }
            if stateOptions.directory(for: config).path != stateDirectory.path {
                Console.error("SIGHUP: state_dir changed; it takes effect at the next start, snapshots stay in \(stateDirectory.path)")
            }
            ConfigOptions.reportChangesNeedingARestart(from: started, to: config, downloads: true)
            let sources = config.sources(named: sourceNames.filter { name in config.sources.contains { $0.name == name } })
            // Outputs first: an added source starts at once, and its first fetch routes to them.
            await watcher.reconfigure(outputs: config.outputs, maxInFlight: config.maxInFlight)
            await delivery.use(outputs: config.outputs)
            let change = await watcher.reload(sources)
            configOptions.reportReloaded(added: change.added, removed: change.removed, changed: change.changed, outputs: config.outputs)
        }
    }
}

/// The signals of `watch`: SIGINT or SIGTERM asks for a graceful shutdown; a SIGINT once
/// stopping (after a first signal, `--for` or `--fetches`) cancels fetches in flight at once,
/// by throwing, which cancels the group; SIGHUP reloads the config.
struct WatchSignals: Service {
    struct CancelRequested: Error {}

    let signals: UnixSignalsSequence
    let isStopping: @Sendable () async -> Bool
    let requestShutdown: @Sendable () -> Void
    let reload: @Sendable () async -> Void

    func run() async throws {
        var stopRequested = false
        for await signal in signals.cancelOnGracefulShutdown() {
            switch signal {
            case .sighup:
                await reload()
            case .sigint, .sigterm:
                let stopping = await isStopping()
                if signal == .sigint, stopRequested || stopping {
                    Console.error("cancelling fetches in flight")
                    throw CancelRequested()
                }
                stopRequested = true
                requestShutdown()
            default:
                break
            }
        }
    }
}
