/// How a fetch's items meet the previous snapshot: what is new, and what the next snapshot holds.
package struct SnapshotMerge: Sendable, Equatable {
    /// Items whose id the previous snapshot lacks, in the order the adapter gave them.
    package var newItems: [Item]
    /// The next snapshot's items: the fetched ones (their current versions) first, then the
    /// previously known ones the fetch did not return, cut to `keep`.
    package var items: [Item]

    /// Merges `fetched` into `previous`. Duplicate ids within `fetched` keep their first item.
    package init(previous: [Item], fetched: [Item], keep: Int) {
        var seen = Set<String>()
        let fetchedUnique = fetched.filter { seen.insert($0.id).inserted }
        let previousIDs = Set(previous.map(\.id))
        newItems = fetchedUnique.filter { !previousIDs.contains($0.id) }
        let carried = previous.filter { !seen.contains($0.id) }
        items = Array((fetchedUnique + carried).prefix(keep))
    }
}
