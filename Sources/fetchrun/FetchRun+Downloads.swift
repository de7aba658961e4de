import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Lists the download queue.
    struct Downloads: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "downloads",
            abstract: "List the download queue: done, in progress with percentage, queued, failed with the reason."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Flag(help: "Queue failed downloads again (they run at the next run, watch or transfer).")
        var retryFailed = false

        func run() async throws {
            output.bootstrapLogging()
            let queue = try await stateOptions.directory(loading: configOptions).downloads
            let entries: [DownloadEntry]
            do {
                entries = try retryFailed
                    ? DownloadService.retryFailed(in: queue)
                    : queue.entries()
            } catch {
                throw CommandFailure(ExitStatus.stateDirectoryUnusable, "\(error)")
            }
            let partSize = { (entry: DownloadEntry) in Downloader.partSize(of: entry) }
            switch output.format {
            case .json:
                Console.out(entries.map { DownloadReport.jsonLine(forQueued: $0, partSize: partSize($0)) })
            case .text:
                let holder = queue.transferHolder
                if let holder { Console.error("downloading now: process \(holder)") }
                if entries.isEmpty { Console.error("the download queue in \(queue.directory) is empty") }
                Console.out(DownloadReport(style: Console.stdoutStyle).lines(forQueue: entries, transferRunning: holder != nil, partSize: partSize))
            }
        }
    }
}
