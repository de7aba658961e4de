import Foundation
import PostgresNIO

/// `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]` as a
/// connection configuration. The password never appears in messages: ``redacted(_:)``.
public enum PostgresURL {
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// Whether `text` names PostgreSQL state rather than a folder.
    public static func isPostgres(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// - Throws: ``Invalid`` saying what is missing (never quoting the password).
    public static func configuration(_ text: String) throws(Invalid) -> PostgresClient.Configuration {
        guard isPostgres(text), let components = URLComponents(string: text), let host = components.host, !host.isEmpty else {
            throw Invalid(description: "not a postgres://user@host[:port]/database URL: \(redacted(text))")
        }
        guard let user = components.user, !user.isEmpty else {
            throw Invalid(description: "\(redacted(text)) names no user (postgres://user@host/database)")
        }
        let database = String(components.path.drop { $0 == "/" })
        let mode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require": tls = .require(.makeClientConfiguration())
        default: throw Invalid(description: "sslmode=\(mode) in \(redacted(text)): use disable, prefer or require")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding, database: database.isEmpty ? nil : database, tls: tls
        )
        configuration.options.maximumConnections = 8
        return configuration
    }

    /// The URL with its password replaced by `***`, for messages.
    public static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].lastIndex(of: "@") else { return text }
        let credentials = text[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<text.index(after: colon)]) + "***" + String(text[at...])
    }
}
