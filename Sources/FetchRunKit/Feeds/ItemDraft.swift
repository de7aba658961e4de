import Foundation

/// A text-valued element the feed walker collects until it closes.
enum FeedField {
    case title, link, id, summary, content, published, updated, author, category, comments
    case duration, feedTitle, feedLink
    case dcDate, dcCreator, dcSubject, dcIdentifier, dcTitle, itunesAuthor, itunesSummary, mediaDescription

    var isDate: Bool { self == .published || self == .updated || self == .dcDate }
}

/// What a feed said about one item, before it is settled into an ``Item``: several elements
/// can fill the same field (RSS `pubDate` or `dc:date`), and the better one wins at the end.
///
/// A class, so that filling in a field never copies the draft: it is touched once per element,
/// by one thread, so its fields skip Swift's dynamic exclusivity checks.
final class ItemDraft {
    @exclusivity(unchecked) var title: String?
    /// Dublin Core's `dc:title`, for an item without a title of its own.
    @exclusivity(unchecked) var dcTitle: String?
    @exclusivity(unchecked) var link: String?
    @exclusivity(unchecked) var alternateLink: String?
    @exclusivity(unchecked) var otherLink: String?
    @exclusivity(unchecked) var guid: String?
    @exclusivity(unchecked) var guidIsPermaLink = true
    @exclusivity(unchecked) var rdfAbout: String?
    @exclusivity(unchecked) var dcIdentifier: String?
    @exclusivity(unchecked) var summary: String?
    @exclusivity(unchecked) var content: String?
    @exclusivity(unchecked) var fallbackSummary: String?
    @exclusivity(unchecked) var published: Date?
    @exclusivity(unchecked) var updated: Date?
    /// The first date that could not be read, and how many could not, for the warning that
    /// says they were dropped: an item may hold thousands, and one warning says so.
    @exclusivity(unchecked) var firstUnreadableDate: String?
    @exclusivity(unchecked) var unreadableDates = 0
    @exclusivity(unchecked) var author: String?
    @exclusivity(unchecked) var fallbackAuthor: String?
    @exclusivity(unchecked) var categories: [String] = []
    @exclusivity(unchecked) var enclosures: [Enclosure] = []
    @exclusivity(unchecked) var extra: [String: String] = [:]

    /// Records a field's text, already trimmed and not empty.
    func set(_ field: FeedField, _ value: String) {
        switch field {
        case .title: title = title ?? value
        case .link: link = link ?? value
        case .id: guid = guid ?? value
        case .summary: summary = summary ?? value
        case .content: content = content ?? value
        case .mediaDescription, .itunesSummary: fallbackSummary = fallbackSummary ?? value
        case .published, .dcDate, .updated: break // dates arrive through setDate
        case .author, .dcCreator: author = author ?? value
        case .itunesAuthor: fallbackAuthor = fallbackAuthor ?? value
        case .category, .dcSubject: categories.append(value)
        case .dcIdentifier: dcIdentifier = dcIdentifier ?? value
        case .dcTitle: dcTitle = dcTitle ?? value
        case .comments: extra["comments"] = value
        case .duration: extra["duration"] = value
        case .feedTitle, .feedLink: break
        }
    }

    /// Records a date field; `text` is the unreadable text when `date` is `nil`.
    func setDate(_ field: FeedField, _ date: Date?, text: String?) {
        guard let date else {
            if let text {
                unreadableDates += 1
                if firstUnreadableDate == nil { firstUnreadableDate = text }
            }
            return
        }
        if field == .updated {
            updated = updated ?? date
        } else {
            published = published ?? date
        }
    }

