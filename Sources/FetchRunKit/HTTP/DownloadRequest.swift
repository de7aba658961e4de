/// One GET whose body goes to a file: an enclosure download.
///
/// Unlike ``HTTPRequest`` it has no overall deadline — a podcast episode may take an hour on a
/// slow line. What ends it early is a connection that cannot be made within `connectTimeout`,
/// a transfer that stalls (less than 1 byte a second for `stallTimeout`), or a body past
/// `maxBytes`.
public struct DownloadRequest: Sendable {
    public var url: String
    /// Sent as given, in order, after the `Range` / `If-Range` the resume adds.
    public var headers: [(name: String, value: String)]
    /// The most bytes the finished file may hold.
    public var maxBytes: Int64
    /// Bytes per second at most; `nil` is as fast as the network allows.
    public var maxBytesPerSecond: Int64?
    public var connectTimeout: Duration
    public var stallTimeout: Duration
    public var maxRedirects: Int
    public var userAgent: String
    /// Continue a partial file instead of starting over; `nil` downloads from the first byte.
    public var resume: Resume?

    /// Where a partial download stopped, and how the server can tell whether the file is still
    /// the one those bytes came from.
    public struct Resume: Sendable, Hashable {
        /// Bytes already in the file.
        public var offset: Int64
        /// A strong ETag or a Last-Modified date from the response that started the file; sent
        /// as `If-Range`, so a changed file comes back whole (200) instead of spliced.
        public var validator: String

        public init(offset: Int64, validator: String) {
            self.offset = offset
            self.validator = validator
        }
    }

    public init(
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
public struct DownloadResponse: Sendable {
    /// The final status: 206 when the file was continued, 200 when it was (re)written from the
    /// start; anything else left the file as it was.
    public var status: Int
    /// The final response's headers; names lower-cased.
    public var headers: [String: String]
    public var effectiveURL: String
    /// Bytes in the file now.
    public var fileBytes: Int64
    /// The whole file's size as the server announced it (`Content-Range` total, else
    /// `Content-Length`), if it did.
    public var announcedSize: Int64?

    /// The body was written (from the start or continued).
    public var wroteBody: Bool { status == 200 || status == 206 }
}
