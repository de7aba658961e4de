/// Lets the options people type first come first: `fetchrun -c feeds.yaml show lwn`.
///
/// The options every command shares (`--config`/`-c`, `--state-dir`, `--format`, `-v`) belong
/// to the commands, and swift-argument-parser reads a command's options only after its name.
/// Written before the command's name, they are moved to just after it, so both orders mean the
/// same; a command that does not take one says so as it would if it were written after it.
enum GlobalOptionOrder {
    static let withValue = ["-c", "--config", "--state-dir", "--state", "--format"]
    static let flags = ["--verbose"]

    /// `arguments` (without the program's name) with leading shared options moved after the
    /// command's name; unchanged when there are none, or no command name follows them (the
    /// default command, `run`, then takes them as it always did).
    static func reordered(_ arguments: [String], commandNames: Set<String>) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if withValue.contains(argument), index + 1 < arguments.count {
                leading += [argument, arguments[index + 1]]
                index += 2
            } else if withValue.contains(where: { argument.hasPrefix($0 + "=") }) || flags.contains(argument) || isVerbosity(argument) {
                leading.append(argument)
                index += 1
            } else {
                break
            }
        }
        guard !leading.isEmpty, index < arguments.count, commandNames.contains(arguments[index]) else { return arguments }
        return [arguments[index]] + leading + arguments[(index + 1)...]
    }

    /// `-v`, `-vv`, `-vvv`…
    private static func isVerbosity(_ argument: String) -> Bool {
        argument.count >= 2 && argument.hasPrefix("-") && argument.dropFirst().allSatisfy { $0 == "v" }
    }
}
