import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// fetchrun's state in PostgreSQL, shared by every worker: each source's state, schedule,
/// lease and snapshot in `fetchrun_sources`, the outbox, worker heartbeats.
///
/// No coordinator: each worker leases due sources itself (`FOR UPDATE SKIP LOCKED`); a lease
/// carries a token that the commit must still match, so a worker whose lease ran out cannot
/// overwrite what another wrote since. A worker that dies stops renewing, and its leases lapse
/// after their time. Times that decide leases are PostgreSQL's own (`now()`), so workers on
/// machines whose clocks differ agree on them.
///
/// The connection pool, ``client``, is a `Service`: the command runs it in its `ServiceGroup`
/// (before the services that use the store, so that it stops after them), and every call
/// waits for it.
package actor PostgresStateStore: SharedSchedule {
    package nonisolated let client: PostgresClient
    package nonisolated let workerID: String
    /// The URL with its password taken out, for messages.
    package nonisolated let displayURL: String
    /// One direct connection checks the URL before the pool is used: its failure has
    /// PostgreSQL's own words, within the connect timeout, where the pool would retry for ever.
    private let check: PostgresConnection.Configuration
    private let connectTimeout: Duration
    let logger: Logger
    /// The time a lease's end is turned into a span with; the lease itself is kept on the
    /// server's clock, the one every worker agrees on.
    let clock: any FetchClock
    /// When this process started using the store (the process's own start time, for the
    /// workers' table).
    let startedAt: Date
    private let completions = GroupCommit<FetchCommit, Bool>()

    /// A store for `url`; nothing is connected until ``client`` runs and a call is made.
    /// - Throws: ``StateStoreError`` when the URL is not usable.
    package init(url: String, workerID: String = PostgresStateStore.defaultWorkerID(), clock: any FetchClock = SystemClock(), logger: Logger = Logger(label: "fetchrun.postgres")) throws(StateStoreError) {
        self.clock = clock
        startedAt = clock.date
        let settings: PostgresURL.Settings
        do {
            settings = try PostgresURL.settings(url)
        } catch {
            throw StateStoreError(store: PostgresURL.redacted(url), reason: error.description)
        }
        let configuration = settings.pool
        check = settings.connection
        connectTimeout = settings.connectTimeout
        // The pool warns when a query comes before its run() has begun, which happens when the
        // group starts its services together; only its errors are worth a line.
        var poolLogger = logger
        poolLogger.logLevel = .error
        client = PostgresClient(configuration: configuration, backgroundLogger: poolLogger)
        displayURL = PostgresURL.redacted(url)
        self.workerID = workerID
        self.logger = logger
    }

    private var prepared = false
    /// When each source's records past its `keep` are pruned (``HistoryKeep``).
    var historyKeep = HistoryKeep()

    /// Brings the schema up to date, under an advisory lock so that workers starting together
    /// migrate once. Every call of the store does it first (once), so a service that uses the
    /// store as soon as the group starts needs no other order; this says it explicitly.
    package func prepare() async throws(StateStoreError) {
        try await run {}
    }

    /// `host:pid:random`: unique per process, readable in `fetchrun workers`.
    package static func defaultWorkerID() -> String {
        "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UInt32.random(in: 0...UInt32.max) % 100_000)"
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            switch error.code {
            case .sslUnsupported:
                return "the server does not offer TLS, and sslmode=require asks for it"
            case .connectionError:
                return error.underlying.map { "cannot connect: \($0)" } ?? "cannot connect"
            default:
                return error.underlying.map { "\(error.code): \($0)" } ?? "\(error.code)"
            }
        }
        return "\(error)"
    }

    /// Connects once, directly, and logs in: what is wrong with the URL (no server, a wrong
    /// password, a database that does not exist, TLS refused) fails here within the connect
    /// timeout, in PostgreSQL's words, rather than in the pool's retries.
    private func checkConnection() async throws(StateStoreError) {
        let check = check, logger = logger, seconds = connectTimeout.components.seconds, clock = clock
        do {
            try await withDeadline(clock.now + connectTimeout, on: clock) {
                let connection = try await PostgresConnection.connect(configuration: check, id: 0, logger: logger)
                try? await connection.close()
            }
        } catch is DeadlineExceeded {
            throw StateStoreError(store: displayURL, reason: "no answer within the connect timeout (\(seconds) s; ?connect_timeout=SECONDS in the URL sets it)")
        } catch {
            throw StateStoreError(store: displayURL, reason: Self.describe(error))
        }
    }

    /// Runs `body`; what PostgreSQL or the pool throws becomes a ``StateStoreError`` naming the
    /// server by its URL with the password taken out.
    func run<T>(_ body: () async throws -> T) async throws(StateStoreError) -> T {
        do {
            if !prepared {
                try await checkConnection()
                // Two first calls at once may both migrate: the migration checks the version
                // under its lock, so the second finds nothing to do.
                try await ClusterSchema.migrate(client, logger: logger)
                prepared = true
            }
            return try await body()
        } catch let error as StateStoreError {
            throw error
        } catch {
            throw StateStoreError(store: displayURL, reason: Self.describe(error))
        }
    }

    /// Writes `commit` with the other commits waiting (``GroupCommit``): one statement for all.
    package func commit(_ commit: FetchCommit) async throws(StateStoreError) -> Bool {
        do {
            return try await completions.write(commit) { [self] batch in try await self.complete(batch) }
        } catch let error as StateStoreError {
            throw error
        } catch {
            throw StateStoreError(store: displayURL, reason: error is CancellationError ? "cancelled before it was written" : Self.describe(error))
        }
    }

    /// PostgreSQL's text holds no NUL (and jsonb refuses `\u0000`), but a plugin's message or a
    /// server's header may carry one: it is stored as U+FFFD rather than failing the write.
    static func storable(_ text: String) -> String {
        text.utf8.contains(0) ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
    }
}
