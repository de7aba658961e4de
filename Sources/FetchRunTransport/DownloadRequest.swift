import FetchRunCore
/// One GET whose body goes to a file: an enclosure download.
///
/// Unlike ``HTTPRequest`` it has no overall deadline — a podcast episode may take an hour on a
/// slow line. What ends it early is a connection that cannot be made within `connectTimeout`,
/// a transfer that stalls (less than 1 byte a second for `stallTimeout`), or a body past
/// `maxBytes`.
package struct DownloadRequest: Sendable {
    package var url: String
    /// Sent as given, in order, after the `Range` / `If-Range` the resume adds.
    package var headers: [(name: String, value: String)]
    /// The most bytes the finished file may hold.
    package var maxBytes: Int64
    /// Bytes per second at most; `nil` is as fast as the network allows.
    package var maxBytesPerSecond: Int64?
    package var connectTimeout: Duration
    package var stallTimeout: Duration
    package var maxRedirects: Int
    package var userAgent: String
    /// Continue a partial file instead of starting over; `nil` downloads from the first byte.
    package var resume: Resume?
    /// Proxy, TLS trust, credentials and cookies: the feed's own.
    package var transport = HTTPTransport()

    /// Where a partial download stopped, and how the server can tell whether the file is still
    /// the one those bytes came from.
    package struct Resume: Sendable, Hashable {
        /// Bytes already in the file.
        package var offset: Int64
        /// A strong ETag or a Last-Modified date from the response that started the file; sent
        /// as `If-Range`, so a changed file comes back whole (200) instead of spliced.
        package var validator: String

        package init(offset: Int64, validator: String) {
            self.offset = offset
            self.validator = validator
        }
    }

    package init(
        url: String, headers: [(name: String, value: String)] = [], maxBytes: Int64, maxBytesPerSecond: Int64? = nil,
        connectTimeout: Duration = .seconds(30), stallTimeout: Duration = .seconds(60), maxRedirects: Int = 5,
        userAgent: String = HTTPRequest.defaultUserAgent, resume: Resume? = nil
    ) {
        self.url = url
        self.headers = headers
        self.maxBytes = maxBytes
        self.maxBytesPerSecond = maxBytesPerSecond
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.maxRedirects = maxRedirects
        self.userAgent = userAgent
        self.resume = resume
    }
}

/// How a download ended, when the server answered.
package struct DownloadResponse: Sendable {
    /// The final status: 206 when the file was continued, 200 when it was (re)written from the
    /// start; anything else left the file as it was.
    package var status: Int
    /// The final response's headers; names lower-cased.
    package var headers: [String: String]
    package var effectiveURL: String
    /// Bytes in the file now.
    package var fileBytes: Int64
    /// The whole file's size as the server announced it (`Content-Range` total, else
    /// `Content-Length`), if it did.
    package var announcedSize: Int64?

    /// The body was written (from the start or continued).
    package var wroteBody: Bool { status == 200 || status == 206 }
}
