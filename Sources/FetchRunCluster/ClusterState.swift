import FetchRunKit
import Foundation
import Logging
import PostgresNIO

/// A source a worker has leased: what it needs of the past to fetch it, and the lease token
/// that its completion must still hold.
public struct LeasedSource: Sendable {
    public var name: String
    public var token: Int64
    public var validators: HTTPValidators?
    public var bodyHash: String?
    public var currentInterval: Duration?
    public var consecutiveFailures: Int
    public var failingSince: Date?
    /// Items in the stored snapshot, as its last successful fetch counted them.
    public var itemCount: Int
    /// Whether a snapshot is stored; ``snapshot`` carries it only for adapters that read it
    /// (``SourceAdapter/readsPreviousSnapshot``), others load it only when their source changed.
    public var hasSnapshot: Bool
    public var snapshot: String?
}

/// What one fetch changes, written in one transaction only if the lease still holds.
public struct Completion: Sendable {
    public var name: String
    public var token: Int64
    public var report: SourceReport
    public var dueAt: Date
    public var currentInterval: Duration?
    public var validators: HTTPValidators?
    public var bodyHash: String?
    /// The new snapshot JSON; `nil` leaves the stored one.
    public var snapshot: String?
    /// Outbox rows to add with it, per output.
    public var deliveries: [(output: String, delivery: Delivery)]
}

/// A worker, as its heartbeats show it.
public struct WorkerInfo: Sendable {
    public var id: String
    public var host: String
    public var pid: Int
    public var startedAt: Date
    public var heartbeatAt: Date
    /// Sources it holds leases on now.
    public var holding: Int
}

/// fetchrun's state in PostgreSQL, shared by every worker: sources with their schedule and
/// leases (`FOR UPDATE SKIP LOCKED`), snapshots, the outbox, worker heartbeats.
///
/// No coordinator: each worker leases due sources itself; a lease carries a token that the
/// completion must still match, so a worker whose lease ran out cannot overwrite what another
/// wrote since. A worker that dies stops renewing, and its leases lapse after their time.
public actor ClusterState {
    let client: PostgresClient
    private let clientTask: Task<Void, Never>
    public nonisolated let workerID: String
    public nonisolated let url: String
    let logger: Logger

    /// Connects (the pool starts at once) and brings the schema up to date.
    /// - Throws: ``ClusterStateError`` when the server cannot be reached or the URL is not usable.
    public static func connect(url: String, workerID: String = ClusterState.defaultWorkerID(), logger: Logger = Logger(label: "fetchrun.cluster")) async throws -> ClusterState {
        let configuration: PostgresClient.Configuration
        do {
            configuration = try PostgresURL.configuration(url)
        } catch {
            throw ClusterStateError(error.description)
        }
        // The pool warns when a query comes before its run() task has begun, which is how it
        // is started here (a task of its own); only its errors are worth a line.
        var poolLogger = logger
        poolLogger.logLevel = .error
        let state = ClusterState(client: PostgresClient(configuration: configuration, backgroundLogger: poolLogger), url: url, workerID: workerID, logger: logger)
        do {
            try await ClusterSchema.migrate(state.client, logger: logger)
        } catch let error as ClusterStateError {
            throw error
        } catch {
            throw ClusterStateError("\(PostgresURL.redacted(url)): \(Self.describe(error))")
        }
        return state
    }

    private init(client: PostgresClient, url: String, workerID: String, logger: Logger) {
        self.client = client
        self.url = url
        self.workerID = workerID
        self.logger = logger
        clientTask = Task { await client.run() }
    }

    deinit {
        clientTask.cancel()
    }

    /// `host:pid:random`: unique per process, readable in `fetchrun workers`.
    public static func defaultWorkerID() -> String {
        "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UInt32.random(in: 0...UInt32.max) % 100_000)"
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            return "\(error.code)"
        }
        return "\(error)"
    }

    /// Runs `body`; what PostgreSQL or the pool throws becomes a ``ClusterStateError`` naming
    /// the server by its URL with the password taken out.
    func run<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ClusterStateError {
            throw error
        } catch {
            throw ClusterStateError("\(PostgresURL.redacted(url)): \(Self.describe(error))")
        }
    }
}
