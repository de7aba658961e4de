import ArgumentParser
import FetchRunKit
import FetchRunMonitor
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

extension FetchRun {
    /// One-shot: fetch every enabled source once, concurrently, report, exit.
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Fetch every enabled source once, each within its deadline, and report (the default command).",
            discussion: """
            Exits 0 when every source succeeded, 2 when some failed, 3 when all failed. \
            Enclosures queued by sources with `download:` are then downloaded before the command \
            exits (with progress on a terminal), or handed to a background `fetchrun transfer` \
            with --background-downloads. Download failures are reported, not counted in the exit \
            status; `fetchrun downloads` lists them.
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Option(name: .customLong("source"), help: ArgumentHelp("Fetch only this source (repeatable); a disabled source runs when named.", valueName: "name"), completion: SourceNameCompletion.kind)
        var sourceNames: [String] = []

        @Flag(help: "Fetch and report, but write nothing (no snapshots, no lock, no downloads).")
        var dryRun = false

        @Flag(help: "Hand queued downloads to a detached `fetchrun transfer` and exit at once.")
        var backgroundDownloads = false

        @Flag(help: "List every new item, a first fetch's too (text output lists 10 per source, and a first fetch as one baseline line).")
        var listAll = false

        @Flag(help: "Fetch only the sources that are due (never fetched, or their interval, stretch, backoff or Retry-After has passed), as watch would: the mode for cron.")
        var due = false

        @Option(help: ArgumentHelp("Write the run's metrics here when it ends, for node_exporter's textfile collector (written whole: a temporary file, then renamed).", valueName: "path"))
        var metricsFile: String?

        func run() async throws {
            // Signals first: from here on Ctrl-C stops the run and reports what was done.
            let lifecycle = await Lifecycle()
            output.bootstrapLogging()
            let config = try await configOptions.load()
            output.adoptLogFormat(of: config)
            try configOptions.requireSources(sourceNames, in: config)

            let stateDirectory = stateOptions.directory(for: config)
            let lock = dryRun ? nil : try await stateOptions.prepareAndLock(stateDirectory)
            let store: SQLiteStateStore
            if dryRun {
                do {
                    store = try await SQLiteStateStore.inMemory(readingSnapshotsOf: stateDirectory)
                } catch {
                    throw CommandFailure(ExitStatus.stateDirectoryUnusable, error.description)
                }
            } else {
                store = try await stateOptions.openStore(in: stateDirectory)
            }
            var sources = config.sources(named: sourceNames)
            // Another process holding state.db's lock costs the run its deadline budget once.
            if !dryRun { await store.limitLockWaits(until: SystemClock().now + (sources.map(\.settings.deadline).max() ?? .seconds(30))) }
            if due { sources = try await dueSources(sources, stateDirectory: stateDirectory, store: dryRun ? nil : store) }
            // The metrics file is written from a registry of the run's own.
            let monitorMetrics = metricsFile.map { _ in MonitorMetrics() }
            let metrics = monitorMetrics.map { FetchMetrics(factory: $0.factory, sourceCount: sources.count) } ?? .none
            metrics.recordBuild(version: FetchRunVersion.current)
            let client = CurlHTTPClient(configuration: config.http, metrics: metrics)
            let renderer = config.renderer(http: client)
            let engine = FetchEngine(
                sources: sources, store: store, http: client,
                outputs: config.outputs, maxInFlight: config.maxInFlight,
                settings: .init(metrics: metrics, downloads: dryRun ? nil : stateDirectory.downloads, dryRun: dryRun, renderer: renderer,
                    screenshots: dryRun ? nil : ScreenshotFolder(stateDirectory: stateDirectory.path)
                ), logger: Logger(label: "fetchrun")
            )
            let http = engine.http
            let format = output.format
            let sourcesToFetch = sources

            // The browser first: the group stops it last, once no fetch renders any more.
            let ending = try await lifecycle.run([renderer, http]) {
                // A signal cancels the fetches in flight; those that finished are kept.
                let fetched = await cancelWhenGracefulShutdown {
                    // New items are printed (JSON) or counted (text) as sources finish, so a run
                    // over thousands of feeds does not hold every new item until the end.
                    await engine.fetchOnce(
                        sourcesToFetch,
                        keepingNewItems: format == .json ? 0 : listAll ? .max : TextReport.itemsListedPerSource,
                        // A first fetch is one baseline line in a text report.
                        keepingBaselineItems: format == .json || !listAll ? 0 : .max
                    ) { source in
                        if format == .json {
                            Console.out(JSONEvents.itemLines(for: source) + source.queuedDownloads.flatMap { DownloadReport.jsonLines(for: .queued($0)) })
                        }
                    }
                }
                let report = print(fetched, rejected: config.rejectedSources)
                guard !Task.isShuttingDownGracefully else { return report }
                // Delivery is not the fetch: what an output does not take waits in the outbox
                // for the next run, and the exit status is the fetches'.
                if !dryRun, !config.outputs.isEmpty {
                    // A signal stops the deliveries too: an output waiting on a silent server
                    // must not hold the stop for its whole timeout. What was not sent stays in
                    // the outbox (a message cut off mid-send goes again: at least once).
                    let results = await cancelWhenGracefulShutdown { await engine.deliverDue() }
                    switch format {
                    case .text: Console.error(DeliveryReport.lines(for: results))
                    case .json: Console.out(results.map(DeliveryReport.jsonLine))
                    }
                }
                if !dryRun, !Task.isShuttingDownGracefully, hasWork(stateDirectory.downloads) {
                    if backgroundDownloads {
                        handOff(stateDirectory.downloads, stateDirectory: stateDirectory)
                    } else {
                        await download(config: config, stateDirectory: stateDirectory)
                    }
                }
                return report
            }
            withExtendedLifetime(lock) {}
            if let metricsFile, let monitorMetrics {
                if let pending = try? await store.pendingCounts() {
                    for output in config.outputs {
                        metrics.recordOutboxPending(output: output.name, count: pending[output.name] ?? 0)
                    }
                }
                do {
                    try MetricsFile.write(monitorMetrics.exposition(), to: metricsFile)
                } catch {
                    Console.error("\(error)")
                }
            }
            if !dryRun, await store.lockedOut {
                throw CommandFailure(ExitStatus.stateDirectoryLocked, "state database \(store.path): \(SQLiteStateStore.lockedReason); what was fetched could not all be recorded and will be fetched again")
            }
            if let stoppedBy = ending.stoppedBy {
                throw CommandFailure(ExitStatus.interrupted(by: stoppedBy), "stopped by \(stoppedBy == .sigterm ? "SIGTERM" : "Ctrl-C"): what finished is saved, the rest was cancelled")
            }
            let status = ending.result.map(ExitStatus.forRun) ?? .success
            if status != .success { throw CommandFailure(status) }
        }

        /// Prints the run's report, with the sources the config names but that cannot run
        /// failed each with its reasons.
        private func print(_ fetched: RunReport, rejected: [RejectedSource]) -> RunReport {
            let rejected = rejected.filter { sourceNames.isEmpty || sourceNames.contains($0.name) }.map { source in
                SourceReport(name: source.name, type: "?", outcome: .failed(source.failure), totalItems: 0, duration: .zero)
            }
            if output.format == .json, !rejected.isEmpty { Console.out(rejected.map { JSONEvents.source($0) }) }
            let report = rejected.isEmpty ? fetched : RunReport(sources: fetched.sources + rejected, duration: fetched.duration)
            switch output.format {
            case .text: Console.out(TextReport(style: Console.stdoutStyle, listsAll: listAll).lines(for: report))
            case .json: Console.out(JSONEvents.summaryLines(for: report))
            }
            return report
        }

        /// The sources whose time has come, saying on stderr how many are not due yet and when
        /// the first of them is. `interval: never` sources are never due, as in watch mode.
        private func dueSources(_ sources: [SourceConfig], stateDirectory: StateDirectory, store: SQLiteStateStore?) async throws -> [SourceConfig] {
            var states: [String: SourceState] = [:]
            do {
                var readFrom = store
                if readFrom == nil { readFrom = try await SQLiteStateStore.openExisting(in: stateDirectory) }
                if let readFrom { states = try await readFrom.states() }
            } catch {
                throw CommandFailure(ExitStatus.stateDirectoryUnusable, "\(error)")
            }
            let now = SystemClock().date
            let scheduled = sources.filter { $0.settings.interval != .never }
            let due = scheduled.filter { states[$0.name]?.isDue(at: now) ?? true }
            let waiting = scheduled.count - due.count
            if waiting > 0 {
                let next = scheduled.compactMap { states[$0.name]?.nextDue }.filter { $0 > now }.min()
                Console.error("\(waiting) source\(waiting == 1 ? " is" : "s are") not due yet" + (next.map { "; the next at \(CalendarText.rfc3339String(from: $0))" } ?? ""))
            }
            return due
        }

        /// Whether the queue holds downloads to run; an unreadable queue is said, not skipped silently.
        private func hasWork(_ queue: DownloadQueue) -> Bool {
            do {
                return try DownloadService.hasPendingWork(queue)
            } catch {
                Console.error("\(error); no downloads this run")
                return false
            }
        }

        /// Waits for the queue to drain, showing progress — unless a transfer is already on it.
        /// A signal stops the downloads; their partial files resume at the next run.
        private func download(config: FetchConfig, stateDirectory: StateDirectory) async {
            let service = DownloadService(stateDirectory: stateDirectory, limits: config.downloads, mode: .untilDrained, lockHeld: .stateDirectory)
            do {
                try await service.takeTransferLock()
            } catch {
                Console.error(error.isLocked
                    ? "downloads continue in the transfer already running (process \(service.queue.transferHolder.map(String.init) ?? "?")); `fetchrun downloads` shows them"
                    : error.description)
                return
            }
            _ = await DownloadConsole.download(with: service, format: output.format)
        }

        /// Starts a detached `fetchrun transfer` unless one is running; it takes over the queue.
        private func handOff(_ queue: DownloadQueue, stateDirectory: StateDirectory) {
            if let pid = queue.transferHolder {
                Console.error("downloads continue in the transfer already running (process \(pid)); `fetchrun downloads` shows them")
                return
            }
            let configPath = URL(fileURLWithPath: configOptions.path).standardizedFileURL.path
            do {
                let pid = try DetachedProcess.launch(
                    executable: DetachedProcess.currentExecutable,
                    arguments: ["transfer", "--config", configPath, "--state-dir", stateDirectory.path],
                    logPath: queue.transferLogPath
                )
                Console.error("downloading in the background (fetchrun transfer, process \(pid)); `fetchrun downloads` shows progress, \(queue.transferLogPath) its log")
            } catch {
                Console.error("\(error); the queue stays for the next run or `fetchrun transfer`")
            }
        }
    }
}
