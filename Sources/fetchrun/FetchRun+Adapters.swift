import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Lists the adapters a config can name.
    struct Adapters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "adapters",
            abstract: "List the adapters fetchrun can use (built-in, and plugins in plugins/ or on PATH), with their options."
        )

        @OptionGroup var configOptions: ConfigOptions

        func run() async throws {
            // Plugins are looked for beside the config (its plugins/ folder), then on PATH.
            let directory = URL(fileURLWithPath: configOptions.path).deletingLastPathComponent().path
            // Each plugin is asked to --describe itself: blocking, so off the cooperative pool.
            let adapters = await BlockingWork.run { AdapterRegistry.builtIn.allDescriptors(configDirectory: directory, environment: ProcessInfo.processInfo.environment) }
            print("Options every source takes: name, type, enabled (true), tags (a list of labels), report_updates (false), download, deadline, interval, max_interval, max_backoff, keep (defaults: from the config's defaults)")
            for adapter in adapters.sorted(by: { $0.type < $1.type }) {
                print("")
                // A plugin's description is its own text: made safe and capped like any other.
                print("\(TerminalText.safe(adapter.type))  (\(TerminalText.safe(adapter.origin))) — \(TerminalText.safe(adapter.summary))")
                if adapter.acceptsUndeclaredOptions { print("  any further options are passed to it as they are") }
                let names = adapter.options.map { TerminalText.safe($0.name, maximumLength: 64) }
                let width = names.map(\.count).max() ?? 0
                for (option, name) in zip(adapter.options, names) {
                    let fallback = option.defaultValue.map { "default \(TerminalText.safe($0))" } ?? "no default"
                    print("  \(name.column(width))  \(TerminalText.safe(option.kind)), \(fallback): \(TerminalText.safe(option.summary))")
                }
            }
        }
    }
}
