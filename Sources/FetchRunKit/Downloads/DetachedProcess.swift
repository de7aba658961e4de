import Foundation

/// Starts a process that outlives the one starting it: the CLI's counterpart of handing
/// transfers to a system daemon.
package enum DetachedProcess {
    package struct LaunchError: Error, CustomStringConvertible {
        package var description: String
    }

    /// A log larger than this when the next process starts is moved to `<log>.1` (replacing
    /// the one before): detached transfers, started by every `run --background-downloads`
    /// from a timer for months, append to it and nothing else trims it.
    package static let maximumLogBytes: Int64 = 1 << 20

    /// Starts `executable` in a session of its own (no terminal, so a closing terminal's
    /// SIGHUP and a Ctrl-C meant for the parent do not reach it), with stdin from /dev/null
    /// and stdout and stderr appended to `logPath` (moved aside first when it has grown past
    /// ``maximumLogBytes``), default signal handling and mask.
    /// - Returns: its pid. Nobody waits for it: when the parent exits, init reaps it.
    /// - Throws: ``LaunchError`` when the log cannot be opened or the program not started.
    package static func launch(executable: String, arguments: [String], logPath: String) throws -> pid_t {
        moveAside(logPath, ifLargerThan: maximumLogBytes)
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

    /// Renames a regular file past `limit` bytes to `<path>.1`. A link or anything else at
    /// `path` is left for the open to refuse; `rename` replaces a link at `<path>.1` itself,
    /// never what it points to.
    static func moveAside(_ path: String, ifLargerThan limit: Int64) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) > limit else { return }
        _ = rename(path, path + ".1")
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
