import ArgumentParser
import FetchRunKit
import Foundation
import Logging

extension FetchRun {
    /// Downloads what the queue holds, then exits — or keeps running as a service.
    struct Transfer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "transfer",
            abstract: "Download the queued enclosures (what `run --background-downloads` starts on its own).",
            discussion: """
            One transfer at a time per state directory: a second one exits 75 while the first \
            runs. SIGINT or SIGTERM stops it; partial files stay and resume next time. Exits 0 \
            when every download finished, 2 when some failed.
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Flag(help: "Keep running when the queue is empty, looking for new work every 2 seconds (for running as a service).")
        var keepRunning = false

        func run() async throws {
            // Signals first: from here on a SIGINT is a request to stop, never an abrupt end.
            let lifecycle = await Lifecycle(trappingHangUp: true)
            output.bootstrapLogging()
            let config = try await configOptions.load()
            let stateDirectory = stateOptions.directory(for: config)
            let service = DownloadService(
                stateDirectory: stateDirectory, limits: config.downloads,
                mode: keepRunning ? .untilShutdownPollingQueue(interval: .seconds(2)) : .untilDrained, lockHeld: .none
            )
            do {
                try stateDirectory.prepare()
                try await service.takeTransferLock()
            } catch {
                throw CommandFailure(ExitStatus.forStateDirectory(error), error.isLocked
                    ? "a transfer is already downloading the queue in \(service.queue.directory) (process \(service.queue.transferHolder.map(String.init) ?? "?"))"
                    : error.description)
            }
            Console.error("transfer started at \(CalendarText.rfc3339String(from: SystemClock().date)), process \(getpid())")
            let format = output.format
            let ending = try await lifecycle.run([]) { await DownloadConsole.download(with: service, format: format) }
            if let tally = ending.result, tally.failed > 0 { throw CommandFailure(ExitStatus.someSourcesFailed) }
        }
    }
}

extension StateDirectoryError {
    var isLocked: Bool {
        if case .locked = self { return true }
        return false
    }
}
