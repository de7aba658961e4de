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
            let console = DownloadConsole(format: output.format)
            let downloader = Downloader(
                queue: queue, http: HTTPClient(), limits: config.downloads,
                snapshots: SnapshotRecorder(stateDirectory: stateDirectory, holdsStateLock: false),
                onEvent: console.sink
            )
            let started = ContinuousClock.now
            let mode: Downloader.Mode = keepRunning ? .untilCancelledPollingQueue(interval: .seconds(2)) : .untilDrained
            let work = Task { await downloader.run(mode, transferLock: transferLock) }
            let watcher = Task {
                for await _ in stops {
                    work.cancel()
                    break
                }
            }
            let tally = await work.value
            watcher.cancel()
            await console.finish()
            if output.format == .text {
                Console.out([DownloadReport(style: Console.stdoutStyle).summary(tally, duration: ContinuousClock.now - started)])
            }
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
