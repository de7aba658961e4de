import Foundation
import TestSupport

/// The HTTP/2 fixture server (`Tests/Fixtures/h2-fixture-server.py`, Python's h2 library) with
/// a certificate authority of its own made by `openssl` for this test: TLS with ALPN h2, or
/// `plain` HTTP/2 for prior knowledge. Stopped (and its folder removed) by ``stop()`` or deinit.
final class H2FixtureServer: @unchecked Sendable {
    let plain: Bool
    /// The PEM file of the CA that signed the server's certificate: what `ca_file` names.
    let caFile: String
    private let folder: URL
    private let server: PythonFixtureProcess
    private var stopped = false

    var port: Int { server.port }

    init(plain: Bool = false) throws {
        self.plain = plain
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-h2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        caFile = folder.appendingPathComponent("ca.pem").path
        var arguments = ["--plain"]
        if !plain {
            try FixtureCertificates.make(in: folder)
            arguments = ["--cert", folder.appendingPathComponent("server.pem").path, "--key", folder.appendingPathComponent("server.key").path]
        }
        server = try PythonFixtureProcess(
            script: "h2-fixture-server.py", arguments: arguments, failure: "the HTTP/2 fixture server did not start (is python3-h2 installed?)"
        )
    }

    deinit {
        _ = stop()
    }

    func url(_ path: String) -> String {
        "\(plain ? "http" : "https")://127.0.0.1:\(port)\(path)"
    }

    /// Stops the server and returns what it counted: `connections`, `requests`,
    /// `max_streams_on_a_connection`.
    @discardableResult
    func stop() -> [String: Int] {
        guard !stopped else { return [:] }
        stopped = true
        let rest = server.stop()
        try? FileManager.default.removeItem(at: folder)
        return (try? JSONSerialization.jsonObject(with: rest) as? [String: Int]) ?? [:]
    }
}
