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
