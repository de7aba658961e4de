import ArgumentParser
import FetchRunCluster
import FetchRunKit
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

extension FetchRun {
    /// One of many identical processes sharing state in PostgreSQL.
    struct Worker: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "worker",
            abstract: "Work through the config's sources with other workers, sharing state in PostgreSQL (state: postgres://…).",
            discussion: """
            Every worker loads the same config, syncs its sources into PostgreSQL, and then \
            leases due sources in batches (FOR UPDATE SKIP LOCKED), fetches them and completes \
            each under its lease: no coordinator, no source fetched by two workers at once. A \
            worker that dies loses its leases after --lease; the others take its sources over. \
            Outputs send from the shared outbox. SIGINT or SIGTERM stops gracefully: fetches in \
            flight are completed and leases given back. SIGHUP reloads the config and syncs it \
            (an invalid one keeps the old running). See docs/scale-out.md.
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Option(help: ArgumentHelp("Sources leased per query.", valueName: "n"))
        var batch = 50

        @Option(help: ArgumentHelp("How long a lease holds without a heartbeat: the longest a dead worker's sources wait (e.g. 60s).", valueName: "duration"))
        var lease = "60s"

        @Option(help: ArgumentHelp("Stop after this many fetches (tests, benchmarks).", valueName: "n"))
        var fetches: Int?

        @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long (e.g. 10m).", valueName: "duration"))
        var runFor: String?

        func run() async throws {
            // SIGINT and SIGTERM reach the service group (a graceful stop); SIGHUP reloads.
            let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
            output.bootstrapLogging()
            let config = try await configOptions.load()
            guard let url = stateOptions.postgresURL(for: config) else {
                Console.error("fetchrun worker needs state in PostgreSQL: set 'state: postgres://user@host/database' in the config, or --state")
                throw ExitStatus.usage
            }
            guard let leaseTime = try? DurationText.parse(lease), leaseTime >= .seconds(1) else {
                Console.error("--lease: '\(lease)' is not a duration of a second or more")
                throw ExitStatus.usage
            }
            let stopAfter = try runFor.map { text -> Duration in
                guard let duration = try? DurationText.parse(text) else {
                    Console.error("--for: '\(text)' is not a duration")
                    throw ExitStatus.usage
                }
                return duration
            }
            let logger = Logger(label: "fetchrun")
            let state: ClusterState
            do {
                state = try await ClusterState.connect(url: url, logger: logger)
                try await state.syncSources(config.sources)
            } catch {
                Console.error("\(error)")
                throw ExitStatus.stateDirectoryUnusable
            }
            var options = ClusterWorker.Options()
            options.batch = max(1, batch)
            options.leaseTime = leaseTime
            options.maxInFlight = config.maxInFlight
            options.maxFetches = fetches
            let delivery = DeliveryService(delivery: OutboxDelivery(outputs: config.outputs, database: state, http: HTTPClient(configuration: config.http), logger: logger))
            let worker = ClusterWorker(state: state, config: config, options: options, logger: logger, onOutboxChanged: { delivery.wake() })
            var groupConfiguration = ServiceGroupConfiguration(
                services: [
                    .init(service: delivery),
                    .init(service: worker, successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
            // A stop completes the fetches in flight and gives the leases back — unless
            // PostgreSQL does not answer: past the lease time the leases have lapsed anyway, so
            // the stop is cut short (cancelled) rather than waiting for a server that is gone.
            groupConfiguration.maximumGracefulShutdownDuration = leaseTime
            let group = ServiceGroup(configuration: groupConfiguration)
            let reloads = Task {
                for await signal in signals where signal == .sighup {
                    await reload(worker: worker, delivery: delivery, running: config)
                }
            }
            let report = WatchReport(format: output.format, style: Console.stdoutStyle, verbose: output.verbose > 0, printBaseline: false)
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    for await (source, due) in worker.reports {
                        Console.out(report.lines(for: source, at: Date(), nextFetch: due))
                        if let failure = source.outcome.failure, output.verbose == 0 { Console.error("\(source.name): \(failure.message)") }
                    }
                }
                tasks.addTask {
                    for await results in delivery.results {
                        switch output.format {
                        case .text: for line in DeliveryReport.lines(for: results) { Console.error(line) }
                        case .json: Console.out(results.map(DeliveryReport.jsonLine))
                        }
                    }
                }
                let timer = Task {
                    guard let stopAfter else { return }
                    try await Task.sleep(for: stopAfter)
                    await group.triggerGracefulShutdown()
                }
                do {
                    try await group.run()
                } catch {
                    Console.error("worker: \(error)")
                }
                timer.cancel()
                reloads.cancel()
                await tasks.waitForAll()
            }
        }

        /// SIGHUP: the config again, synced into PostgreSQL; sources, outputs and
        /// `max_in_flight` change at once, `state` and `http:` at the next start.
        /// An invalid config, or PostgreSQL not taking the sync, keeps the previous one.
        private func reload(worker: ClusterWorker, delivery: DeliveryService, running started: FetchConfig) async {
            guard let config = await configOptions.reload(still: "still working") else { return }
            if stateOptions.postgresURL(for: config) != stateOptions.postgresURL(for: started) {
                Console.error("SIGHUP: state changed; it takes effect at the next start")
            }
            ConfigOptions.reportChangesNeedingARestart(from: started, to: config, downloads: false)
            do {
                let change = try await worker.reload(config)
                await delivery.use(outputs: config.outputs)
                configOptions.reportReloaded(added: change.added, removed: change.removed, changed: change.changed, outputs: config.outputs)
            } catch {
                Console.error("SIGHUP: \(error); still working with the previous config")
            }
        }
    }

    /// The workers sharing PostgreSQL state, from their heartbeats.
    struct Workers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "workers",
            abstract: "List the live workers sharing PostgreSQL state: since when, last heartbeat, sources each holds."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            output.bootstrapLogging()
            let config = try await configOptions.load()
            guard let url = stateOptions.postgresURL(for: config) else {
                Console.error("workers share state in PostgreSQL: set 'state: postgres://user@host/database' in the config, or --state")
                throw ExitStatus.usage
            }
            let workers: [WorkerInfo]
            do {
                workers = try await ClusterState.connect(url: url).workers()
            } catch {
                Console.error("\(error)")
                throw ExitStatus.stateDirectoryUnusable
            }
            switch output.format {
            case .text:
                if workers.isEmpty { Console.out(["no live workers"]) }
                Console.out(workers.map { worker in
                    "\(TerminalText.safe(worker.id))  pid \(worker.pid) on \(TerminalText.safe(worker.host))  since \(TextReport.timestamp(worker.startedAt))  heartbeat \(TextReport.timestamp(worker.heartbeatAt))  holding \(worker.holding)"
                })
            case .json:
                Console.out(workers.map { worker in
                    JSONEvents.event("worker") { json in
                        json.field("id", worker.id)
                        json.field("host", worker.host)
                        json.field("pid", worker.pid)
                        json.field("started_at", worker.startedAt)
                        json.field("heartbeat_at", worker.heartbeatAt)
                        json.field("holding", worker.holding)
                    }
                })
            }
        }
    }
}
