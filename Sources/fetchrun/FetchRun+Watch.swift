import ArgumentParser
import FetchRunKit
import Foundation
import Logging

extension FetchRun {
    /// Keeps fetching every source on its own schedule and prints what is new as it arrives.
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Keep fetching each source on its own schedule; print each new item as it arrives.",
            discussion: """
            Each source is fetched at start (spread over the first second), then every `interval`; \
            after fetches with no data the interval stretches ×1.5 up to `max_interval`, and snaps \
            back on new data; failures back off exponentially. SIGINT or SIGTERM stops it: fetches \
            in flight get --grace, snapshots are written, a summary is printed, exit 0. A second \
            SIGINT cancels at once. SIGHUP reloads the config (an invalid one keeps the old running).
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Option(name: .customLong("source"), help: ArgumentHelp("Watch only this source (repeatable).", valueName: "name"))
        var sourceNames: [String] = []

        @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long, as if interrupted.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var runFor: Duration?

        @Option(help: ArgumentHelp("Stop after this many fetches in all.", valueName: "n"))
        var fetches: Int?

        @Option(help: ArgumentHelp("How long fetches in flight may finish when stopping.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var grace: Duration = .seconds(5)

        @Flag(help: "Print every item of a source's first fetch, not one baseline line.")
        var printBaseline = false

        enum Control: Sendable {
            case interrupt, terminate, hangup, timeUp, limitReached, finished
        }

        func validate() throws {
            if let fetches, fetches < 1 { throw ValidationError("--fetches must be at least 1") }
        }

        func run() async throws {
            // Signals first: from here on a SIGINT is a request to stop, never an abrupt end.
            let (controls, control) = AsyncStream<Control>.makeStream()
            let inbox = SignalInbox([SIGINT, SIGTERM, SIGHUP]) { signal in
                control.yield(signal == SIGHUP ? .hangup : signal == SIGTERM ? .terminate : .interrupt)
            }
            output.bootstrapLogging()
            let config = try configOptions.load()
            let sources = try selectSources(config)
            let stateDirectory = stateOptions.directory(for: config)
            let lock = try stateOptions.prepareAndLock(stateDirectory)
            if let runFor {
                Task {
                    try? await Task.sleep(for: runFor)
                    control.yield(.timeUp)
                }
            }

            var options = Watcher<ContinuousClock>.Options()
            options.maxInFlight = config.maxInFlight
            options.maxFetches = fetches
            let (events, eventSink) = AsyncStream<WatchEvent>.makeStream()
            let runner = FetchRunner(store: stateDirectory.snapshots, downloads: stateDirectory.downloads, logger: Logger(label: "fetchrun"))
            let downloadConsole = DownloadConsole(format: output.format)
            let downloads = BackgroundDownloads(queue: stateDirectory.downloads) {
                Downloader(config: config, stateDirectory: stateDirectory, holdsStateLock: true, console: downloadConsole)
            }
            let watcher = Watcher(runner: runner, clock: ContinuousClock(), options: options, events: eventSink)
            let report = WatchReport(format: output.format, style: Console.stdoutStyle, verbose: output.verbose > 0, printBaseline: printBaseline)
            let printer = Task {
                for await event in events {
                    switch event {
                    case .fetched(let source, let next):
                        let now = Date()
                        downloadConsole.out(report.lines(for: source, at: now, nextFetch: next.map { now.addingTimeInterval($0.seconds) }))
                        if let failure = source.outcome.failure, output.verbose == 0 {
                            downloadConsole.error("\(source.name): \(failure.message)")
                        }
                        if !source.queuedDownloads.isEmpty {
                            for entry in source.queuedDownloads { downloadConsole.sink(.queued(entry)) }
                            await downloads.kick()
                        }
                    case .fetchLimitReached:
                        control.yield(.limitReached)
                    }
                }
            }

            let started = ContinuousClock.now
            // Downloads a previous run left queued or half done continue from the start.
            if let pending = try? stateDirectory.downloads.entries(), pending.contains(where: { $0.state == .queued || $0.state == .downloading }) {
                await downloads.kick()
            }
            await watcher.start(sources)
            var stopping = false
            controlLoop: for await signal in controls {
                switch signal {
                case .hangup:
                    await reload(into: watcher, stateDirectory: stateDirectory)
                case .interrupt where stopping:
                    Console.error("cancelling fetches in flight")
                    await watcher.cancelAll()
                case .interrupt, .terminate, .timeUp, .limitReached:
                    guard !stopping else { continue }
                    stopping = true
                    let grace = self.grace
                    Task {
                        await watcher.stop(grace: grace)
                        control.yield(.finished)
                    }
                case .finished:
                    break controlLoop
                }
            }
            eventSink.finish()
            await printer.value
            _ = await downloads.stop()
            await downloadConsole.finish()
            Console.out(report.summary(await watcher.tallies, duration: ContinuousClock.now - started))
            withExtendedLifetime((lock, inbox)) {}
        }

        private func selectSources(_ config: FetchConfig) throws -> [SourceConfig] {
            let unknown = sourceNames.filter { name in !config.sources.contains { $0.name == name } }
            guard unknown.isEmpty else {
                Console.error("unknown source\(unknown.count == 1 ? "" : "s") \(unknown.map { "'\($0)'" }.joined(separator: ", ")); \(configOptions.path) has: \(config.sources.map(\.name).joined(separator: ", "))")
                throw ExitStatus.usage
            }
            return config.sources(named: sourceNames)
        }

        /// SIGHUP: read the config again; keep the old one running if the new one is invalid.
        private func reload(into watcher: Watcher<ContinuousClock>, stateDirectory: StateDirectory) async {
            let config: FetchConfig
            do {
                config = try ConfigLoader().load(path: configOptions.path)
            } catch {
                Console.error("SIGHUP: \(configOptions.path) has \(error.diagnostics.count) problem\(error.diagnostics.count == 1 ? "" : "s"); still watching with the previous config")
                for diagnostic in error.diagnostics { Console.error(diagnostic.description) }
                return
            }
            if stateOptions.directory(for: config).path != stateDirectory.path {
                Console.error("SIGHUP: state_dir changed; it takes effect at the next start, snapshots stay in \(stateDirectory.path)")
            }
            let sources = config.sources(named: sourceNames.filter { name in config.sources.contains { $0.name == name } })
            let change = await watcher.reload(sources)
            func names(_ list: [String]) -> String { list.isEmpty ? "none" : list.joined(separator: ", ") }
            Console.error("SIGHUP: reloaded \(configOptions.path): added \(names(change.added)), removed \(names(change.removed)), changed \(names(change.changed))")
        }
    }
}
