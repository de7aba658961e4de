import ArgumentParser
import FetchRunKit

extension FetchRun {
    /// Prints what the snapshots hold.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print what the snapshots hold (title, date, link), newest first."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "Sources to show (default: every source with a snapshot).", completion: SourceNameCompletion.kind)
        var names: [String] = []

        func run() async throws {
            output.bootstrapLogging()
            let store = try await stateOptions.directory(loading: configOptions).snapshots
            let names = names.isEmpty ? store.sourceNames() : names
            var lines: [String] = []
            var missing: [String] = []
            for name in names {
                switch store.load(source: name, moveCorruptAside: false) {
                case .missing:
                    missing.append(name)
                case .corrupt(let reason, _):
                    Console.error("snapshot \(store.path(for: name)) is unreadable: \(reason) (the next run moves it aside)")
                case .loaded(let snapshot):
                    switch output.format {
                    case .text:
                        if !lines.isEmpty { lines.append("") }
                        lines += TextReport(style: Console.stdoutStyle).lines(for: snapshot)
                    case .json:
                        lines += snapshot.items.newestFirst().map { JSONEvents.item(source: name, sourceTitle: snapshot.title, $0) }
                    }
                }
            }
            Console.out(lines)
            if names.isEmpty { Console.error("no snapshots in \(store.directory) yet") }
            if !missing.isEmpty {
                Console.error("no snapshot for \(missing.map { "'\($0)'" }.joined(separator: ", ")) in \(store.directory)")
                throw ExitStatus.usage
            }
        }
    }
}
