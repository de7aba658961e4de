import ArgumentParser
import FetchRunKit

extension FetchRun {
    /// Loads and checks the config, reporting every problem.
    struct Validate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "validate",
            abstract: "Check the config and list its sources; exit 65 with every error found."
        )

        @OptionGroup var configOptions: ConfigOptions

        func run() async throws {
            // Every problem is an error here, a broken source's too.
            let config = try await configOptions.load(keepingValidSources: false)
            let width = max(4, config.sources.map(\.name.count).max() ?? 0)
            print("NAME".column(width) + "  TYPE          DEADLINE  INTERVAL  KEEP  ENABLED  DOWNLOADS TO")
            for source in config.sources {
                print([
                    source.name.column(width),
                    source.type.column(12),
                    DurationText.format(source.settings.deadline).column(8),
                    source.settings.interval.description.column(8),
                    String(source.settings.keep).column(4),
                    (source.enabled ? "yes" : "no").column(7),
                    source.download.map { TerminalText.safe($0.directory) } ?? "-",
                ].joined(separator: "  "))
            }
            let enabled = config.sources.filter(\.enabled).count
            print("\(configOptions.path): valid, \(config.sources.count) source\(config.sources.count == 1 ? "" : "s") (\(enabled) enabled), state in \(config.stateDirectory)")
        }
    }
}
