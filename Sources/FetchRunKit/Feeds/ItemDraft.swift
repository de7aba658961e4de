import Foundation

/// A text-valued element the feed walker collects until it closes.
enum FeedField {
    case title, link, id, summary, content, published, updated, author, category, comments
    case duration, feedTitle, feedLink
    case dcDate, dcCreator, dcSubject, dcIdentifier, itunesAuthor, itunesSummary, mediaDescription
}

/// What a feed said about one item, before it is settled into an ``Item``: several elements
/// can fill the same field (RSS `pubDate` or `dc:date`), and the better one wins at the end.
struct ItemDraft {
    var title: String?
    var link: String?
    var alternateLink: String?
    var otherLink: String?
    var guid: String?
    var guidIsPermaLink = true
    var rdfAbout: String?
    var dcIdentifier: String?
    var summary: String?
    var content: String?
    var fallbackSummary: String?
    var published: String?
    var updated: String?
    var author: String?
    var fallbackAuthor: String?
    var categories: [String] = []
    var enclosures: [Enclosure] = []
    var extra: [String: String] = [:]

    mutating func set(_ field: FeedField, _ raw: String) {
        let value = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !value.isEmpty else { return }
        switch field {
        case .title: title = title ?? value
        case .link: link = link ?? value
        case .id: guid = guid ?? value
        case .summary: summary = summary ?? value
        case .content: content = content ?? value
        case .mediaDescription, .itunesSummary: fallbackSummary = fallbackSummary ?? value
        case .published: published = published ?? value
        case .dcDate: published = published ?? value
        case .updated: updated = updated ?? value
        case .author, .dcCreator: author = author ?? value
        case .itunesAuthor: fallbackAuthor = fallbackAuthor ?? value
        case .category, .dcSubject: categories.append(value)
        case .dcIdentifier: dcIdentifier = dcIdentifier ?? value
        case .comments: extra["comments"] = value
        case .duration: extra["duration"] = value
        case .feedTitle, .feedLink: break
        }
    }

    /// The settled item. Fields that cannot be read (an impossible date) are dropped with a warning.
    func item(baseURL: String?, warnings: inout [String]) -> Item {
        let cleanTitle = title.map(Self.clean)
        var publishedDate: Date?
        if let published {
            publishedDate = DateParser.parse(published)
            if publishedDate == nil { warnings.append("'\(cleanTitle ?? "item")': unreadable date '\(published)' dropped") }
        }
        var updatedDate: Date?
        if let updated {
            updatedDate = DateParser.parse(updated)
            if updatedDate == nil { warnings.append("'\(cleanTitle ?? "item")': unreadable date '\(updated)' dropped") }
        }
        // A guid with isPermaLink (the default) is the item's link when it has no other.
        let permalink = guidIsPermaLink ? guid.flatMap { $0.contains("://") ? $0 : nil } : nil
        let resolvedLink = (alternateLink ?? link ?? otherLink ?? permalink).map { Self.resolve($0, against: baseURL) }
        let text = summary ?? content ?? fallbackSummary
        let finalTitle = cleanTitle ?? text.map { String(Self.clean(Self.stripTags($0)).prefix(80)) } ?? "(untitled)"
        let id = guid ?? rdfAbout ?? dcIdentifier ?? resolvedLink ?? Item.fallbackID(title: finalTitle, published: publishedDate ?? updatedDate)
        var extra = extra
        if !categories.isEmpty { extra["categories"] = categories.joined(separator: ", ") }
        return Item(
            id: id, title: finalTitle, link: resolvedLink, published: publishedDate, updated: updatedDate,
            summary: text, author: (author ?? fallbackAuthor).map(Self.clean),
            enclosures: enclosures.map { Enclosure(url: Self.resolve($0.url, against: baseURL), type: $0.type, length: $0.length) },
            extra: extra
        )
    }

    /// Titles and names: HTML references decoded, runs of whitespace made one space.
    static func clean(_ text: String) -> String {
        HTMLEntities.decode(text).split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    static func stripTags(_ html: String) -> String {
        var result = ""
        var inTag = false
        for character in html {
            if character == "<" { inTag = true } else if character == ">" { inTag = false } else if !inTag { result.append(character) }
        }
        return result
    }

    static func resolve(_ link: String, against base: String?) -> String {
        guard let base, !link.contains("://"), let url = URL(string: link, relativeTo: URL(string: base)) else { return link }
        return url.absoluteString
    }
}
