import Testing

/// Waits until `condition` holds, looking again every 10 ms of real time. Past `timeout` the test
/// has waited for something that did not happen: an issue naming `what` is recorded (at the
/// caller's line) and the wait ends, so the test's own expectations say what was missing.
///
/// The tests' one real-time wait, for what only a real process, server, file or thread can
/// show. A rule about time is never waited for here: it is tested on a ``TestClock``.
/// - Returns: whether the condition came to hold.
@discardableResult
public func waitUntil(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let end = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < end else {
            Issue.record("timed out waiting for \(what())", sourceLocation: sourceLocation)
            return false
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    return true
}
