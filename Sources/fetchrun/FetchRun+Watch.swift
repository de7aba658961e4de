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
            sources, outputs and max_in_flight at once; state_dir, http and downloads at the next start. \
            A --listen address that cannot be bound ends it at once with exit 69.
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup var monitor: MonitorOptions

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
            var lifecycle = await Lifecycle(trappingHangUp: true)
            output.bootstrapLogging()
            let config = try await configOptions.load()
            output.adoptLogFormat(of: config)
            for source in config.rejectedSources where sourceNames.isEmpty || sourceNames.contains(source.name) {
                Console.error("source '\(source.name)' is not watched: \(source.diagnostics.map(\.description).joined(separator: "; "))")
            }
            try configOptions.requireSources(sourceNames, in: config)
            let stateDirectory = stateOptions.directory(for: config)
            let lock = try await stateOptions.prepareAndLock(stateDirectory, forWatch: true)
            let store = try await stateOptions.openStore(in: stateDirectory)
            let logger = Logger(label: "fetchrun")
            let sources = config.sources(named: sourceNames)
            var options = Watcher.Options()
            options.maxFetches = fetches
            options.grace = grace
            let (session, endpoint) = try await WatchSession.assemble(
                config: config, sources: sources, store: store, monitor: monitor, downloadsIn: stateDirectory, options: options, leasing: nil,
                configOptions: configOptions, output: output, printBaseline: printBaseline, logger: logger
            )
            let monitoring = session.monitoring
            lifecycle.onStopping = { monitoring?.stopping() }
            try await session.run(lifecycle, services: endpoint.map { [$0] } ?? [], stopAfter: runFor, still: "still watching") { [sourceNames, stateOptions] reloaded in
                var waiting = ConfigOptions.sectionsNeedingARestart(from: config, to: reloaded, downloads: true)
                if stateOptions.directory(for: reloaded).path != stateDirectory.path { waiting.insert("state_dir", at: 0) }
                return (reloaded.sources(named: sourceNames.filter { name in reloaded.sources.contains { $0.name == name } }), waiting)
            }
            withExtendedLifetime(lock) {}
        }
    }
}
