/// How a fetch's items meet the previous snapshot: what is new, and what the next snapshot holds.
package struct SnapshotMerge: Sendable, Equatable {
    /// Items whose id the previous snapshot lacks, in the order the adapter gave them.
    package var newItems: [Item]
    /// Items the previous snapshot has under the same id but with another title or link: a
    /// corrected headline, a moved article. In the order the adapter gave them.
    package var updatedItems: [Item]
    /// The next snapshot's items: the fetched ones (their current versions) first, then the
    /// previously known ones the fetch did not return, cut to `keep`.
    package var items: [Item]

    /// Merges `fetched` into `previous`. Duplicate ids within `fetched` keep their first item.
    package init(previous: [Item], fetched: [Item], keep: Int) {
        var seen = Set<String>()
        let fetchedUnique = fetched.filter { seen.insert($0.id).inserted }
        let previousByID = Dictionary(previous.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        newItems = fetchedUnique.filter { previousByID[$0.id] == nil }
        updatedItems = fetchedUnique.filter { item in
            guard let known = previousByID[item.id] else { return false }
            return known.title != item.title || known.link != item.link
        }
        let carried = previous.filter { !seen.contains($0.id) }
        items = Array((fetchedUnique + carried).prefix(keep))
    }
}

/// What one fetch's output makes of a source's items — capped, merged into what the snapshot
/// held, filtered by the source's `include`/`exclude` — and its title, capped: shared by the
/// one-shot and watch runner (snapshot files) and the PostgreSQL workers.
package struct FetchedItems: Sendable {
    package var merge: SnapshotMerge
    /// The new items that pass the source's filters: what is reported, sent and downloaded.
    package var newItems: [Item]
    /// Said in the report when the adapter returned more than the caps allow.
    package var limitNote: String?
    /// The source's own title, this fetch's (capped) or the snapshot's.
    package var title: String?

    package init(_ output: FetchOutput, previous: Snapshot?, source: SourceConfig) {
        let (fetched, limitNote) = ItemLimits.standard.apply(to: output.items)
        merge = SnapshotMerge(previous: previous?.items ?? [], fetched: fetched, keep: source.settings.keep)
        // Items the filters turn away stay in the snapshot (so they never come back as new)
        // but are news to no one.
        let filter = source.routing.filter
        newItems = filter.isEmpty ? merge.newItems : merge.newItems.filter(filter.passes)
        self.limitNote = limitNote
        let limit = ItemLimits.standard.title
        title = output.title.map { $0.utf8.count > limit ? ItemLimits.truncate($0, toBytes: limit) : $0 } ?? previous?.title
    }
}
