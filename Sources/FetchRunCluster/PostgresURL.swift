import Foundation
import NIOSSL
import PostgresNIO

/// `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]
/// [&connect_timeout=seconds]` as a connection configuration; `?host=/directory` (as libpq
/// takes it) connects through the Unix socket `<directory>/.s.PGSQL.<port>` instead of TCP.
/// `connect_timeout` (libpq's name, default 10) bounds how long a connection may take to be
/// made, TLS and login included. The password never appears in messages: ``redacted(_:)``.
package enum PostgresURL {
    package struct Invalid: Error, CustomStringConvertible {
        package var description: String
    }

    /// Whether `text` names PostgreSQL state rather than a folder.
    package static func isPostgres(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// What one URL says: the pool's configuration, the same for one direct connection (to
    /// check it, with PostgreSQL's own words when it fails), and the connect timeout.
    package struct Settings: Sendable {
        package var pool: PostgresClient.Configuration
        package var connection: PostgresConnection.Configuration
        package var connectTimeout: Duration
    }

    /// - Throws: ``Invalid`` saying what is wrong (never quoting the password).
    package static func settings(_ text: String) throws(Invalid) -> Settings {
        let pool = try configuration(text)
        let query = Dictionary((URLComponents(string: text)?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        var connectTimeout = Duration.seconds(10)
        if let text = query["connect_timeout"] {
            guard let seconds = Int(text), (1...3600).contains(seconds) else {
                throw Invalid(description: "connect_timeout=\(text) is not a number of seconds from 1 to 3600")
            }
            connectTimeout = .seconds(seconds)
        }
        var connection: PostgresConnection.Configuration
        if let socket = pool.unixSocketPath {
            connection = PostgresConnection.Configuration(unixSocketPath: socket, username: pool.username, password: pool.password, database: pool.database)
        } else {
            let tls: PostgresConnection.Configuration.TLS
            do {
                switch query["sslmode"] ?? "prefer" {
                case "disable": tls = .disable
                case "prefer": tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
                default: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
                }
            } catch {
                throw Invalid(description: "cannot set up TLS: \(error)")
            }
            connection = PostgresConnection.Configuration(host: pool.host ?? "", port: pool.port ?? 5432, username: pool.username, password: pool.password, database: pool.database, tls: tls)
        }
        connection.options.connectTimeout = .nanoseconds(Int64(connectTimeout.components.seconds) * 1_000_000_000)
        var configured = pool
        configured.options.connectTimeout = connectTimeout
        return Settings(pool: configured, connection: connection, connectTimeout: connectTimeout)
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
