import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// What sources reported, from the state store's history.
    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "history",
            abstract: "Show the changes sources reported — new items, watched selections' diffs, failures and recoveries, moves — newest first.",
            discussion: """
            Reads the history that run, watch and worker record (history: in the config says how \
            much each source keeps; 1,000 changes and 90 days by default). Works while watch or \
            run is running, and for sources no longer in the config. Exits 0.
            """
        )

        /// `--kind`: the kinds of record to show.
        enum Kind: String, ExpressibleByArgument, CaseIterable {
            case items, changes, failures, moved

            var kinds: Set<ChangeRecord.Kind> {
                switch self {
                case .items: [.item]
                case .changes: [.change]
                case .failures: [.failing, .recovered]
                case .moved: [.moved]
                }
            }
        }

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Option(help: ArgumentHelp("Only changes from this long ago on (7d, 12h).", valueName: "duration"), transform: { try DurationText.parse($0) })
        var since: Duration?

        @Option(help: "Only this kind: items, changes (watched selections' diffs), failures (failing and recovered) or moved. Repeat for several.")
        var kind: [Kind] = []

        @Option(help: "At most this many changes, the newest.")
        var limit = 100

        @Argument(help: "Sources to show (default: all).", completion: SourceNameCompletion.kind)
        var names: [String] = []

        func validate() throws {
            guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 100000") }
        }

        func run() async throws {
            output.bootstrapLogging()
            let config = try await configOptions.load()
            let query = HistoryQuery(
                sources: names, kinds: kind.reduce(into: Set()) { $0.formUnion($1.kinds) },
                since: since.map { SystemClock().date.addingTimeInterval(-Double($0.milliseconds) / 1000) }, limit: limit
            )
            let records = try await stateOptions.withRecordedState(of: config) { try await $0.history(query) } ?? []
            switch output.format {
            case .text:
                Console.out(HistoryReport(style: Console.stdoutStyle).lines(for: records))
                if records.isEmpty {
                    let unknown = names.filter { name in !config.sources.contains { $0.name == name } }
                    Console.error(unknown.isEmpty
                        ? "no changes recorded" + (names.isEmpty ? "" : " for " + names.map { "'\($0)'" }.joined(separator: ", "))
                        : "no changes recorded; not in \(configOptions.path): " + unknown.map { "'\($0)'" }.joined(separator: ", "))
                }
            case .json:
                Console.out(bytes: HistoryReport.jsonLines(for: records))
            }
        }
    }
}
