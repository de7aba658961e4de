import ArgumentParser
import FetchRunKit
import Foundation
import Logging

extension FetchRun {
    /// Downloads what the queue holds, then exits — or keeps running as a service.
    struct Transfer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
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
            let (stops, stop) = AsyncStream<Int32>.makeStream()
            let inbox = SignalInbox([SIGINT, SIGTERM, SIGHUP]) { stop.yield($0) }
            output.bootstrapLogging()
            let config = try configOptions.load()
            let stateDirectory = stateOptions.directory(for: config)
            let queue = stateDirectory.downloads
            let transferLock: StateLock
            do {
                try stateDirectory.prepare()
                transferLock = try queue.lockTransfers()
            } catch {
                Console.error(error.isLocked
                    ? "a transfer is already downloading the queue in \(queue.directory) (process \(queue.transferHolder.map(String.init) ?? "?"))"
                    : error.description)
                throw ExitStatus.forStateDirectory(error)
            }
            Console.error("transfer started at \(DateParser.rfc3339String(from: Date())), process \(getpid())")
            let tally = await DownloadConsole.download(
                config: config, stateDirectory: stateDirectory, holdsStateLock: false, transferLock: transferLock,
                mode: keepRunning ? .untilCancelledPollingQueue(interval: .seconds(2)) : .untilDrained,
                format: output.format, stop: stops
            )
            withExtendedLifetime((transferLock, inbox)) {}
            if tally.failed > 0 { throw ExitStatus.someSourcesFailed }
        }
    }
}

extension StateDirectoryError {
    var isLocked: Bool {
        if case .locked = self { return true }
        return false
    }
}
