import ArgumentParser
import FetchRunKit

extension FetchRun {
    /// Prints what the snapshots hold.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print what the snapshots hold (title, date, link), newest first."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Argument(help: "Sources to show (default: every source with a snapshot).", completion: SourceNameCompletion.kind)
        var names: [String] = []

        func run() async throws {
            output.bootstrapLogging()
            if stateOptions.state != nil || stateOptions.stateDir == nil, let config = try? await configOptions.load(), stateOptions.postgresURL(for: config) != nil {
                let names = names.isEmpty ? config.sources.map(\.name) : names
                try await show(names, from: config)
                return
            }
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
                    append(snapshot, of: name, to: &lines)
                }
            }
            Console.out(lines)
            if names.isEmpty { Console.error("no snapshots in \(store.directory) yet") }
            if !missing.isEmpty {
                throw CommandFailure(ExitStatus.usage, "no snapshot for \(missing.map { "'\($0)'" }.joined(separator: ", ")) in \(store.directory)")
            }
        }

        /// A snapshot as `show` prints it: its items as text (a blank line between sources), or
        /// an `item` event each.
        private func append(_ snapshot: Snapshot, of name: String, to lines: inout [String]) {
            switch output.format {
            case .text:
                if !lines.isEmpty { lines.append("") }
                lines += TextReport(style: Console.stdoutStyle).lines(for: snapshot)
            case .json:
                lines += snapshot.items.newestFirst().map { JSONEvents.item(source: name, sourceTitle: snapshot.title, $0) }
            }
        }

        /// `show` when state lives in PostgreSQL: the snapshots are rows there.
        private func show(_ names: [String], from config: FetchConfig) async throws {
            let (lines, missing) = try await stateOptions.withRecordedState(of: config) { store -> ([String], [String]) in
                var lines: [String] = []
                var missing: [String] = []
                for name in names {
                    switch await store.snapshot(of: name, movingCorruptAside: false) {
                    case .loaded(let snapshot): append(snapshot, of: name, to: &lines)
                    case .missing: missing.append(name)
                    case .corrupt(let note), .unavailable(let note): Console.error(note)
                    }
                }
                return (lines, missing)
            } ?? ([], names)
            Console.out(lines)
            if !missing.isEmpty {
                throw CommandFailure(ExitStatus.usage, "no snapshot for \(missing.map { "'\($0)'" }.joined(separator: ", ")) in PostgreSQL yet")
            }
        }
    }
}
