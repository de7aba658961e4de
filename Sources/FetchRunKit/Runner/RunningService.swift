import ServiceLifecycle

/// Runs `service` for as long as `body` takes — for work that needs a service (the HTTP
/// client's curl loop, PostgreSQL's connection pool) outside a `ServiceGroup`: the service
/// starts before `body` and is cancelled and waited for after it, whichever way `body` ends.
/// Nothing is left running.
package func withRunning<T>(_ service: some Service, _ body: () async throws -> T) async rethrows -> T {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await service.run() }
        let result = try await body()
        group.cancelAll()
        return result
    }
}

/// `service`, made to end only in its turn: when its work is done before the group asks it
/// to stop, it waits to be asked (or cancelled).
///
/// A `ServiceGroup` stops its services one at a time, in reverse order, and takes a service
/// that ends while another one is being stopped for a failure (`serviceFinishedUnexpectedly`):
/// a download service whose queue ran dry, or any service done a moment early, would turn a
/// clean shutdown into an error message. Waiting keeps the order the group expects; a service
/// that throws still throws at once.
package struct EndingInItsTurn: Service {
    package let service: any Service

    package init(_ service: any Service) {
        self.service = service
    }

    package func run() async throws {
        try await service.run()
        // Cancelled instead (a second Ctrl-C), it ends at once, as everything else does.
        try? await gracefulShutdown()
    }
}

/// Named by the service it runs, in the group's log lines: without a description of its own,
/// the group's `"\(service)"` reflects on the value, and each field it prints costs a search of
/// every protocol conformance in the program (~1 ms of every start, before the first fetch).
/// `_typeName` for the same reason: `String(describing:)` of a type looks it up as well.
extension EndingInItsTurn: CustomStringConvertible {
    package var description: String { _typeName(type(of: service), qualified: false) }
}
