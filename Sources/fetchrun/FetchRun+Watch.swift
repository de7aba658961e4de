import ArgumentParser
import FetchRunKit
import Foundation
import Logging

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
            let lifecycle = await Lifecycle(trappingHangUp: true)
            output.bootstrapLogging()
            let config = try await configOptions.load()
            for source in config.rejectedSources where sourceNames.isEmpty || sourceNames.contains(source.name) {
                Console.error("source '\(source.name)' is not watched: \(source.diagnostics.map(\.description).joined(separator: "; "))")
            }
            let sources = try selectSources(config)
            let stateDirectory = stateOptions.directory(for: config)
            let lock = try await stateOptions.prepareAndLockWatch(stateDirectory)
            let store = try await stateOptions.openStore(in: stateDirectory)

            var options = Watcher<ContinuousClock>.Options()
            options.maxInFlight = config.maxInFlight
            options.maxFetches = fetches
            options.grace = grace
            let logger = Logger(label: "fetchrun")
            let http = HTTPClient(configuration: config.http)
            let delivery = DeliveryService(delivery: OutboxDelivery(outputs: config.outputs, database: store, http: http, logger: logger))
            var pipeline = FetchPipeline(store: store, http: http, logger: logger)
            pipeline.outputs = config.outputs
            pipeline.downloads = stateDirectory.downloads
            pipeline.onOutboxChanged = { delivery.wake() }
            // A restarted watch carries on where the last run or watch left each source.
            let recorded = (try? await store.states()) ?? [:]
            let watcher = Watcher(sources: sources, pipeline: pipeline, clock: ContinuousClock(), options: options, resuming: recorded)
            let downloads = DownloadService(stateDirectory: stateDirectory, limits: config.downloads, mode: .untilShutdown, lockHeld: .watch, logger: logger)
            let session = WatchSession(watcher: watcher, delivery: delivery, downloads: downloads, output: output, printBaseline: printBaseline)
            try await session.run(lifecycle, services: [http], stopAfter: runFor) {
                await reload(into: watcher, delivery: delivery, running: config, stateDirectory: stateDirectory)
            }
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
            do {
                let change = try await watcher.reload(sources)
                configOptions.reportReloaded(added: change.added, removed: change.removed, changed: change.changed, outputs: config.outputs)
            } catch {
                Console.error("SIGHUP: \(error); still watching with the previous sources")
            }
        }
    }
}
