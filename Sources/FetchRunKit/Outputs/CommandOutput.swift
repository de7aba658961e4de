import Foundation

/// `type: command`: runs a program — no shell, its own process group — with deliveries as
/// NDJSON on stdin (one JSON object per line). Exit status 0 means they were taken; another
/// status refuses those deliveries (each is then tried alone). What it writes to stdout is
/// read and dropped; stderr's last lines make the reason of a failure.
struct CommandOutput: ConfigurableOutput {
    static let type = "command"
    static let keys = ["command", "per_item"]

    var executable: String
    var arguments: [String]
    /// One run per delivery; otherwise one run for every delivery that is due (up to 500).
    var perItem: Bool
    var timeout: Duration

    var batchSize: Int { perItem ? 1 : 500 }
    /// The command as the config writes it: an argument from `${VAR}` may be a secret.
    var target: String

    /// `command: [program, args…]`: a program with a slash is relative to the config's folder,
    /// one without is looked up on `PATH`.
    init(options: OutputOptions) throws {
        let command = options.strings("command") ?? []
        target = options.written("command") ?? ""
        if !options.contains("command") { options.report("output '\(options.outputName)': missing 'command' (the program and its arguments, as a list)") }
        if options.contains("command"), command.isEmpty { options.report("'command' must name a program", key: "command") }
        let program = command.first ?? ""
        executable = program.contains("/") && !program.hasPrefix("/")
            ? URL(fileURLWithPath: options.configDirectory).appendingPathComponent(program).standardizedFileURL.path
            : PluginLocator.searchPath(for: program) ?? program
        arguments = Array(command.dropFirst())
        perItem = options.boolean("per_item") ?? false
        timeout = options.timeout
    }

    func send(_ deliveries: [Delivery], through http: any HTTPExchange) async throws {
        let input = Data(deliveries.map { $0.payload + "\n" }.joined().utf8)
        // Its stdout is not its answer: a command that floods it runs on, memory bounded.
        let process = PluginProcess(executable: executable, arguments: arguments, input: input, outputLimit: 64 * 1024, outputOverflow: .discard)
        let result: PluginProcess.Result
        do {
            result = try await withDeadline(.now + timeout) { try await process.run() }
        } catch let error as PluginProcess.LaunchError {
            throw OutputError(error.description)
        } catch is DeadlineExceeded {
            throw OutputError("\(executable) did not finish within \(DurationText.format(timeout)) (its `timeout`); it was stopped")
        }
        let said = result.stderrTail.isEmpty ? "" : ": " + TerminalText.safe(result.stderrTail.joined(separator: " / "))
        if let signal = result.signal { throw OutputError("\(executable) was ended by signal \(signal) (not sent by fetchrun)\(said)") }
        if let status = result.exitStatus, status != 0 {
            throw OutputError("\(executable) exited with status \(status)\(said)", scope: .deliveries)
        }
    }
}
