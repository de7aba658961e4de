/// A source's `download:` block: which enclosures of its new items are downloaded, and where.
package struct DownloadSettings: Sendable, Hashable {
    /// The folder files go to, resolved against the config file's folder.
    public var directory: String
    /// MIME patterns (`audio/*`, `video/mp4`, `*/*`); an enclosure matches one of them. An
    /// enclosure with no type matches only `*/*` (the default).
    public var types: [String]
    /// A larger file fails with a reason; its partial bytes are deleted.
    public var maxSize: Int64
    /// Keep the newest N downloaded files of this source; older ones are deleted. `nil` keeps all.
    public var keep: Int?
    /// Bytes per second per download; `nil` is no cap.
    public var maxRate: Int64?

    public static let defaultMaxSize: Int64 = 1 << 30

    public init(directory: String, types: [String] = ["*/*"], maxSize: Int64 = DownloadSettings.defaultMaxSize, keep: Int? = nil, maxRate: Int64? = nil) {
        self.directory = directory
        self.types = types
        self.maxSize = maxSize
        self.keep = keep
        self.maxRate = maxRate
    }

    /// Whether an enclosure of this MIME type is downloaded. Parameters (`; charset=`) and case
    /// are ignored.
    public func accepts(type: String?) -> Bool {
        let mime = type.map { String($0.split(separator: ";").first ?? "").trimmingCharacters(in: .whitespaces).lowercased() }
        return types.contains { pattern in
            if pattern == "*/*" || pattern == "*" { return true }
            guard let mime, !mime.isEmpty else { return false }
            if pattern.hasSuffix("/*") { return mime.hasPrefix(pattern.dropLast()) }
            return mime == pattern
        }
    }
}

/// The top-level `downloads:` block: limits shared by every download.
package struct DownloadLimits: Sendable, Hashable {
    /// Downloads running at once, in all.
    public var maxInFlight = 4
    /// Downloads running at once from one host (host and port).
    public var maxPerHost = 2
    /// A download receiving nothing for this long fails as stalled (and resumes next time).
    public var stallTimeout: Duration = .seconds(60)
    public var connectTimeout: Duration = .seconds(30)
    /// How each downloading source reaches servers — its proxy, trusted CAs, `insecure`, HTTP
    /// version — by source name: its enclosures travel the way its feed does. Never its
    /// credentials or cookies: an enclosure may live on any host the feed names.
    public var sourceTransports: [String: HTTPTransport] = [:]
    /// The download folders the config names (each source's `download.dir`). The queue lives in
    /// the state folder, which anyone with access to it can edit, so its rows do not choose
    /// where files go: an entry whose folder is not one of these is failed, never written.
    public var folders: Set<String> = []

    public init(folders: Set<String> = []) {
        self.folders = folders
    }
}
