import Foundation
import FixtureServer
import TestSupport

/// An SMTP receiver that offers STARTTLS (`Tests/Fixtures/smtp-tls-fixture-server.py`, Python's
/// ssl module) with a certificate authority of its own made by `openssl` for this test, and
/// offers AUTH only once the connection is encrypted. Stopped by ``stop()`` or deinit.
final class SMTPTLSFixture: @unchecked Sendable {
    /// The PEM file of the CA that signed the server's certificate: what `ca_file` names.
    let caFile: String
    private let folder: URL
    private let messagesFile: URL
    private let server: PythonFixtureProcess

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-smtp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FixtureCertificates.make(in: folder)
        caFile = folder.appendingPathComponent("ca.pem").path
        messagesFile = folder.appendingPathComponent("messages.ndjson")
        server = try PythonFixtureProcess(
            script: "smtp-tls-fixture-server.py",
            arguments: ["--cert", folder.appendingPathComponent("server.pem").path, "--key", folder.appendingPathComponent("server.key").path, "--messages", messagesFile.path],
            failure: "the SMTP TLS fixture server did not start"
        )
    }

    deinit { stop() }

    var url: String { "smtp://127.0.0.1:\(server.port)" }

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
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }
}
