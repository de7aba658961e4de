import ArgumentParser
import FetchRunKit
import FetchRunMonitor
import Foundation
import Logging
import ServiceLifecycle

/// `--listen`, shared by `watch` and `worker`.
struct MonitorOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Serve /metrics, /healthz, /readyz and /status on this address (overrides listen: in the config).",
        valueName: "host:port"
    ))
    var listen: String?

    /// The endpoint's settings: `--listen`'s address with the config's token and networks, or
    /// the config's `listen:` block; `nil` when neither asks for one.
    /// - Throws: a usage error when the address cannot be read or is open without protection.
    func settings(for config: FetchConfig) throws -> ListenSettings? {
        guard let listen else { return config.listen }
        var settings = config.listen ?? ListenSettings(host: "127.0.0.1", port: 0)
        do {
            (settings.host, settings.port) = try ListenSettings.address(listen)
        } catch {
            throw ValidationError("--listen \(error)")
        }
        if let problem = settings.problem { throw ValidationError("--listen: \(problem)") }
        return settings
    }
}

/// A watch's or worker's view from outside: the metrics its engine records, whether its loop
/// turns, and — with `--listen` — the endpoint that serves them.
struct Monitoring {
    /// How often the schedule loop turns at least while monitored: `/healthz` calls it stalled
    /// after two of these without a turn.
    static let turnInterval: Duration = .seconds(5)

    let metrics = MonitorMetrics()
    let health: Health
    let settings: ListenSettings?
    /// systemd's notify socket, when `NOTIFY_SOCKET` names one.
    let notifier: SystemdNotifier?
    let status: ServiceStatus
    /// What the endpoint shows of the config: updated by each reload that takes.
    let served = ServedConfig()

    init(settings: ListenSettings?, sourceCount: Int, notifier: SystemdNotifier? = SystemdNotifier()) {
        self.settings = settings
        self.notifier = notifier
        // Under systemd's watchdog the loop turns at least twice per watchdog period.
        let turnInterval = notifier?.watchdogInterval.map { min($0, Self.turnInterval) } ?? Self.turnInterval
        health = Health(turnInterval: turnInterval)
        status = ServiceStatus(sources: sourceCount)
    }

    /// Whether anything outside watches the loop.
    var isWatched: Bool { settings != nil || notifier != nil }

    /// What the engine records into: the Prometheus registry when anyone will read it.
    func fetchMetrics(sourceCount: Int, logger: Logger) -> FetchMetrics {
        guard settings != nil else { return .none }
        let recorded = FetchMetrics(factory: metrics.factory, sourceCount: sourceCount)
        recorded.recordBuild(version: FetchRunVersion.current)
        if recorded.foldsSources {
            logger.notice("\(sourceCount) sources: more than \(FetchMetrics.perSourceLabelLimit), so per-source metrics are folded into source=\"\(FetchMetrics.foldedSource)\" and the per-source gauges are left out")
        }
        return recorded
    }

    /// The watcher's options with the loop's turns reported to ``health``.
    func watching(_ options: Watcher.Options) -> Watcher.Options {
        guard isWatched else { return options }
        var options = options
        options.turnInterval = health.turnInterval
        let health = self.health, notifier = self.notifier, status = self.status
        let stallFile = ProcessInfo.processInfo.environment["FETCHRUN_TEST_STALL_FILE"]
        options.onTurn = {
            // A test's way to stall the loop itself: while the file exists, the loop is held
            // here, on its own executor, as a stuck loop would be.
            if let stallFile { while FileManager.default.fileExists(atPath: stallFile) { usleep(50_000) } }
            health.loopTurned()
            // The watchdog hears from the loop's turns only: a stuck loop stops the pings.
            if let notifier { status.turned(every: health.turnInterval, notifying: notifier) }
        }
        return options
    }

    /// A reload begins (`RELOADING=1`).
    func reloading() {
        guard let notifier else { return }
        status.notify(notifier) { _ in "RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())" }
    }

