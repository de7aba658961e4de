import Testing

/// Polls `condition` until it holds. Past `timeout` the test has waited for something that did
/// not happen: an issue naming `what` is recorded (at the caller's line) and the wait ends, so
/// the test's own expectations say what was missing.
func waitUntil(_ what: String, timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool) async throws {
    let end = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < end else {
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
            return
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}
