import Foundation

/// One enclosure in the download queue, from the moment a fetch found it until its file is
/// done (or failed, or pruned by `keep`). The queue keeps one entry per URL, which is what
/// makes a URL download once however many items or sources name it.
package struct DownloadEntry: Sendable, Hashable, Decodable {
    public enum State: String, Sendable, Decodable {
        case queued
        /// A process holding the transfer lock is on it. Found at start-up with no holder, it
        /// is stale (that process died) and counts as queued.
        case downloading
        case done
        case failed
        /// Done, then deleted to honour the source's `keep`.
        case removed
    }

    public var url: String
    /// The source (and item) whose fetch queued it first.
    public var source: String
    public var itemID: String
    public var itemTitle: String
    public var published: Date?
    public var type: String?
    /// The length the feed gave, if any (feeds often give 0 or a guess).
    public var enclosureLength: Int64?
    public var directory: String
    /// The partial file is `<directory>/<partName>.part`; chosen at queue time so a restart finds it.
    public var partName: String
    /// From `Content-Disposition`, sanitised; used for the finished file when given.
    public var suggestedName: String?
    /// The finished file's path, once done.
    public var file: String?
    public var state: State
    /// The whole file's size, once a response announced it.
    public var size: Int64?
    /// Bytes on disk when the entry was last saved.
    public var received: Int64
    /// The `If-Range` value for a resume: a strong ETag, else Last-Modified.
    public var validator: String?
    public var failure: String?
    /// Whether a failed download is tried again at the next start (network trouble, 5xx) or
    /// left failed (404, too large).
    public var retryable: Bool
    public var attempts: Int
    public var maxSize: Int64
    public var maxRate: Int64?
    public var keep: Int?
    public var queuedAt: Date
    public var finishedAt: Date?
    /// A file of this entry's name was already in the folder when it was queued (a state
    /// directory made anew, say): it is adopted instead of downloaded when the server
    /// announces the same size.
    public var adoptsExisting: Bool?

    public init(url: String, source: String, item: Item, enclosure: Enclosure, settings: DownloadSettings, partName: String, queuedAt: Date) {
        self.url = url
        self.source = source
        itemID = item.id
        itemTitle = item.title
        published = item.published
        type = enclosure.type
        enclosureLength = enclosure.length
        directory = settings.directory
        self.partName = partName
        state = .queued
        received = 0
        retryable = false
        attempts = 0
        maxSize = settings.maxSize
        maxRate = settings.maxRate
        keep = settings.keep
        self.queuedAt = queuedAt
    }

    public var partPath: String { (directory as NSString).appendingPathComponent(partName + ".part") }

    /// The host and port downloads are limited by.
    public var hostKey: String { Self.hostKey(of: url) }

    /// The host of `url` as fetches' per-host limits count it (``HTTPText/hostKey(of:)``), or
    /// `url` itself when it has none.
    static func hostKey(of url: String) -> String {
        HTTPText.hostKey(of: url) ?? url
    }

    /// Queued, or stale in-progress: what a transfer process starts.
    var isPending: Bool { state == .queued || state == .downloading }

    /// Queued again when a downloader starts: left `downloading` by a process that died, or
    /// failed for a passing cause (network, stall, 5xx) fewer than ``Downloader/maxAttempts`` times.
    var isTakenUpAtStart: Bool {
        state == .downloading || (state == .failed && retryable && attempts < Downloader.maxAttempts)
    }

    enum CodingKeys: String, CodingKey {
        case url, source, published, type, directory, file, state, size, received, validator, failure, retryable, attempts, keep
        case itemID = "item_id"
        case itemTitle = "item_title"
        case enclosureLength = "enclosure_length"
        case partName = "part_name"
        case suggestedName = "suggested_name"
        case maxSize = "max_size"
        case maxRate = "max_rate"
        case queuedAt = "queued_at"
        case finishedAt = "finished_at"
        case adoptsExisting = "adopts_existing"
    }
}

extension DownloadEntry {
    /// The entry's members under its ``CodingKeys`` names, into an object the caller opened.
    func writeMembers(into json: inout JSONWriter) {
        json.field(CodingKeys.url.rawValue, url)
        json.field(CodingKeys.source.rawValue, source)
        json.field(CodingKeys.itemID.rawValue, itemID)
        json.field(CodingKeys.itemTitle.rawValue, itemTitle)
        json.field(CodingKeys.published.rawValue, published)
        json.field(CodingKeys.type.rawValue, type)
        json.field(CodingKeys.enclosureLength.rawValue, enclosureLength)
        json.field(CodingKeys.directory.rawValue, directory)
        json.field(CodingKeys.partName.rawValue, partName)
        json.field(CodingKeys.suggestedName.rawValue, suggestedName)
        json.field(CodingKeys.file.rawValue, file)
        json.field(CodingKeys.state.rawValue, state.rawValue)
        json.field(CodingKeys.size.rawValue, size)
        json.field(CodingKeys.received.rawValue, received)
        json.field(CodingKeys.validator.rawValue, validator)
        json.field(CodingKeys.failure.rawValue, failure)
        json.field(CodingKeys.retryable.rawValue, retryable)
        json.field(CodingKeys.attempts.rawValue, attempts)
        json.field(CodingKeys.maxSize.rawValue, maxSize)
        json.field(CodingKeys.maxRate.rawValue, maxRate)
        json.field(CodingKeys.keep.rawValue, keep)
        json.field(CodingKeys.queuedAt.rawValue, queuedAt)
        json.field(CodingKeys.finishedAt.rawValue, finishedAt)
        json.field(CodingKeys.adoptsExisting.rawValue, adoptsExisting)
    }
}
