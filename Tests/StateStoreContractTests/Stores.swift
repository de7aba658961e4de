import FetchRunCluster
import FetchRunKit
import Foundation
import Testing
import TestSupport

/// The two state stores every contract test runs against: a temporary `state.db`, and a
/// database of its own on a PostgreSQL server the test process starts (once, shared).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }
}

/// A store of `kind` for one test, and a second handle on the same state held by another
/// process (SQLite: another live process id; PostgreSQL: another worker), for leases and claims.
struct Stores: Sendable {
    let kind: StoreKind
    let store: any SourceStateStore
    let other: any SourceStateStore
    /// One whose holder is gone (SQLite: a process id past `pid_max`); `nil` for PostgreSQL,
    /// where a lease lapses only with time.
    let gone: (any SourceStateStore)?
    /// The clock state.db's handles keep leases on, moved by ``letTimePass(_:)``; `nil` for
    /// PostgreSQL, which keeps them on the server's clock.
    let clock: TestClock?

    /// The calendar time `seconds` from now on the stores' clock: a lease's end.
    func inSeconds(_ seconds: Double) -> Date {
        (clock?.date ?? Date()).addingTimeInterval(seconds)
    }

    /// Lets `duration` pass for the stores' leases: a test clock moved for state.db; real
    /// time for PostgreSQL, whose leases run on the server's clock, the one workers share.
    func letTimePass(_ duration: Duration) async throws {
        if let clock {
            clock.advance(by: duration)
        } else {
            try await letPostgreSQLTimePass(duration)
        }
    }

    /// Runs `body` with fresh stores of `kind`; PostgreSQL's pools run while it does.
    static func with(_ kind: StoreKind, _ body: (Stores) async throws -> Void) async throws {
        switch kind {
        case .sqlite:
            let directory = StateDirectory(path: FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-contract-\(UUID().uuidString)").path)
            try directory.prepare()
            defer { try? FileManager.default.removeItem(atPath: directory.path) }
            // pid 1 is alive; 4194305 is past the kernel's pid_max.
            let clock = TestClock()
            try await body(Stores(
                kind: kind, store: try await SQLiteStateStore.open(in: directory, clock: clock).store,
                other: try await SQLiteStateStore.open(in: directory, owner: 1, clock: clock).store,
                gone: try await SQLiteStateStore.open(in: directory, owner: 4_194_305, clock: clock).store,
                clock: clock
            ))
        case .postgres:
            let url = try await PostgresServer.shared().createDatabase()
            let store = try PostgresStateStore(url: url, workerID: "test:1")
            let other = try PostgresStateStore(url: url, workerID: "test:2")
            try await withRunning(store.client) {
                try await withRunning(other.client) {
                    try await body(Stores(kind: kind, store: store, other: other, gone: nil, clock: nil))
                }
            }
        }
    }
}

/// Two workers' handles on one shared schedule: a database of its own on the PostgreSQL server.
struct SharedStores: Sendable {
    let store: any SharedSchedule
    let other: any SharedSchedule

    func taken(_ attempt: LeaseAttempt, sourceLocation: SourceLocation = #_sourceLocation) throws -> SourceLease {
        guard case .taken(let lease) = attempt else {
            Issue.record("not taken: \(attempt)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        return lease
    }
}

extension Stores {
    /// Runs `body` with two workers' handles on a fresh shared schedule; their pools run while it does.
    static func withSharedSchedule(_ body: (SharedStores) async throws -> Void) async throws {
        let url = try await PostgresServer.shared().createDatabase()
        let store = try PostgresStateStore(url: url, workerID: "test:1")
        let other = try PostgresStateStore(url: url, workerID: "test:2")
        try await withRunning(store.client) {
            try await withRunning(other.client) { try await body(SharedStores(store: store, other: other)) }
        }
    }
}

/// Lets `duration` pass on PostgreSQL's clock, which keeps the shared schedule and its leases:
/// the contract tests' one real-time wait. The server's `now()` cannot be moved, and it is the
/// clock workers share, so what lapses or falls due there is waited for.
func letPostgreSQLTimePass(_ duration: Duration) async throws {
    try await Task.sleep(for: duration)
}

/// An adapter whose behaviour each test chooses.
struct ScriptedAdapter: SourceAdapter {
    var readsPreviousSnapshot = true
    var behaviour: @Sendable (FetchContext) async throws -> FetchOutput

    func fetch(_ context: FetchContext) async throws -> FetchOutput {
        try await behaviour(context)
    }
}

func item(_ id: String, title: String? = nil) -> Item {
    Item(id: id, title: title ?? "Title \(id)")
}

/// A source built in code; `config` adds what a config file would (outputs, filters, options).
func source(
    _ name: String, type: String = "scripted", interval: Duration = .seconds(60), readsSnapshot: Bool = true,
    _ behaviour: @escaping @Sendable (FetchContext) async throws -> FetchOutput
) -> SourceConfig {
    SourceConfig(
        name: name, adapter: ScriptedAdapter(readsPreviousSnapshot: readsSnapshot, behaviour: behaviour),
        settings: SourceSettings(interval: .every(interval), maxBackoff: .seconds(3600)), type: type
    )
}

/// The outputs and routing a config with `yaml` gives its source named `name`.
func configured(_ yaml: String) throws -> FetchConfig {
    try ConfigLoader(environment: [:]).load(text: yaml, file: "sources.yaml", directory: "/")
}

extension Stores {
    /// A pipeline over the store, with `outputs`, no jitter, and an HTTP client no scripted
    /// adapter uses.
    func pipeline(outputs: [OutputConfig] = []) -> FetchPipeline {
        var pipeline = FetchPipeline(store: store, http: CurlHTTPClient())
        pipeline.outputs = outputs
        pipeline.jitter = { 0 }
        return pipeline
    }

    func state(_ name: String) async throws -> SourceState {
        try await store.states()[name] ?? SourceState(name: name)
    }

    func snapshot(_ name: String) async -> Snapshot? {
        if case .loaded(let snapshot) = await store.snapshot(of: name, movingCorruptAside: false) { return snapshot }
        return nil
    }

    func taken(_ attempt: LeaseAttempt, sourceLocation: SourceLocation = #_sourceLocation) throws -> SourceLease {
        guard case .taken(let lease) = attempt else {
            Issue.record("not taken: \(attempt)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        return lease
    }
}

func inSeconds(_ seconds: Double) -> Date { Date().addingTimeInterval(seconds) }
