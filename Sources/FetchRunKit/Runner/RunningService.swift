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
