import Foundation
import FixtureServer
import TestSupport

/// An SMTP receiver that offers STARTTLS (`Tests/Fixtures/smtp-tls-fixture-server.py`, Python's
/// ssl module) with a certificate authority of its own made by `openssl` for this test, and
/// offers AUTH only once the connection is encrypted. Stopped by ``stop()`` or deinit.
final class SMTPTLSFixture: @unchecked Sendable {
    let port: Int
    /// The PEM file of the CA that signed the server's certificate: what `ca_file` names.
    let caFile: String
    private let folder: URL
    private let messagesFile: URL
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var stopped = false

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/smtp-tls-fixture-server.py").path

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-smtp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try H2FixtureServer.makeCertificates(in: folder)
        caFile = folder.appendingPathComponent("ca.pem").path
        messagesFile = folder.appendingPathComponent("messages.ndjson")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            Self.script, "--cert", folder.appendingPathComponent("server.pem").path,
            "--key", folder.appendingPathComponent("server.key").path, "--messages", messagesFile.path,
        ]
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
            throw FixtureError("the SMTP TLS fixture server did not start")
        }
        self.port = port
    }

    deinit { stop() }

    var url: String { "smtp://127.0.0.1:\(port)" }

    /// The messages taken, each with whether it came over TLS.
    var messages: [(tls: Bool, message: SMTPFixture.Message)] {
        guard let text = try? String(contentsOf: messagesFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            let login = (object["login"] as? [String]).flatMap { $0.count == 2 ? (user: $0[0], password: $0[1]) : nil }
            let message = SMTPFixture.Message(
                from: object["from"] as? String ?? "", recipients: object["to"] as? [String] ?? [], data: object["data"] as? String ?? "", login: login
            )
            return (object["tls"] as? Bool ?? false, message)
        }
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }
}