    /// A reload ended: ready again, or still on the previous config and not ready until a
    /// reload works.
    func reloaded(failure: String?) {
        health.setNotReady(failure.map { "the last reload failed: \($0)" })
        guard let notifier else { return }
        status.notify(notifier) { summary in
            "READY=1\nSTATUS=" + (failure.map { "reload failed, still on the previous config: \(TerminalText.safe($0, maximumLength: 200))" } ?? summary)
        }
    }

    /// The command is stopping (`STOPPING=1`): the last notification systemd hears from it.
    func stopping() {
        guard let notifier else { return }
        status.notify(notifier, last: true) { _ in "STOPPING=1\nSTATUS=stopping" }
    }

    /// `CLOCK_MONOTONIC` in microseconds, as systemd asks beside `RELOADING=1`.
    static func monotonicMicroseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
    }

    /// Ends the command, before it starts its work or tells systemd it is ready, when the
    /// endpoint's address cannot be bound: one line naming the address and the reason, and
    /// ``ExitStatus/cannotListen`` (``CommandFailure/init(listen:)``).
    func checkListenAddress() throws {
        guard let settings else { return }
        do {
            try MonitorEndpoint.checkAddress(settings)
        } catch {
            throw CommandFailure(listen: error)
        }
    }

    /// The endpoint, when `--listen` or `listen:` asks for one.
    /// - Parameters:
    ///   - watcher: what the dashboard's "check now" asks.
    ///   - delivery: woken when the dashboard's "retry" makes deliveries due.
    ///   - screenshots: where the changes' screenshots are, for the dashboard.
    func endpoint(
        store: any SourceStateStore, config: FetchConfig, metrics recorded: FetchMetrics, watcher: Watcher, delivery: DeliveryService,
        screenshots: ScreenshotFolder, clock: any FetchClock, logger: Logger
    ) -> MonitorEndpoint? {
        guard let settings else { return nil }
        let outputs = config.outputs.map(\.name), status = self.status, served = self.served
        served.update(sources: config.sources, outputs: config.outputs)
        // Shared and bounded: a store that does not answer (PostgreSQL frozen or cut off, an
        // SQLite lock another process holds) costs a probe 3 s at most and leaves one call
        // waiting, not one per probe — a new one every 30 s at most, so that a query lost on a
        // connection that never answers does not outlast the store's return.
        let storeCheck = SharedCall(limit: .seconds(3), askAnewAfter: .seconds(30)) {
            let pending = try await store.pendingCounts()
            status.outboxPending(pending.values.reduce(0, +))
            for output in outputs {
                recorded.recordOutboxPending(output: output, count: pending[output] ?? 0)
            }
        }
        let storedStates = SharedCall(limit: .seconds(10), askAnewAfter: .seconds(60)) { try await store.states() }
        let probes = MonitorEndpoint.Probes(
            storeAnswers: {
                do {
                    try await storeCheck.value()
                    return nil
                } catch {
                    return TerminalText.safe("\(error)")
                }
            },
            status: {
                StatusDocument(sources: served.snapshot.sources, states: try await storedStates.value())
            },
            history: { query in try await store.history(query) },
            config: served,
            outbox: {
                async let pending = store.pendingDeliveries(), delivered = store.deliveredCounts(), holds = store.outputHolds()
                return DashboardOutbox(outputs: served.snapshot.outputs, pending: try await pending, delivered: try await delivered, holds: try await holds)
            },
            checkNow: { name in try await watcher.checkNow(name) },
            retry: { output in
                let count = try await store.retryNow(output: output, givenUp: true, at: clock.date)
                delivery.wake()
                return count
            },
            clock: clock,
            screenshot: { name in await BlockingWork.run { screenshots.read(name) } }
        )
        return MonitorEndpoint(settings: settings, metrics: metrics, health: health, probes: probes, logger: logger) {
            let dashboard = settings.dashboard == .off ? "" : ", the dashboard at / (\(settings.dashboard == .on ? "with its actions" : "read-only"))"
            logger.info("serving /metrics, /healthz, /readyz, /status and /feeds/\(dashboard) on \(settings.written)")
        }
    }
}
