import ArgumentParser
import FetchRunKit

extension FetchRun {
    /// Lists the adapters a config can name.
    struct Adapters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the adapters fetchrun can use, with their options."
        )

        func run() async throws {
            print("Options every source takes: name, type, enabled (true), deadline (defaults.deadline), interval (defaults.interval), keep (defaults.keep)")
            for adapter in AdapterRegistry.builtIn.descriptors.sorted(by: { $0.type < $1.type }) {
                print("")
                print("\(adapter.type)  (\(adapter.origin)) — \(adapter.summary)")
                let width = adapter.options.map(\.name.count).max() ?? 0
                for option in adapter.options {
                    let fallback = option.defaultValue.map { "default \($0)" } ?? "optional"
                    print("  \(option.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(option.kind), \(fallback): \(option.summary)")
                }
            }
        }
    }
}
