/// The watcher's sources ordered by their next fetch: a binary min-heap, so that a watch of
/// 100,000 sources keeps one small entry per waiting source rather than a sleeping task each.
///
/// Sources due at the same instant come out in the order they went in. Entries are never
/// removed from the middle: a source that is removed or changed leaves its entry behind, and
/// the watcher recognises it as stale by its `generation` when it comes out.
struct DueQueue<Instant: Comparable> {
    struct Entry {
        var due: Instant
        var name: String
        var generation: Int
        fileprivate var order: Int
    }

    private var heap: [Entry] = []
    private var nextOrder = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    /// The entry that is due first, if any.
    var first: Entry? { heap.first }

    mutating func insert(_ name: String, due: Instant, generation: Int) {
        heap.append(Entry(due: due, name: name, generation: generation, order: nextOrder))
        nextOrder &+= 1
        siftUp(heap.count - 1)
    }

    /// Removes and returns the entry that is due first.
    @discardableResult
    mutating func removeFirst() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
        return first
    }

    /// Drops stale entries at the front, so that ``first`` is one the caller still wants.
    mutating func removeFirst(while isStale: (Entry) -> Bool) {
        while let first = heap.first, isStale(first) { removeFirst() }
    }

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        heap[a].due < heap[b].due || (!(heap[b].due < heap[a].due) && heap[a].order < heap[b].order)
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count, precedes(left, first) { first = left }
            if right < heap.count, precedes(right, first) { first = right }
            guard first != parent else { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }
}
