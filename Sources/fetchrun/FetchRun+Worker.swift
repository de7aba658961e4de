import ArgumentParser
import FetchRunCluster
import FetchRunKit
import Foundation
import Logging

extension FetchRun {
    /// One of many identical processes sharing state in PostgreSQL.
    struct Worker: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "worker",
            abstract: "Work through the config's sources with other workers, sharing state in PostgreSQL (state: postgres://…).",
            discussion: """
            Every worker loads the same config, syncs its sources into PostgreSQL, and then \
            leases due sources in batches (FOR UPDATE SKIP LOCKED), fetches them as watch does and \
            records each under its lease: no coordinator, no source fetched by two workers at once. A \
            worker that dies loses its leases after --lease; the others take its sources over. \
            Outputs send from the shared outbox. SIGINT or SIGTERM stops gracefully: fetches in \
            flight are completed and leases given back. SIGHUP reloads the config and syncs it \
            (an invalid one keeps the old running). See docs/scale-out.md.
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup var monitor: MonitorOptions

        @Option(help: ArgumentHelp("Sources leased per query.", valueName: "n"))
        var batch = 50

        @Option(help: ArgumentHelp("How long a lease holds without a heartbeat: the longest a dead worker's sources wait (e.g. 60s).", valueName: "duration"), transform: { try DurationText.parse($0) })
        var lease: Duration = .seconds(60)

        @Option(help: ArgumentHelp("Stop after this many fetches (tests, benchmarks).", valueName: "n"))
        var fetches: Int?

        @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long (e.g. 10m).", valueName: "duration"), transform: { try DurationText.parse($0) })
        var runFor: Duration?

        func validate() throws {
            if lease < .seconds(1) { throw ValidationError("--lease must be a second or more") }
        }

        func run() async throws {
            // SIGINT and SIGTERM stop it gracefully; SIGHUP reloads.
            var lifecycle = await Lifecycle(trappingHangUp: true)
            output.bootstrapLogging()
            let config = try await configOptions.load()
            output.adoptLogFormat(of: config)
            guard let url = stateOptions.postgresURL(for: config) else {
                throw CommandFailure(ExitStatus.usage, "fetchrun worker needs state in PostgreSQL: set 'state: postgres://user@host/database' in the config, or --state")
            }
            let leaseTime = lease, stopAfter = runFor
            let logger = Logger(label: "fetchrun")
            let store: PostgresStateStore
            do {
                store = try PostgresStateStore(url: url, logger: logger)
            } catch {
                throw CommandFailure(ExitStatus.stateDirectoryUnusable, "\(error)")
            }
            var options = Watcher.Options()
            options.maxFetches = fetches
            let (session, endpoint) = try await WatchSession.assemble(
                config: config, sources: config.sources, store: store, monitor: monitor, downloadsIn: nil, options: options,
                leasing: LeasePolicy(schedule: store, batch: batch, leaseTime: leaseTime),
                configOptions: configOptions, output: output, printBaseline: false, logger: logger
            )
            // A stop completes the fetches in flight and gives the leases back — unless
            // PostgreSQL does not answer: past the lease time the leases have lapsed anyway, so
            // the stop is cut short (cancelled) rather than waiting for a server that is gone.
            lifecycle.maximumGracefulShutdownDuration = leaseTime
            let monitoring = session.monitoring
            lifecycle.onStopping = { monitoring?.stopping() }
            do {
                // PostgreSQL's pool first: it stops last, after the leases are given back.
                try await session.run(lifecycle, services: (endpoint.map { [$0] } ?? []) + [store.client], stopAfter: stopAfter, still: "still working") { [stateOptions] reloaded in
                    var waiting = ConfigOptions.sectionsNeedingARestart(from: config, to: reloaded, downloads: false)
                    if stateOptions.postgresURL(for: reloaded) != url { waiting.insert("state", at: 0) }
                    return (reloaded.sources, waiting)
                } before: {
                    _ = try await store.schedule(config.sources, now: SystemClock().date)
                }
            } catch let failure as CommandFailure {
                throw failure
            } catch {
                throw CommandFailure(ExitStatus.stateDirectoryUnusable, "\(error)")
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
                throw CommandFailure(ExitStatus.usage, "workers share state in PostgreSQL: set 'state: postgres://user@host/database' in the config, or --state")
            }
            let store: PostgresStateStore
            do {
                store = try PostgresStateStore(url: url)
            } catch {
                throw CommandFailure(ExitStatus.stateDirectoryUnusable, "\(error)")
            }
            let workers: [WorkerInfo]
            do {
                workers = try await withRunning(store.client) { try await store.workers() }
            } catch {
                throw CommandFailure(ExitStatus.stateDirectoryUnusable, "\(error)")
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
