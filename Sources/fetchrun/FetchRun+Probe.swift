import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Fetches and parses one feed, with no config and no state.
    struct Probe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "probe",
            abstract: "Fetch and parse one feed (a URL or a file) without config or state; print its items.",
            discussion: "Exits 0 when the feed was read, 2 when it could not be fetched or parsed."
        )

        @Argument(help: "An http(s) URL, or the path of a local feed file.")
        var location: String

        @OptionGroup var output: OutputOptions

        @Option(help: ArgumentHelp("Give up after this long.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var deadline: Duration = .seconds(30)

        @Option(help: ArgumentHelp("Largest body accepted, in bytes, after decompression.", valueName: "bytes"))
        var maxBytes: Int = HTTPRequest.defaultMaxBodyBytes

        func run() async throws {
            output.bootstrapLogging()
            let fetcher = SourceFetcher(url: url, maxBodyBytes: maxBytes)
            let client = CurlHTTPClient()
            let result: SourceFetcher.FeedResult
            do {
                result = try await withRunning(client) {
                    try await withDeadline(.now + deadline) {
                        try await fetcher.fetch(using: client, deadline: .now + deadline)
                    }
                }
            } catch is DeadlineExceeded {
                Console.error("\(location): deadline exceeded after \(DurationText.format(deadline))")
                throw ExitStatus.someSourcesFailed
            } catch {
                Console.error("\(error)")
                throw ExitStatus.someSourcesFailed
            }
            guard case .feed(let parsed, let response, _) = result else {
                Console.error("\(location): 304 Not Modified without validators sent")
                throw ExitStatus.someSourcesFailed
            }
            let feed = parsed.withinItemLimits()
            switch output.format {
            case .text:
                Console.out(TextReport(style: Console.stdoutStyle).lines(forProbe: feed, response: response, location: location))
            case .json:
                Console.out(JSONEvents.lines(forProbe: feed, response: response, location: location))
            }
        }

        /// A path becomes a `file:` URL; anything with a scheme is taken as written.
        var url: String {
            if location.contains("://") { return location }
            return URL(fileURLWithPath: location).standardizedFileURL.absoluteString
        }
    }
}
