import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// How each source is doing, from the state database.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show each source's health — ok, failing since when and how many times in a row, or never fetched — with its last success, last error, next due time, interval and items.",
            discussion: """
            Reads the state database without taking the state directory's lock: it works while \
            watch or run is running. Exits 0, or 2 when some source is failing.
            """
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "Sources to show (default: all in the config).", completion: SourceNameCompletion.kind)
        var names: [String] = []

        func run() async throws {
            output.bootstrapLogging()
            let config = try await configOptions.load()
            try configOptions.requireSources(names, in: config)
            let states = try await stateOptions.withRecordedState(of: config) { try await $0.states() } ?? [:]
            let document = StatusDocument(sources: names.isEmpty ? config.sources : config.sources.filter { names.contains($0.name) }, states: states)
            switch output.format {
            case .text:
                Console.out(StatusReport(style: Console.stdoutStyle).lines(for: document.sources.map { (config: $0, state: document.state(of: $0)) }))
            case .json:
                Console.out(bytes: document.jsonLines(document.sources.indices))
            }
            if document.sources.contains(where: { document.state(of: $0).health == .failing }) { throw CommandFailure(ExitStatus.someSourcesFailed) }
        }
    }
}
