extension HTTPClient {
    /// Performs a GET request and returns the final response, whatever its status.
    ///
    /// - Returns: the response after redirects. A 4xx or 5xx is a response, not an error.
    /// - Throws: ``HTTPError`` when no response could be had (network, redirect rules, size
    ///   cap, a URL that is not allowed); `CancellationError` when the calling task is cancelled.
    /// - Cancellation: the transfer is removed from curl at once — also one still queued
    ///   behind a connection limit — and its connection is closed; nothing keeps running.
    public func execute(_ request: HTTPRequest) async throws -> HTTPResponse {
        let transfer = try CurlTransfer(request: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Set before the loop can see the transfer; the queue's lock publishes it.
                transfer.continuation = continuation
                loop.submit(.add(transfer))
            }
        } onCancel: {
            loop.submit(.cancel(transfer))
        }
    }
}
