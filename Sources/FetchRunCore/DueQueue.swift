/// Things ordered by when they are due: a binary min-heap. The watcher keeps its waiting
/// sources in one (a watch of 100,000 sources holds one small entry per source rather than a
/// sleeping task each), and ``DeadlineTimer`` its deadlines.
///
/// Entries due at the same instant come out in the order they went in. Entries are never
/// removed from the middle: one that no longer matters (a removed source, a cancelled sleep)
/// stays behind, and its owner recognises it as stale when it reaches the front.
package struct DueQueue<Instant: Comparable, Element> {
    package struct Entry {
        package var due: Instant
        package var element: Element
        fileprivate var order: Int
    }

    private var heap: [Entry] = []

    package init() {}
    private var nextOrder = 0

    package var isEmpty: Bool { heap.isEmpty }
    package var count: Int { heap.count }

    /// The entry that is due first, if any.
    package var first: Entry? { heap.first }

    package mutating func insert(_ element: Element, due: Instant) {
        heap.append(Entry(due: due, element: element, order: nextOrder))
        nextOrder &+= 1
        siftUp(heap.count - 1)
    }

    /// Removes and returns the entry that is due first.
    @discardableResult
    package mutating func removeFirst() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
        return first
    }

    package mutating func removeAll() {
        heap.removeAll()
    }

    /// Drops stale entries at the front, so that ``first`` is one the caller still wants.
    package mutating func removeFirst(while isStale: (Entry) -> Bool) {
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
