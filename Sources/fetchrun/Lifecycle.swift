import FetchRunKit
import FetchRunMonitor
import Logging
import ServiceLifecycle
import UnixSignals

/// The one place where a command's lifetime is decided, for `run`, `watch`, `worker` and
/// `transfer`: its services run in one `ServiceGroup` —
/// started in order, shut down in reverse — beside the command's own work, whose end ends them
/// all; and signals mean the same everywhere:
///
/// - SIGINT or SIGTERM: graceful shutdown (a watch's fetches get their grace, a run's are
///   cancelled and what finished is kept, downloads keep their partial files).
/// - SIGINT again while stopping — after a first signal, `--for` or the work ending — cancels
///   what is left at once.
/// - SIGHUP: the command's reload (`watch`, `worker`); a `transfer` ignores it; a `run` does not
///   trap it, so a hung-up terminal ends it as it ends other one-shot tools.
struct Lifecycle {
    /// Trapped when the command starts, so that from then on a signal is a request, never an
    /// abrupt end.
    let signals: UnixSignalsSequence
    /// How long a graceful shutdown may take before what is left is cancelled.
    var maximumGracefulShutdownDuration: Duration?
    /// Called once, when stopping begins (a signal, `--for`, or the work ending): systemd
    /// hears `STOPPING=1` from it.
    var onStopping: (@Sendable () -> Void)?
    var logger = Logger(label: "fetchrun")

    /// Traps SIGINT and SIGTERM, and SIGHUP for a service that must outlive a hang-up (it
    /// reloads, or ignores it).
    init(trappingHangUp: Bool = false) async {
        signals = await UnixSignalsSequence(trapping: trappingHangUp ? [.sigint, .sigterm, .sighup] : [.sigint, .sigterm])
    }

    /// What ended a command: its work's result (none when it was cancelled first), and the
    /// signal that stopped it, if one did.
    struct Ending<Result: Sendable>: Sendable {
        var result: Result?
        var stoppedBy: UnixSignal?
    }

    /// Runs `services` and `work` until `work` ends or a signal stops them.
    /// - Parameters:
    ///   - stopAfter: a graceful shutdown after this long (`--for`).
    ///   - reload: what SIGHUP does (a command that traps it).
    /// - Throws: what `work` threw; else the error a service ended the group with — the command
    ///   failed even when its work ended cleanly (an endpoint whose address could not be bound
    ///   is a ``CommandFailure``, exit 69).
    func run<Result: Sendable>(
        _ services: [any Service], stopAfter: Duration? = nil, reload: (@Sendable () async -> Void)? = nil,
        work: @escaping @Sendable () async throws -> Result
    ) async throws -> Ending<Result> {
        let (outcome, outcomeSink) = AsyncStream<Swift.Result<Result, any Error>>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let stopping = Stopping(onStart: onStopping)
        // Only the work's end ends the group; a service whose work is done waits for its turn
        // to stop, so that a clean end is never reported as a failure.
        var configurations = services.map { ServiceGroupConfiguration.ServiceConfiguration(service: EndingInItsTurn($0), successTerminationBehavior: .ignore) }
        let work = Work {
            do {
                outcomeSink.yield(.success(try await work()))
            } catch {
                outcomeSink.yield(.failure(error))
            }
            await stopping.begin()
        }
        configurations.append(.init(service: work, successTerminationBehavior: .gracefullyShutdownGroup))
        var configuration = ServiceGroupConfiguration(services: configurations, logger: logger)
        configuration.maximumGracefulShutdownDuration = maximumGracefulShutdownDuration
        let group = ServiceGroup(configuration: configuration)
        let (stoppedBy, serviceFailure) = await withTaskGroup(of: Event.self) { tasks in
            tasks.addTask {
                do {
                    try await group.run()
                } catch is CancellationError {
                    // A second SIGINT: what was left was cancelled.
                } catch {
                    return .groupEnded(failure: error)
                }
                return .groupEnded(failure: nil)
            }
            tasks.addTask {
                var stoppedBy: UnixSignal?
                for await signal in signals {
                    switch signal {
                    case .sighup:
                        await reload?()
                    case .sigint where await stopping.requested:
                        Console.error("cancelling what is still running")
                        return .cancelNow(.sigint)
                    default:
                        stoppedBy = stoppedBy ?? signal
                        await stopping.begin()
                        await group.triggerGracefulShutdown()
                    }
                }
                return .signalsEnded(stoppedBy: stoppedBy)
            }
            if let stopAfter {
                // `--for` asks for the same shutdown a signal does, from beside the group: a
                // timer inside it could end while another service is being stopped.
                tasks.addTask {
                    guard (try? await SystemClock().sleep(for: stopAfter)) != nil else { return .timerEnded }
                    await stopping.begin()
                    await group.triggerGracefulShutdown()
                    return .timerEnded
                }
            }
            // Whichever ends first: the group (its work done), or a second SIGINT.
            var stoppedBy: UnixSignal?
            var serviceFailure: (any Error)?
            waiting: while let event = await tasks.next() {
                switch event {
                case .groupEnded(let failure): serviceFailure = failure; break waiting
                case .cancelNow(let signal): stoppedBy = signal; break waiting
                case .signalsEnded(let signal): stoppedBy = stoppedBy ?? signal
                case .timerEnded: continue
                }
            }
            tasks.cancelAll()
            while let event = await tasks.next() {
                if case .signalsEnded(let signal) = event { stoppedBy = stoppedBy ?? signal }
            }
            return (stoppedBy, serviceFailure)
        }
        outcomeSink.finish()
        var ending = Ending<Result>(stoppedBy: stoppedBy)
        for await result in outcome { ending.result = try result.get() }
        if let failure = serviceFailure as? MonitorEndpoint.ListenFailure { throw CommandFailure(listen: failure) }
        if let serviceFailure { throw serviceFailure }
        return ending
    }
}

/// The command's own work, as the service whose end ends the group. Described, as
/// ``EndingInItsTurn`` is, so that the group need not reflect on it to name it.
private struct Work: Service, CustomStringConvertible {
    let body: @Sendable () async -> Void
    var description: String { "the command's work" }

    func run() async {
        await body()
    }
}

/// What the tasks beside the group report when they end.
private enum Event: Sendable {
    /// The group has ended: every service and the work are done, or a service failed.
    case groupEnded(failure: (any Error)?)
    /// A second SIGINT: cancel what is left at once.
    case cancelNow(UnixSignal)
    /// The signal sequence ended (the command is ending), with the signal that stopped it.
    case signalsEnded(stoppedBy: UnixSignal?)
    /// `--for` ran out (and asked for a shutdown), or was cancelled.
    case timerEnded
}

/// Whether the command is stopping already: then a SIGINT cancels instead of asking again.
private actor Stopping {
    private(set) var requested = false
    private let onStart: (@Sendable () -> Void)?

    init(onStart: (@Sendable () -> Void)?) {
        self.onStart = onStart
    }

    func begin() {
        if !requested { onStart?() }
        requested = true
    }
}
