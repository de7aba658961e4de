import Foundation
import Synchronization

/// A real PostgreSQL server of the tests' own: `initdb` in a temporary folder, started by
/// `pg_ctl` (as the `postgres` user when the tests run as root, which PostgreSQL refuses to run
/// as), listening on a Unix socket in that folder only — no TCP port to look for, or to race
/// another test for —, stopped and removed by ``stop()`` or deinit.
///
/// When it cannot start, the error says what is missing: PostgreSQL itself (Debian's
/// `postgresql`, which `make test` installs), the `postgres` account, or what `initdb` or
/// `pg_ctl` said.
public final class PostgresServer: Sendable {
    /// `postgres://fetchrun@localhost/postgres?host=<folder>`: the server's own database.
    public let url: String
    /// Where its socket, data and log are.
    public let folder: URL
    private let binaries: String
    private let stopped = Mutex(false)

    /// With `password`, the server also listens on 127.0.0.1 at a free port (``tcpPort``), where
    /// it asks for that password (SCRAM) and offers no TLS: what the tests of a wrong password
    /// and of `sslmode=require` need.
    public let tcpPort: UInt16?

    public init(password: String? = nil) throws {
        binaries = try Self.binaryFolder()
        folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("fetchrun-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if getuid() == 0 {
            guard let account = getpwnam("postgres") else {
                throw FixtureError("PostgreSQL refuses to run as root and there is no 'postgres' account to run it as (Debian's postgresql package makes one)")
            }
            chown(folder.path, account.pointee.pw_uid, account.pointee.pw_gid)
        }
        url = Self.url(folder: folder.path, database: "postgres")
        tcpPort = password == nil ? nil : try Self.freePort()
        let data = folder.appendingPathComponent("data").path
        let listen = tcpPort.map { "-c listen_addresses=127.0.0.1 -p \($0) -c ssl=off" } ?? "-c listen_addresses="
        serverOptions = "\(listen) -k \(folder.path) -c fsync=off -c max_connections=200"
        if let password {
            let passwordFile = folder.appendingPathComponent("password").path
            try password.write(toFile: passwordFile, atomically: true, encoding: .utf8)
            if getuid() == 0, let account = getpwnam("postgres") { chown(passwordFile, account.pointee.pw_uid, account.pointee.pw_gid) }
            try run("initdb", ["-D", data, "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=\(passwordFile)", "-U", "fetchrun", "-E", "UTF8", "--no-sync"])
        } else {
            try run("initdb", ["-D", data, "-A", "trust", "-U", "fetchrun", "-E", "UTF8", "--no-sync"])
        }
        try resume()
    }

    /// How the server is started: its port, socket folder and settings.
    private let serverOptions: String

    /// Stops the server and keeps its data, until ``resume()``: for tests of what a client
    /// does while PostgreSQL is gone.
    public func suspend() throws {
        try run("pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "fast", "-w", "stop"])
    }

    /// Starts the server (again), on the same port and socket folder.
    public func resume() throws {
        try run("pg_ctl", [
            "-D", folder.appendingPathComponent("data").path, "-l", folder.appendingPathComponent("log").path, "-w", "-t", "60",
            "-o", serverOptions, "start",
        ])
    }

    /// Stops the server's processes where they stand (`SIGSTOP`), connections left open: a
    /// server that hangs, or a network that drops everything, as a client sees it — no error,
    /// no answer. Returns them for ``thaw(_:)``, which must come before ``stop()``.
    public func freeze() throws -> [pid_t] {
        let pidFile = folder.appendingPathComponent("data/postmaster.pid").path
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let first = text.split(separator: "\n").first, let postmaster = pid_t(first) else {
            throw FixtureError("no postmaster.pid in \(pidFile): is the server running?")
        }
        // The postmaster first, so that it starts no new backend; then every child it has.
        var frozen = [postmaster]
        kill(postmaster, SIGSTOP)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = pid_t(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // After the command's closing parenthesis: state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == postmaster {
                kill(pid, SIGSTOP)
                frozen.append(pid)
            }
        }
        return frozen
    }

