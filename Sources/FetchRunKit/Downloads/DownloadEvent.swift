/// What a ``Downloader`` reports as it works, for progress bars and NDJSON `download` events.
package enum DownloadEvent: Sendable {
    /// A fetch put an enclosure in the queue.
    case queued(DownloadEntry)
    /// A download began; `resumingAt` is the offset a partial file continues from.
    case started(DownloadEntry, resumingAt: Int64?)
    /// Every running download, four times a second (consumers throttle as they need).
    case progress([DownloadProgress])
    case done(DownloadEntry)
    /// `entry.failure` says why; `entry.retryable` whether the next start tries again.
    case failed(DownloadEntry)
    /// A finished file deleted to honour the source's `keep`.
    case removed(DownloadEntry)
}

/// One running download at one moment.
package struct DownloadProgress: Sendable, Hashable {
    public var url: String
    public var source: String
    /// The name the file is being written under (without `.part`).
    public var name: String
    public var received: Int64
    /// The whole file's size, when the server announced it.
    public var size: Int64?
    /// Smoothed over the last few seconds.
    public var bytesPerSecond: Double

    /// Whole percent done, when the size is known.
    public var percent: Int? {
        guard let size, size > 0 else { return nil }
        return Int(min(100, received * 100 / size))
    }

    /// Seconds left at the current rate, when the size is known.
    public var secondsLeft: Double? {
        guard let size, bytesPerSecond > 0 else { return nil }
        return Double(max(0, size - received)) / bytesPerSecond
    }
}

/// What a ``Downloader`` run did.
package struct DownloadTally: Sendable, Hashable {
    public var done = 0
    public var failed = 0
    /// Bytes written by this run (resumed files count only what was added).
    public var bytes: Int64 = 0

    public init() {}
}
