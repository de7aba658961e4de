import Foundation

/// How a fetch's items meet what the source knew: what is new, and what the next snapshot holds.
///
/// An item is new when neither the previous snapshot nor the seen-id set (``SeenItems``) knows
/// its id. A snapshot written before fetchrun kept a seen set has none; for that one fetch, an
/// item the snapshot lacks is new only if it is newer than every item the snapshot holds (by
/// its date), or — undated — if the feed lists it before the first item the snapshot knows.
/// Items past `keep` in a long feed are in neither, and would all come back as new otherwise.
package struct SnapshotMerge: Sendable, Equatable {
    /// Items the source did not know, in the order the adapter gave them.
    package var newItems: [Item]
    /// Items the previous snapshot has under the same id but with another title or link: a
    /// corrected headline, a moved article. In the order the adapter gave them.
    package var updatedItems: [Item]
    /// The next snapshot's items: the fetched ones (their current versions) first, then the
    /// previously known ones the fetch did not return, cut to `keep`.
    package var items: [Item]
    /// The items the source holds now, before `keep` cuts the snapshot: this fetch's and the
    /// known ones it did not return. Never fewer than ``newItems``.
    package var heldCount: Int
    /// The seen-id set after this fetch.
    package var seen: SeenItems

    /// Merges `fetched` into `previous`, whose seen-id set is `seen` (`nil` for a snapshot
    /// from before seen sets, or no snapshot). Duplicate ids within `fetched` keep their first
    /// item (``ItemIdentity/identify(_:)`` has told apart the ones that differ).
    package init(previous: [Item], seen: SeenItems?, fetched: [Item], keep: Int, identity: ItemIdentity = .guid, at now: Date) {
        var ids = Set<String>()
        let fetchedUnique = fetched.filter { ids.insert($0.id).inserted }
        let previousByID = Dictionary(previous.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        // Each id hashed once, for the lookups and the next set.
        let hashes = fetchedUnique.map { Item.fnv1a($0.id) }
        let unknown = zip(fetchedUnique, hashes).filter { item, hash in previousByID[item.id] == nil && seen?.contains(hash: hash) != true }.map(\.0)
        if seen == nil, !previous.isEmpty {
            newItems = Self.newSinceUpgrade(unknown, fetched: fetchedUnique, previous: previous, known: previousByID)
        } else {
            newItems = unknown
        }
        updatedItems = fetchedUnique.filter { item in
            guard let known = previousByID[item.id] else { return false }
            return known.title != item.title || known.link != item.link
        }
        let carried = previous.filter { !ids.contains($0.id) }
        items = Array((fetchedUnique + carried).prefix(keep))
        heldCount = fetchedUnique.count + carried.count
        let before = seen ?? SeenItems(identity: identity, lastFetch: previous.map(\.id))
        self.seen = before.recording(fetchedHashes: Set(hashes), at: now)
    }

    /// The first fetch over a snapshot without a seen set: of the items it does not hold, those
    /// dated after its newest, or undated and listed before the first item it holds.
    private static func newSinceUpgrade(_ unknown: [Item], fetched: [Item], previous: [Item], known: [String: Item]) -> [Item] {
        let newestKnown = previous.compactMap { $0.published ?? $0.updated }.max()
        let firstKnown = fetched.firstIndex { known[$0.id] != nil } ?? fetched.endIndex
        let positions = Dictionary(fetched.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        return unknown.filter { item in
            if let date = item.published ?? item.updated, let newestKnown { return date > newestKnown }
            return (positions[item.id] ?? fetched.endIndex) < firstKnown
        }
    }
}

/// What one fetch's output makes of a source's items — capped, merged into what the snapshot
/// held, filtered by the source's `include`/`exclude` — and its title, capped: shared by the
/// one-shot and watch runner (snapshot files) and the PostgreSQL workers.
package struct FetchedItems: Sendable {
    package var merge: SnapshotMerge
    /// The new items that pass the source's filters (once ``applyFilter(of:until:on:)`` has run):
    /// what is reported, sent and downloaded.
    package var newItems: [Item]
    /// Said in the report when the adapter returned more than the caps allow.
    package var limitNote: String?
    /// The source's own title, this fetch's (capped) or the snapshot's.
    package var title: String?

    package init(_ output: FetchOutput, previous: Snapshot?, source: SourceConfig, at now: Date) {
        let (bounded, limitNote) = ItemLimits.standard.apply(to: output.items)
        let identity = source.settings.identity
        let fetched = identity.identify(bounded)
        merge = SnapshotMerge(previous: previous?.items ?? [], seen: previous?.seen, fetched: fetched, keep: source.settings.keep, identity: identity, at: now)
        newItems = merge.newItems
        self.limitNote = limitNote
        let limit = ItemLimits.standard.title
        title = output.title.map { ItemLimits.fitted($0, toBytes: limit) } ?? previous?.title
    }

    /// Keeps of ``newItems`` those the source's `include`/`exclude` let through. Items the
    /// filters turn away stay in the snapshot (so they never come back as new) but are news to
    /// no one.
    /// - Throws: ``UserPattern/Stopped`` when a rule is still matching at `deadline`.
    package mutating func applyFilter(of source: SourceConfig, until deadline: ContinuousClock.Instant, on clock: any FetchClock) async throws {
        newItems = try await source.routing.filter.passing(newItems, until: deadline, on: clock)
    }
}
