import Foundation

/// An adapter outside fetchrun: any program that speaks the plugin protocol (docs/plugins.md).
///
/// `type: exec` with `command: [argv…]` runs a one-off script; `type: <name>` runs
/// `fetchrun-adapter-<name>` from the config's `plugins/` folder or `PATH`. Either way the
/// source's other options go to the plugin as they are. The plugin runs without a shell in a
/// process group of its own; at the deadline the group gets SIGTERM, then SIGKILL.
package struct ExternalAdapter: ConfigurableAdapter {
    public static let type = "exec"
    public static let summary = "runs a program of your own (no shell), protocol 1 of docs/plugins.md"
    public static let options = [
        AdapterOption("command", kind: "list of strings", default: nil, "the program and its arguments; a relative path is relative to the config file"),
    ]

    public var executable: String
    public var arguments: [String]
    /// The source's options as the plugin receives them.
    public var options: [String: JSONValue]
    /// The config file's folder, sent along for options that are relative paths.
    public var configDirectory: String

    public init(executable: String, arguments: [String] = [], options: [String: JSONValue] = [:], configDirectory: String = FileManager.default.currentDirectoryPath) {
        self.executable = executable
        self.arguments = arguments
        self.options = options
        self.configDirectory = configDirectory
    }

    /// `type: exec`: the `command` list, the rest of the options passed through.
    public init(options: AdapterOptions) throws {
        let command = options.stringList("command") ?? []
        if !options.contains("command") {
            options.report("missing 'command' (the program to run and its arguments, as a list)")
        } else if command.isEmpty {
            options.report("'command' must name a program", key: "command")
        }
        let program = command.first ?? ""
        executable = program.contains("/") && !program.hasPrefix("/")
            ? URL(fileURLWithPath: options.configDirectory).appendingPathComponent(program).standardizedFileURL.path
            : PluginLocator.searchPath(for: program) ?? program
        arguments = Array(command.dropFirst())
        self.options = options.jsonOptions(excluding: ["command"])
        configDirectory = options.configDirectory
    }

    public func fetch(_ context: FetchContext) async throws -> FetchOutput {
        let name = context.sourceName
        let logger = context.logger
        let process = PluginProcess(
            executable: executable, arguments: arguments,
            input: PluginProtocol.request(source: name, options: options, configDirectory: configDirectory, previous: context.previous, deadline: context.remaining),
            outputLimit: PluginProtocol.outputLimit,
            onStderrLine: { line in logger.info("plugin: \(line)") }
        )
        let result: PluginProcess.Result
        do {
            result = try await process.run()
        } catch let error as PluginProcess.LaunchError {
            throw FetchFailure(.adapter, error.description)
        }
        let program = (executable as NSString).lastPathComponent
        if result.outputExceeded {
            throw FetchFailure(.adapter, "\(program) wrote more than \(PluginProtocol.outputLimit / 1024 / 1024) MiB to stdout; stopped")
        }
        guard result.exitStatus == 0 else {
            let how = result.exitStatus.map { "exited with status \($0)" } ?? "was killed by signal \(result.signal ?? 0)"
            let tail = result.stderrTail.filter { !$0.isEmpty }.joined(separator: " | ")
            throw FetchFailure(.adapter, "\(program) \(how)" + (tail.isEmpty ? "" : ": \(String(tail.suffix(500)))"))
        }
        let (items, state) = try PluginProtocol.parse(result.stdout)
        return FetchOutput(items: items, adapterState: state)
    }
}
