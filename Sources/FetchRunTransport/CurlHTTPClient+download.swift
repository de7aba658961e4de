import FetchRunCore
import Foundation

extension CurlHTTPClient {
    /// Downloads `request.url` into `file`, continuing it when `request.resume` is set.
    ///
    /// - Returns: the final response. A 206 appended to the file; a 200 rewrote it from the
    ///   start (the server ignored the range, or `If-Range` said the file changed); any other
    ///   status left the file untouched.
    /// - Throws: ``HTTPError`` when the transfer failed: no connection, a stall, a body past
    ///   `maxBytes` (`.bodyTooLarge`), a write error, a range the server started elsewhere.
    ///   Bytes written before the failure stay in the file, so the next attempt can resume.
    ///   `CancellationError` when the calling task is cancelled.
    /// - Cancellation: the transfer is removed from curl at once; the file keeps what was written.
    package func download(_ request: DownloadRequest, into file: DownloadFile) async throws -> DownloadResponse {
        let response = try await run(CurlTransfer(download: request, into: file))
        // An empty 200 body never reached the write callback, which is where the file is cut.
        if response.status == 200, file.decision == nil {
            _ = file.decide(status: 200, headers: response.headers, resumeOffset: nil)
        }
        return DownloadResponse(
            status: response.status, headers: response.headers, effectiveURL: response.effectiveURL,
            fileBytes: file.bytesInFile,
            announcedSize: DownloadFile.ResponseHead(status: response.status, headers: response.headers).announcedSize
        )
    }
}

/// `Content-Range: bytes <start>-<end>/<total>` (total may be `*`).
package struct ContentRange: Equatable {
    package var start: Int64
    package var end: Int64
    package var total: Int64?

    package init?(_ header: String) {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let parts = text.dropFirst(6).split(separator: "/", maxSplits: 1)
        let bounds = parts.first?.split(separator: "-", maxSplits: 1) ?? []
        guard parts.count == 2, bounds.count == 2,
              let start = Int64(bounds[0].trimmingCharacters(in: .whitespaces)),
              let end = Int64(bounds[1].trimmingCharacters(in: .whitespaces)), start <= end else { return nil }
        self.start = start
        self.end = end
        total = Int64(parts[1].trimmingCharacters(in: .whitespaces))
    }
}
