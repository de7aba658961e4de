import Foundation
import PostgresNIO

/// `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]` as a
/// connection configuration; `?host=/directory` (as libpq takes it) connects through the
/// Unix socket `<directory>/.s.PGSQL.<port>` instead of TCP. The password never appears in
/// messages: ``redacted(_:)``.
package enum PostgresURL {
    package struct Invalid: Error, CustomStringConvertible {
        package var description: String
    }

    /// Whether `text` names PostgreSQL state rather than a folder.
    package static func isPostgres(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// - Throws: ``Invalid`` saying what is missing (never quoting the password).
    package static func configuration(_ text: String) throws(Invalid) -> PostgresClient.Configuration {
        guard isPostgres(text), let components = URLComponents(string: text) else {
            throw Invalid(description: "not a postgres://user@host[:port]/database URL: \(redacted(text))")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let socketDirectory = query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        guard socketDirectory != nil || !(components.host ?? "").isEmpty else {
            throw Invalid(description: "\(redacted(text)) names no host (postgres://user@host/database, or ?host=/socket/directory)")
        }
        guard let user = components.user, !user.isEmpty else {
            throw Invalid(description: "\(redacted(text)) names no user (postgres://user@host/database)")
        }
        let database = String(components.path.drop { $0 == "/" })
        let username = user.removingPercentEncoding ?? user, password = components.password?.removingPercentEncoding
        var configuration: PostgresClient.Configuration
        if let socketDirectory {
            configuration = PostgresClient.Configuration(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(components.port ?? 5432)", username: username, password: password, database: database.isEmpty ? nil : database
            )
        } else {
            let tls: PostgresClient.Configuration.TLS
            switch query["sslmode"] ?? "prefer" {
            case "disable": tls = .disable
            case "prefer": tls = .prefer(.makeClientConfiguration())
            case "require": tls = .require(.makeClientConfiguration())
            case let mode: throw Invalid(description: "sslmode=\(mode) in \(redacted(text)): use disable, prefer or require")
            }
            configuration = PostgresClient.Configuration(
                host: components.host ?? "", port: components.port ?? 5432, username: username, password: password, database: database.isEmpty ? nil : database, tls: tls
            )
        }
        configuration.options.maximumConnections = 8
        return configuration
    }

    /// The URL with its password replaced by `***`, for messages.
    package static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].lastIndex(of: "@") else { return text }
        let credentials = text[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<text.index(after: colon)]) + "***" + String(text[at...])
    }
}
