import ArgumentParser
import FetchRunKit
import Logging

extension FetchRun {
    /// One-shot: fetch every enabled source once, concurrently, report, exit.
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch every enabled source once, each within its deadline, and report (the default command).",
            discussion: "Exits 0 when every source succeeded, 2 when some failed, 3 when all failed."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var stateOptions: StateOptions
        @OptionGroup var output: OutputOptions

        @Option(name: .customLong("source"), help: ArgumentHelp("Fetch only this source (repeatable); a disabled source runs when named.", valueName: "name"))
        var sourceNames: [String] = []

        @Flag(help: "Fetch and report, but write nothing (no snapshots, no lock).")
        var dryRun = false

        func run() async throws {
            output.bootstrapLogging()
            let config = try configOptions.load()
            let unknown = sourceNames.filter { name in !config.sources.contains { $0.name == name } }
            guard unknown.isEmpty else {
                Console.error("unknown source\(unknown.count == 1 ? "" : "s") \(unknown.map { "'\($0)'" }.joined(separator: ", ")); \(configOptions.path) has: \(config.sources.map(\.name).joined(separator: ", "))")
                throw ExitStatus.usage
            }

            let stateDirectory = stateOptions.directory(for: config)
            let lock = dryRun ? nil : try stateOptions.prepareAndLock(stateDirectory)
            let runner = FetchRunner(store: stateDirectory.snapshots, dryRun: dryRun, logger: Logger(label: "fetchrun"))
            // New items are printed (JSON) or counted (text) as sources finish, so a run over
            // thousands of feeds does not hold every new item until the end.
            let format = output.format
            let report = await runner.run(
                config.sources(named: sourceNames),
                maxInFlight: config.maxInFlight,
                keepingNewItems: format == .json ? 0 : TextReport.itemsListedPerSource
            ) { source in
                if format == .json { Console.out(JSONEvents.itemLines(for: source)) }
            }
            withExtendedLifetime(lock) {}

            switch format {
            case .text: Console.out(TextReport(style: Console.stdoutStyle).lines(for: report))
            case .json: Console.out(JSONEvents.summaryLines(for: report))
            }
            let status = ExitStatus.forRun(report)
            if status != .success { throw status }
        }
    }
}
