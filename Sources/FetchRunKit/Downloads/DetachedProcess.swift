import Foundation

/// Starts a process that outlives the one starting it: the CLI's counterpart of handing
/// transfers to a system daemon.
package enum DetachedProcess {
    package struct LaunchError: Error, CustomStringConvertible {
        package var description: String
    }

    /// Starts `executable` in a session of its own (no terminal, so a closing terminal's
    /// SIGHUP and a Ctrl-C meant for the parent do not reach it), with stdin from /dev/null
    /// and stdout and stderr appended to `logPath`, default signal handling and mask.
    /// - Returns: its pid. Nobody waits for it: when the parent exits, init reaps it.
    /// - Throws: ``LaunchError`` when the log cannot be opened or the program not started.
    package static func launch(executable: String, arguments: [String], logPath: String) throws -> pid_t {
        let log: Int32
        do {
            log = try SafeFile.openForWriting(logPath, flags: O_WRONLY | O_CREAT | O_APPEND)
        } catch {
            throw LaunchError(description: "cannot open \(logPath): \(error.description)")
        }
        defer { close(log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, log, 1)
        posix_spawn_file_actions_adddup2(&actions, log, 2)
        // Nothing else the parent had open: a caller waiting for the parent's pipes to close
        // must not wait for the transfer too.
        closeInheritedDescriptors(in: &actions)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let code = withSpawnAttributes(flags: Self.spawnSetSID) { attributes in
            posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        guard code == 0 else { throw LaunchError(description: "cannot start \(executable): \(String(cString: strerror(code)))") }
        return pid
    }

    /// glibc's `POSIX_SPAWN_SETSID` (since 2.26), which its header declares only for
    /// `_GNU_SOURCE` and so Swift's Glibc module does not import.
    static let spawnSetSID: Int32 = 0x80

    /// This program's own executable, for starting another of itself.
    package static var currentExecutable: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return count > 0 ? String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }
}
