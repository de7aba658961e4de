/// What identifies a source's items (`identity:` in the config): for feeds whose ids cannot be
/// trusted — the same guid on every item, a guid that changes with the title.
package enum ItemIdentity: String, Sendable, Hashable, CaseIterable {
    /// The id the adapter gave: a feed's guid (or Atom id), else its link, else a hash of the
    /// title and date. The default.
    case guid
    /// The item's link (its id when it has none).
    case link
    /// The item's title (its id when the title is empty).
    case title
    /// A hash of the title, link and summary: any change to them is a new item.
    case content

    /// The items with their ids as this identity makes them, and ids that occur more than once
    /// within the fetch told apart: the later ones get their link added, then their position
    /// in the feed (1-based). Ids longer than the id limit are cut and hashed as the limits cut
    /// an adapter's.
    package func identify(_ items: [Item]) -> [Item] {
        var used = Set<String>()
        used.reserveCapacity(items.count)
        var identified = items
        for (position, item) in items.enumerated() {
            var id = ItemLimits.standard.boundedID(key(of: item))
            if used.contains(id), let link = item.link, !link.isEmpty {
                let withLink = ItemLimits.standard.boundedID(key(of: item) + " " + link)
                if !used.contains(withLink) { id = withLink }
            }
            // A feed may hold an id like "x #2" itself: counted on until one is free.
            var attempt = 0
            while used.contains(id) {
                attempt += 1
                id = ItemLimits.standard.boundedID(key(of: item) + " #\(position + 1)" + (attempt > 1 ? ".\(attempt)" : ""))
            }
            used.insert(id)
            identified[position].id = id
        }
        return identified
    }

    private func key(of item: Item) -> String {
        switch self {
        case .guid: item.id
        case .link: item.link.flatMap { $0.isEmpty ? nil : $0 } ?? item.id
        case .title: item.title.isEmpty ? item.id : item.title
        case .content: "content:" + ItemLimits.hash([item.title, item.link ?? "", item.summary ?? ""].joined(separator: "\u{1F}"))
        }
    }
}
