import ArgumentParser
import FetchRunKit

@main
struct FetchRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetchrun",
        abstract: "Fetch many sources at once, each within its own deadline, and report what is new.",
        discussion: """
        Sources are listed in a YAML config file (-c/--config FILE, else $FETCHRUN_CONFIG, \
        else ./sources.yaml). Results go to stdout; logs and progress to stderr. The options the \
        commands share (-c/--config FILE, --state-dir DIR, --format text|json, -v/-vv) may \
        come before the command or after it: `fetchrun -c feeds.yaml show lwn`.

        Exit codes:
          0   every source succeeded (new data or none)
          2   some sources failed
          3   every source failed
          64  usage error
          65  invalid or unreadable config
          69  watch or worker cannot listen on its --listen address
          73  the state directory cannot be created or written
          75  another fetchrun holds the state directory's lock
          130 run stopped by Ctrl-C (143: by SIGTERM), after saving what finished
        """,
        version: "\(FetchRunVersion.current) (commit \(BuildCommit.current))",
        subcommands: [Run.self, Watch.self, Worker.self, Workers.self, Show.self, Status.self, History.self, Outputs.self, TestOutput.self, TestSource.self, Downloads.self, Transfer.self, Reset.self, Validate.self, Adapters.self, Probe.self, Healthcheck.self, Init.self, Add.self, Import.self, Export.self],
        defaultSubcommand: Run.self
    )

    /// Parses the command line with the shared options in either place (see
    /// ``GlobalOptionOrder``), then runs the command.
    static func main() async {
        // While this is the only thread: grown later, the table would make the curl thread wait.
        FileDescriptorTable.reserve(FileDescriptorTable.typicalNeed)
        // Before the threads make their heaps: each then starts writable well ahead of need.
        HeapReserve.reserveAhead(HeapReserve.typicalPad)
        // Every command states its name in its configuration: a name derived from the type's
        // (`String(describing:)`) searches the runtime's conformance tables, milliseconds at
        // every start.
        let names = Set(configuration.subcommands.map { $0._commandName })
        let arguments = GlobalOptionOrder.reordered(Array(CommandLine.arguments.dropFirst()), commandNames: names)
        // swift-argument-parser's own `main`, with the one mapping of a command's failure to
        // its message and exit status.
        do {
            var command = try parseAsRoot(arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            Console.error(failure.messages)
            exit(withError: failure.exitCode)
        } catch {
            exit(withError: error)
        }
    }
}