    /// Lets the processes ``freeze()`` stopped go on.
    public func thaw(_ frozen: [pid_t]) {
        for pid in frozen.reversed() { kill(pid, SIGCONT) }
    }

    /// A port on 127.0.0.1 that nothing listens on (the kernel's pick, let go at once).
    public static func freePort() throws -> UInt16 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw FixtureError("no free port on 127.0.0.1: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }

    deinit {
        stop()
    }

    /// Starts a server (``init(password:)``) on a thread of its own: `initdb` and `pg_ctl`
    /// take seconds, which would hold one of the cooperative pool's few threads — the one
    /// every other test of the process is waiting for.
    public static func start(password: String? = nil) async throws -> PostgresServer {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try PostgresServer(password: password) }) }
            thread.name = "postgres-fixture"
            thread.start()
        }
    }

    /// A server shared by every test of this process that asks for one, started on first use
    /// and stopped when the process exits. Whoever asks while it starts waits without holding
    /// a thread.
    public static func shared() async throws -> PostgresServer {
        let starting = sharedServer.withLock { starting in
            if let starting { return starting }
            let task = Task<PostgresServer, any Error> {
                let server = try await start()
                startedShared.withLock { $0 = server }
                atexit { _ = PostgresServer.stopShared() }
                return server
            }
            starting = task
            return task
        }
        return try await starting.value
    }

    private static let sharedServer = Mutex<Task<PostgresServer, any Error>?>(nil)
    /// The shared server as started, for the exit handler (which cannot await).
    private static let startedShared = Mutex<PostgresServer?>(nil)

    private static func stopShared() -> Bool {
        startedShared.withLock { $0 }?.stop()
        return true
    }

    /// A new, empty database of its own; returns its URL.
    public func createDatabase() throws -> String {
        let name = "test_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "_"))"
        _ = try query("CREATE DATABASE \(name)")
        return Self.url(folder: folder.path, database: name)
    }

    public func stop() {
        let wasStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        _ = try? run("pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: folder)
    }

    /// The rows `sql` returns from `database`, one line each, columns separated by `|` (psql -tA).
    public func query(_ sql: String, database: String = "postgres") throws -> [String] {
        let output = try run("psql", ["-h", folder.path, "-p", String(tcpPort ?? 5432), "-U", "fetchrun", "-d", database, "-tA", "-c", sql])
        return output.split(separator: "\n").map(String.init)
    }

    /// The database a URL of this server names.
    public static func database(of url: String) -> String {
        URLComponents(string: url).map { String($0.path.drop { $0 == "/" }) } ?? "postgres"
    }

    private static func url(folder: String, database: String) -> String {
        "postgres://fetchrun@localhost/\(database)?host=\(folder)"
    }

    /// Runs one of PostgreSQL's tools to its end (at most two minutes), output to a file: the
    /// server pg_ctl starts inherits its output and would hold a pipe open for as long as it runs.
    @discardableResult
    private func run(_ tool: String, _ arguments: [String]) throws -> String {
        let asPostgres = getuid() == 0 && tool != "psql"
        let executable = asPostgres ? "/usr/sbin/runuser" : "\(binaries)/\(tool)"
        let argv = asPostgres ? ["-u", "postgres", "--", "\(binaries)/\(tool)"] + arguments : arguments
        let outputPath = folder.appendingPathComponent("\(tool)-\(UUID().uuidString.prefix(6)).out").path
        let process = try ChildProcess(executable: executable, arguments: argv, environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], directory: folder.path, stdout: outputPath, stderr: outputPath)
        let exited = process.blockUntilExit(timeout: .seconds(120))
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard exited else {
            process.signal(SIGKILL)
            throw FixtureError("PostgreSQL's \(tool) did not finish in two minutes: \(text.suffix(600))")
        }
        guard process.terminationStatus == 0 else { throw FixtureError("PostgreSQL's \(tool) failed: \(text.suffix(600))") }
        return text
    }

    /// The newest `/usr/lib/postgresql/<version>/bin` (Debian's layout).
    private static func binaryFolder() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last else { throw FixtureError("PostgreSQL is not installed: no server under \(root) (Debian's postgresql package; make test installs it)") }
        return "\(root)/\(newest)/bin"
    }
}