    /// The settled item. Fields that cannot be read (an impossible date) are dropped with a warning.
    func item(baseURL: String?, warnings: inout FeedWarnings) -> Item {
        let cleanTitle = (title ?? dcTitle).map(Self.clean)
        if let first = firstUnreadableDate {
            let more = unreadableDates - 1
            warnings.append("'\(TerminalText.capped(cleanTitle ?? "item", to: 80))': unreadable date '\(TerminalText.capped(first, to: 80))' dropped" + (more > 0 ? " (and \(more) more)" : ""))
        }
        let publishedDate = published, updatedDate = updated
        // A guid with isPermaLink (the default) is the item's link when it has no other.
        let permalink = guidIsPermaLink ? guid.flatMap { Self.isAbsolute($0) ? $0 : nil } : nil
        let resolvedLink = (alternateLink ?? link ?? otherLink ?? permalink).map { Self.resolve($0, against: baseURL) }
        let text = summary ?? content ?? fallbackSummary
        let finalTitle = cleanTitle ?? text.map { String(Self.clean(Self.stripTags($0)).prefix(80)) } ?? "(untitled)"
        let id = guid ?? rdfAbout ?? dcIdentifier ?? resolvedLink ?? Item.fallbackID(title: finalTitle, published: publishedDate ?? updatedDate)
        var tags: [String] = [], seen = Set<String>()
        // A set, not the list: a server's item may carry a hundred thousand categories.
        for category in categories {
            let tag = Self.clean(category)
            if !tag.isEmpty, seen.insert(tag).inserted { tags.append(tag) }
        }
        return Item(
            id: id, title: finalTitle, link: resolvedLink, published: publishedDate, updated: updatedDate,
            summary: text, author: (author ?? fallbackAuthor).map(Self.clean),
            // One past the limit is enough for the limits to say the list was cut.
            enclosures: enclosures.prefix(ItemLimits.standard.enclosures + 1).map { Enclosure(url: Self.resolve($0.url, against: baseURL), type: $0.type, length: $0.length) },
            extra: extra, tags: tags
        )
    }

    /// Titles and names: HTML references decoded, runs of whitespace made one space.
    static func clean(_ text: String) -> String {
        var copy = text
        return copy.withUTF8 { bytes in
            // Most titles have nothing to decode or collapse: find out without building anything.
            var previousWasSpace = true
            var needsWork = false
            for byte in bytes {
                if byte == UInt8(ascii: "&") || byte == 0x0A || byte == 0x0D || byte == 0x09 || byte == 0xC2 || (byte == 0x20 && previousWasSpace) {
                    needsWork = true
                    break
                }
                previousWasSpace = byte == 0x20
            }
            guard needsWork || previousWasSpace else { return text }
            return HTMLEntities.decode(text).split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
        }
    }

    static func stripTags(_ html: String) -> String {
        var result = ""
        var inTag = false
        for character in html {
            if character == "<" { inTag = true } else if character == ">" { inTag = false } else if !inTag { result.append(character) }
        }
        return result
    }

    /// A base past this many UTF-8 bytes (a link's limit) resolves nothing: every relative link
    /// of a document would carry it, and a 1 MB `xml:base` over 2,000 items made 2 GB of links.
    static let maximumBaseBytes = ItemLimits.standard.link

    /// `link` made absolute against `base`; as it is when it is absolute already, when there is
    /// no base, or when the base is longer than ``maximumBaseBytes``.
    static func resolve(_ link: String, against base: String?) -> String {
        guard let base, base.utf8.count <= maximumBaseBytes, !isAbsolute(link),
              let url = URL(string: link, relativeTo: URL(string: base)) else { return link }
        return url.absoluteString
    }

    /// Whether `link` starts with a scheme and `://` — by bytes, since this runs for every
    /// item and Foundation's substring search bridges through NSString.
    static func isAbsolute(_ link: String) -> Bool {
        var sawLetter = false
        var iterator = link.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                sawLetter = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
                guard sawLetter else { return false }
            case UInt8(ascii: ":"):
                return sawLetter && iterator.next() == UInt8(ascii: "/") && iterator.next() == UInt8(ascii: "/")
            default:
                return false
            }
        }
        return false
    }
}
