import Foundation

/// A real PostgreSQL server of the test's own: `initdb` in a temporary folder, started by
/// `pg_ctl` on a free 127.0.0.1 port (as the `postgres` user when the tests run as root, which
/// PostgreSQL refuses to run as), stopped and removed by ``stop()`` or deinit.
final class PostgresFixture: @unchecked Sendable {
    let port: Int
    /// `postgres://fetchrun@127.0.0.1:<port>/postgres?sslmode=disable`.
    let url: String
    private let folder: URL
    private let binaries: String
    private var stopped = false

    init() throws {
        binaries = try Self.binaryFolder()
        folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("fetchrun-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if getuid() == 0, let account = getpwnam("postgres") {
            chown(folder.path, account.pointee.pw_uid, account.pointee.pw_gid)
        }
        port = try Self.freePort()
        url = "postgres://fetchrun@127.0.0.1:\(port)/postgres?sslmode=disable"
        let data = folder.appendingPathComponent("data").path
        try run("initdb", ["-D", data, "-A", "trust", "-U", "fetchrun", "-E", "UTF8", "--no-sync"])
        try run("pg_ctl", [
            "-D", data, "-l", folder.appendingPathComponent("log").path, "-w", "-t", "60",
            "-o", "-p \(port) -k \(folder.path) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", "start",
        ])
    }

    deinit {
        stop()
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        _ = try? run("pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: folder)
    }

    /// The rows `sql` returns, one line each, columns separated by `|` (psql -tA).
    func query(_ sql: String) throws -> [String] {
        let output = try run("psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "fetchrun", "-d", "postgres", "-tA", "-c", sql])
        return output.split(separator: "\n").map(String.init)
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
        let end = ContinuousClock.now + .seconds(120)
        while process.isRunning, ContinuousClock.now < end { usleep(10_000) }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard !process.isRunning else {
            process.signal(SIGKILL)
            throw FixtureError("\(tool) did not finish in two minutes: \(text.suffix(600))")
        }
        guard process.terminationStatus == 0 else { throw FixtureError("\(tool) failed: \(text.suffix(600))") }
        return text
    }

    /// The newest `/usr/lib/postgresql/<version>/bin` (Debian's layout).
    private static func binaryFolder() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last else { throw FixtureError("PostgreSQL is not installed (Debian's postgresql package; make test installs it)") }
        return "\(root)/\(newest)/bin"
    }

    private static func freePort() throws -> Int {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else { throw FixtureError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
