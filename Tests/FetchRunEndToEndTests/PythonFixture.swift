import Foundation
import TestSupport

/// A fixture server written in Python (`Tests/Fixtures/<name>`): started with its arguments, it
/// prints the port it listens on as its first line and stops when its stdin closes.
final class PythonFixtureProcess: @unchecked Sendable {
    let port: Int
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var stopped = false

    /// - Throws: ``FixtureError`` with `failure` when the script printed no port.
    init(script name: String, arguments: [String], failure: String) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/\(name)").path
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script] + arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        let reader = output.fileHandleForReading
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw FixtureError(failure)
        }
        self.port = port
    }

    deinit { stop() }

    /// Closes the script's stdin, waits for it to end and returns what it printed after the port.
    @discardableResult
    func stop() -> Data {
        guard !stopped else { return Data() }
        stopped = true
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        return output.fileHandleForReading.readDataToEndOfFile()
    }
}

/// Certificates for the TLS fixtures, made by `openssl` for one test.
enum FixtureCertificates {
    /// A CA (`ca.pem`), and a certificate for 127.0.0.1 and localhost that it signed
    /// (`server.pem`, `server.key`), in `folder`.
    static func make(in folder: URL) throws {
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
