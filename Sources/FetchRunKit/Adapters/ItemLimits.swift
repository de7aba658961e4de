import Foundation

/// The most any source may put into one item, and into one fetch, whatever adapter it uses.
///
/// A feed or a plugin is outside fetchrun's control: a 50 MB title would otherwise be stored
/// in the snapshot, printed and sent along. The runner applies these to every adapter's items
/// before comparing them with the snapshot. Text longer than its cap is cut at a character
/// boundary and ends in `…`; an id longer than its cap keeps its start and gets a hash of the
/// whole, so that two long ids that share a beginning stay two ids. Sizes are UTF-8 bytes.
package struct ItemLimits: Sendable, Equatable {
    package var id = 2_048
    package var title = 1_024
    package var link = 8_192
    package var summary = 65_536
    package var author = 512
    /// Each `extra` value; keys are cut at ``extraKey`` bytes and at most ``extraFields`` are kept.
    package var extraValue = 4_096
    package var extraKey = 64
    package var extraFields = 32
    /// The ``Item/diff`` of a watched selection, kept in `extra` with a cap of its own.
    package var diff = 65_536
    /// Enclosures per item, and each enclosure's URL (``link``) and type (``enclosureType``).
    package var enclosures = 32
    package var enclosureType = 256
    /// Tags per item, and each tag's size.
    package var tags = 64
    package var tag = 256
    /// Items per fetch; later ones (in the order the source gave them) are dropped.
    package var itemsPerFetch = 10_000

    package init() {}

    package static let standard = ItemLimits()

    /// The items within the limits, and one note saying what was cut (`nil` when nothing was).
    package func apply(to items: [Item]) -> (items: [Item], note: String?) {
        var cut: [String: Int] = [:]
        var bounded = items.count > itemsPerFetch ? Array(items.prefix(itemsPerFetch)) : items
        for index in bounded.indices where !fits(bounded[index]) {
            bounded[index] = bound(bounded[index], cut: &cut)
        }
        var parts: [String] = []
        if items.count > itemsPerFetch { parts.append("\(items.count - itemsPerFetch) items past the first \(itemsPerFetch) dropped") }
        for field in cut.keys.sorted() {
            parts.append("\(cut[field]!) \(field)\(cut[field]! == 1 ? "" : "s") cut to size")
        }
        return (bounded, parts.isEmpty ? nil : "oversize input: " + parts.joined(separator: ", ") + " (limits in README, Safety)")
    }

    /// The quick check that almost every item passes: nothing to copy.
    private func fits(_ item: Item) -> Bool {
        item.id.utf8.count <= id && item.title.utf8.count <= title && (item.link?.utf8.count ?? 0) <= link
            && (item.summary?.utf8.count ?? 0) <= summary && (item.author?.utf8.count ?? 0) <= author
            && item.enclosures.count <= enclosures
            && item.enclosures.allSatisfy { $0.url.utf8.count <= link && ($0.type?.utf8.count ?? 0) <= enclosureType }
            && item.extra.count <= extraFields
            && item.extra.allSatisfy { $0.key.utf8.count <= extraKey && $0.value.utf8.count <= extraLimit(for: $0.key) }
            && item.tags.count <= tags && item.tags.allSatisfy { $0.utf8.count <= tag }
    }

    private func bound(_ item: Item, cut: inout [String: Int]) -> Item {
        func capped(_ text: String, _ limit: Int, _ field: String) -> String {
            if text.utf8.count > limit { cut[field, default: 0] += 1 }
            return Self.fitted(text, toBytes: limit)
        }
        var item = item
        if item.id.utf8.count > id {
            cut["id", default: 0] += 1
            item.id = boundedID(item.id)
        }
        item.title = capped(item.title, title, "title")
        item.link = item.link.map { capped($0, link, "link") }
        item.summary = item.summary.map { capped($0, summary, "summary") }
        item.author = item.author.map { capped($0, author, "author") }
        if item.enclosures.count > enclosures {
            cut["enclosure list", default: 0] += 1
            item.enclosures = Array(item.enclosures.prefix(enclosures))
        }
        item.enclosures = item.enclosures.map { enclosure in
            var enclosure = enclosure
            enclosure.url = capped(enclosure.url, link, "enclosure URL")
            enclosure.type = enclosure.type.map { capped($0, enclosureType, "enclosure type") }
            return enclosure
        }
        if item.extra.count > extraFields || item.extra.contains(where: { $0.key.utf8.count > extraKey || $0.value.utf8.count > extraLimit(for: $0.key) }) {
            var extra: [String: String] = [:]
            if item.extra.count > extraFields { cut["extra list", default: 0] += 1 }
            for key in item.extra.keys.sorted().prefix(extraFields) {
                extra[capped(key, extraKey, "extra key")] = capped(item.extra[key]!, extraLimit(for: key), key == Item.diffKey ? "diff" : "extra value")
            }
            item.extra = extra
        }
        if item.tags.count > tags {
            cut["tag list", default: 0] += 1
            item.tags = Array(item.tags.prefix(tags))
        }
        item.tags = item.tags.map { capped($0, tag, "tag") }
        return item
    }

    private func extraLimit(for key: String) -> Int {
        key == Item.diffKey ? diff : extraValue
    }

    /// `text` as it is when it fits in `limit` UTF-8 bytes, else ``truncate(_:toBytes:marker:)``d,
    /// ending in "…".
    static func fitted(_ text: String, toBytes limit: Int) -> String {
        text.utf8.count > limit ? truncate(text, toBytes: limit) : text
    }

    /// The longest start of `text` that, with `marker`, fits in `limit` UTF-8 bytes, cut
    /// between two characters (never inside one, never between a letter and its accent).
    static func truncate(_ text: String, toBytes limit: Int, marker: String = "…") -> String {
        let budget = max(0, limit - marker.utf8.count)
        var used = 0
        var end = text.startIndex
        for character in text {
            let size = character.utf8.count
            guard used + size <= budget else { break }
            used += size
            end = text.index(after: end)
        }
        return String(text[..<end]) + marker
    }

    /// The id itself when it fits the id limit; else its start, cut to leave room for `#` and a
    /// hash of the whole id, so two long ids that share a start stay apart.
    package func boundedID(_ text: String) -> String {
        guard text.utf8.count > id else { return text }
        return Self.truncate(text, toBytes: id - 18, marker: "") + "#" + Self.hash(text)
    }

    /// 16 hex digits of ``Item/fnv1a(_:)`` over the whole text.
    static func hash(_ text: String) -> String {
        let digits = String(Item.fnv1a(text), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// How much text the items made from one document (a page, a JSON body) may hold in all: four
/// times the document's size, at least 1 MiB. Entries that do not nest take each of their four
/// texts (id, title, link, summary) from their own part of the document, or repeat one of the
/// others, so they stay within it. But entries may nest, and a field's path or selector can
/// reach past an entry's own part (a page's `summary: p`), so nested entries can
/// each take the same large value: without a bound, a document of a few megabytes made 10,000
/// items of a 64 KiB summary each. Entries are taken in document order until the next would pass
/// the bound.
package struct ItemTextBudget: Sendable {
    package let limit: Int
    private var used = 0

    package init(documentBytes: Int) {
        let (fourTimes, overflow) = documentBytes.multipliedReportingOverflow(by: 4)
        limit = max(1 << 20, overflow ? .max : fourTimes)
    }

    /// Counts `item`'s text; `false` when it would pass the bound (the item is then left out,
    /// and so are those after it).
    package mutating func admits(_ item: Item) -> Bool {
        used += item.id.utf8.count + item.title.utf8.count + (item.link?.utf8.count ?? 0) + (item.summary?.utf8.count ?? 0)
        return used <= limit
    }

    /// What the report says when `count` entries were left out.
    package func note(leftOut count: Int) -> String {
        "\(count) entr\(count == 1 ? "y" : "ies") left out past \(limit / 1024) KiB of item text (four times the document's size, at least 1 MiB)"
    }
}
