import Foundation

/// What fetchrun remembers about one source between runs: the file
/// `<state_dir>/snapshots/<name>.json`.
public struct Snapshot: Sendable, Hashable, Codable {
    /// The file format's version; a newer one is refused rather than misread.
    public static let currentVersion = 1

    public var version: Int
    public var source: String
    public var type: String
    public var updatedAt: Date
    /// Newest first, at most the source's `keep`.
    public var items: [Item]
    public var validators: HTTPValidators?
    public var adapterState: JSONValue?
    /// The source's own title (a feed's `<title>`), when it gave one.
    public var title: String?
    /// The ids the source has seen beyond ``items``; `nil` in a snapshot written before
    /// fetchrun kept them. Not part of the `Codable` form: the snapshot file's own coding
    /// (``jsonData()``) keeps it.
    package var seen: SeenItems? = nil

    public init(
        source: String, type: String, updatedAt: Date, items: [Item],
        validators: HTTPValidators? = nil, adapterState: JSONValue? = nil, title: String? = nil
    ) {
        self.title = title
        self.version = Self.currentVersion
        self.source = source
        self.type = type
        self.updatedAt = updatedAt
        self.items = items
        self.validators = validators
        self.adapterState = adapterState
    }

    enum CodingKeys: String, CodingKey {
        case version, source, type, items, validators, title
        case updatedAt = "updated_at"
        case adapterState = "adapter_state"
    }
}

/// The HTTP validators of the last good response, sent back exactly as received.
public struct HTTPValidators: Sendable, Hashable, Codable {
    public var etag: String?
    public var lastModified: String?

    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    enum CodingKeys: String, CodingKey {
        case etag
        case lastModified = "last_modified"
    }
}
