import Foundation
import TestSupport

/// The HTTP/2 fixture server (`Tests/Fixtures/h2-fixture-server.py`, Python's h2 library) with
/// a certificate authority of its own made by `openssl` for this test: TLS with ALPN h2, or
/// `plain` HTTP/2 for prior knowledge. Stopped (and its folder removed) by ``stop()`` or deinit.
final class H2FixtureServer: @unchecked Sendable {
    let port: Int
    let plain: Bool
    /// The PEM file of the CA that signed the server's certificate: what `ca_file` names.
    let caFile: String
    private let folder: URL
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var stopped = false

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/h2-fixture-server.py").path

    init(plain: Bool = false) throws {
        self.plain = plain
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-h2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        caFile = folder.appendingPathComponent("ca.pem").path
        var arguments = [Self.script, "--plain"]
        if !plain {
            try Self.makeCertificates(in: folder)
            arguments = [Self.script, "--cert", folder.appendingPathComponent("server.pem").path, "--key", folder.appendingPathComponent("server.key").path]
        }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // The first line is the port.
        var line = Data()
        let reader = output.fileHandleForReading
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw FixtureError("the HTTP/2 fixture server did not start (is python3-h2 installed?)")
        }
        self.port = port
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
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        try? FileManager.default.removeItem(at: folder)
        return (try? JSONSerialization.jsonObject(with: rest) as? [String: Int]) ?? [:]
    }

    /// A CA, and a certificate for 127.0.0.1 and localhost that it signed.
    static func makeCertificates(in folder: URL) throws {
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.currentDirectoryURL = folder
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw FixtureError("openssl \(arguments.first ?? "") failed") }
        }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + curve + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=fetchrun test CA"])
        try openssl(["req"] + curve + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"])
        try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\n".utf8).write(to: folder.appendingPathComponent("san.ext"))
        try openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext"])
    }
}
