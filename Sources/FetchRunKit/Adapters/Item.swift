import Foundation

/// One thing a source offers: a feed entry, a traffic update, a news story.
///
/// `id` is what new-data detection compares, so it must be stable across fetches: for feeds
/// the guid, else the link, else a hash of title and date (see ``Item/fallbackID(title:published:)``).
public struct Item: Sendable, Hashable, Codable {
    public var id: String
    public var title: String
    public var link: String?
    public var published: Date?
    /// When the source last changed the item, if it says.
    public var updated: Date?
    public var summary: String?
    public var author: String?
    public var enclosures: [Enclosure]
    /// Adapter-specific fields (a road name, a news number).
    public var extra: [String: String]
    /// The item's categories or tags, as the source gives them (RSS `category`, Atom
    /// `category term`, Dublin Core `subject`, JSON Feed `tags`).
    public var tags: [String]

    public init(
        id: String, title: String, link: String? = nil, published: Date? = nil, updated: Date? = nil,
        summary: String? = nil, author: String? = nil,
        enclosures: [Enclosure] = [], extra: [String: String] = [:], tags: [String] = []
    ) {
        self.id = id
        self.title = title
        self.link = link
        self.published = published
        self.updated = updated
        self.summary = summary
        self.author = author
        self.enclosures = enclosures
        self.extra = extra
        self.tags = tags
    }

    enum CodingKeys: String, CodingKey {
        case id, title, link, published, updated, summary, author, enclosures, extra, tags
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        link = try container.decodeIfPresent(String.self, forKey: .link)
        published = try container.decodeIfPresent(Date.self, forKey: .published)
        updated = try container.decodeIfPresent(Date.self, forKey: .updated)
        summary = try container.decodeIfPresent(String.self, forKey: .summary)
        author = try container.decodeIfPresent(String.self, forKey: .author)
        enclosures = try container.decodeIfPresent([Enclosure].self, forKey: .enclosures) ?? []
        extra = try container.decodeIfPresent([String: String].self, forKey: .extra) ?? [:]
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(title, forKey: .title)
        try container.encodeIfPresent(link, forKey: .link)
        try container.encodeIfPresent(published, forKey: .published)
        try container.encodeIfPresent(updated, forKey: .updated)
        try container.encodeIfPresent(summary, forKey: .summary)
        try container.encodeIfPresent(author, forKey: .author)
        if !enclosures.isEmpty { try container.encode(enclosures, forKey: .enclosures) }
        if !extra.isEmpty { try container.encode(extra, forKey: .extra) }
        if !tags.isEmpty { try container.encode(tags, forKey: .tags) }
    }

    /// The item with each enclosure's `file` set from `files` (by URL) where it has one.
    public func withDownloadedFiles(_ files: [String: String]) -> Item {
        var item = self
        for index in item.enclosures.indices {
            if let file = files[item.enclosures[index].url] { item.enclosures[index].file = file }
        }
        return item
    }

    /// An id for items whose source gives neither an id nor a link: a stable hash
    /// (FNV-1a, 64 bit) of the title and the publication date.
    public static func fallbackID(title: String, published: Date?) -> String {
        let key = title + "\u{1F}" + (published.map { String($0.timeIntervalSince1970) } ?? "")
        return "hash:" + String(fnv1a(key), radix: 16)
    }

    /// FNV-1a, 64 bit, over the text's UTF-8 bytes: stable across runs and machines.
    package static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }
}

extension Item {
    /// The ``extra`` key that holds ``diff``.
    public static let diffKey = "diff"

    /// For the item that stands for a watched selection (`select:` of a `json` source): what
    /// changed since the selection was last seen, as a unified diff. `nil` for other items and
    /// for the first sight of a selection.
    public var diff: String? {
        get { extra[Self.diffKey] }
        set { extra[Self.diffKey] = newValue }
    }
}

/// A file attached to an item (a podcast episode, an image).
public struct Enclosure: Sendable, Hashable, Codable {
    public var url: String
    public var type: String?
    public var length: Int64?
    /// Where fetchrun downloaded it, when the source has `download:` and the download is done.
    public var file: String?

    public init(url: String, type: String? = nil, length: Int64? = nil, file: String? = nil) {
        self.url = url
        self.type = type
        self.length = length
        self.file = file
    }
}

extension Array where Element == Item {
    /// Newest first by date (published, else updated); undated items after dated ones, in
    /// their stored order.
    public func newestFirst() -> [Item] {
        enumerated().sorted { lhs, rhs in
            switch (lhs.element.published ?? lhs.element.updated, rhs.element.published ?? rhs.element.updated) {
            case let (l?, r?) where l != r: return l > r
            case (.some, nil): return true
            case (nil, .some): return false
            default: return lhs.offset < rhs.offset
            }
        }.map(\.element)
    }
}
