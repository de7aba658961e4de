/// A line diff in the unified format (`diff -u`, three lines of context), as a watched page or
/// JSON value shows what changed.
///
/// Myers' O(ND) algorithm over the lines left after the common head and tail are set aside.
/// Its work and memory grow with the square of the number of edits, which a hostile source
/// chooses: past ``maximumEdits`` the middle is shown as removed and added whole instead — a
/// correct diff, only not the shortest.
package enum TextDiff {
    /// Beyond this many edits the diff stops searching for the shortest script: at most about
    /// a million integers of trace, a few milliseconds.
    package static let maximumEdits = 1_000

    package enum Operation: Sendable, Hashable {
        case same(String)
        case removed(String)
        case added(String)
    }

    /// The unified diff of two texts given as lines, without the `---`/`+++` header; `nil` when
    /// they are equal.
    package static func unified(from old: [String], to new: [String], context: Int = 3) -> String? {
        let script = operations(from: old, to: new)
        guard script.contains(where: { if case .same = $0 { false } else { true } }) else { return nil }
        return hunks(of: script, context: context).joined(separator: "\n")
    }

    /// The edit script turning `old` into `new`, in order.
    package static func operations(from old: [String], to new: [String]) -> [Operation] {
        var head = 0
        while head < old.count, head < new.count, old[head] == new[head] { head += 1 }
        var tail = 0
        while tail < old.count - head, tail < new.count - head, old[old.count - 1 - tail] == new[new.count - 1 - tail] { tail += 1 }
        let oldMiddle = Array(old[head..<(old.count - tail)])
        let newMiddle = Array(new[head..<(new.count - tail)])
        let middle = shortestScript(from: oldMiddle, to: newMiddle)
            ?? oldMiddle.map(Operation.removed) + newMiddle.map(Operation.added)
        return old[..<head].map(Operation.same) + middle + old[(old.count - tail)...].map(Operation.same)
    }

    /// Myers' greedy forward search, keeping for each edit count the furthest reach of the
    /// diagonals it can touch, then walking back through them. `nil` past ``maximumEdits``.
    private static func shortestScript(from a: [String], to b: [String]) -> [Operation]? {
        let n = a.count, m = b.count
        if n == 0 { return b.map(Operation.added) }
        if m == 0 { return a.map(Operation.removed) }
        let limit = min(n + m, maximumEdits)
        let offset = limit + 1
        var reach = [Int](repeating: 0, count: 2 * limit + 3)
        // trace[d] holds reach[-(d-1)...(d-1)] as it was before step d: all the walk back reads.
        var trace: [[Int]] = []
        for d in 0...limit {
            trace.append(d == 0 ? [] : Array(reach[(offset - d + 1)...(offset + d - 1)]))
            for k in stride(from: -d, through: d, by: 2) {
                var x = (k == -d || (k != d && reach[offset + k - 1] < reach[offset + k + 1])) ? reach[offset + k + 1] : reach[offset + k - 1] + 1
                var y = x - k
                while x < n, y < m, a[x] == b[y] { x += 1; y += 1 }
                reach[offset + k] = x
                if x >= n, y >= m { return walkBack(a, b, trace: trace, edits: d) }
            }
        }
        return nil
    }

    private static func walkBack(_ a: [String], _ b: [String], trace: [[Int]], edits: Int) -> [Operation] {
        var script: [Operation] = []
        var x = a.count, y = b.count
        for d in stride(from: edits, to: 0, by: -1) {
            let before = trace[d]
            func reach(_ k: Int) -> Int { before[k + d - 1] }
            let k = x - y
            let previousK = (k == -d || (k != d && reach(k - 1) < reach(k + 1))) ? k + 1 : k - 1
            let previousX = reach(previousK), previousY = previousX - previousK
            while x > previousX, y > previousY {
                x -= 1; y -= 1
                script.append(.same(a[x]))
            }
            if x == previousX {
                y -= 1
                script.append(.added(b[y]))
            } else {
                x -= 1
                script.append(.removed(a[x]))
            }
        }
        while x > 0, y > 0 {
            x -= 1; y -= 1
            script.append(.same(a[x]))
        }
        return script.reversed()
    }

    /// The script cut into hunks of changes with `context` unchanged lines around each; changes
    /// closer than twice that share a hunk.
    private static func hunks(of script: [Operation], context: Int) -> [String] {
        // Line numbers (0-based) in the old and new text before each operation.
        var oldLine = [Int](), newLine = [Int]()
        var changes: [Int] = []
        var o = 0, n = 0
        for (index, operation) in script.enumerated() {
            oldLine.append(o); newLine.append(n)
            switch operation {
            case .same: o += 1; n += 1
            case .removed: o += 1; changes.append(index)
            case .added: n += 1; changes.append(index)
            }
        }
        var lines: [String] = []
        var first = 0
        while first < changes.count {
            var last = first
            while last + 1 < changes.count, changes[last + 1] - changes[last] <= 2 * context + 1 { last += 1 }
            let start = max(0, changes[first] - context), end = min(script.count, changes[last] + context + 1)
            var oldCount = 0, newCount = 0
            var body: [String] = []
            for operation in script[start..<end] {
                switch operation {
                case .same(let line): body.append(" " + line); oldCount += 1; newCount += 1
                case .removed(let line): body.append("-" + line); oldCount += 1
                case .added(let line): body.append("+" + line); newCount += 1
                }
            }
            lines.append("@@ -\(range(oldLine[start], oldCount)) +\(range(newLine[start], newCount)) @@")
            lines += body
            first = last + 1
        }
        return lines
    }

    /// `start,count` as diff writes it: 1-based, `,1` left out, and an empty range named by the
    /// line before it.
    private static func range(_ start: Int, _ count: Int) -> String {
        switch count {
        case 0: "\(start),0"
        case 1: "\(start + 1)"
        default: "\(start + 1),\(count)"
        }
    }
}

extension TextDiff {
    /// What a line of a unified diff is.
    package enum LineKind: String, Sendable, Hashable {
        case added, removed, context, hunk, header
    }

    /// A line of a unified diff: its kind, and its text without the mark (`+`, `-`, ` `).
    package struct Line: Sendable, Hashable {
        package var kind: LineKind
        package var text: String

        package init(kind: LineKind, text: String) {
            self.kind = kind
            self.text = text
        }
    }

    /// A recorded unified diff read back line by line, for those who show it (the dashboard,
    /// a mail). Only the marks are read; a note the diff carries (a cut diff says so in its
    /// last line) or text without a mark is context, as it is.
    package static func lines(of diff: String) -> [Line] {
        diff.split(separator: "\n", omittingEmptySubsequences: false).dropLast(diff.hasSuffix("\n") ? 1 : 0).map { raw in
            let line = String(raw)
            if line.hasPrefix("+++") || line.hasPrefix("---") { return Line(kind: .header, text: line) }
            if line.hasPrefix("@@") { return Line(kind: .hunk, text: line) }
            if line.hasPrefix("+") { return Line(kind: .added, text: String(line.dropFirst())) }
            if line.hasPrefix("-") { return Line(kind: .removed, text: String(line.dropFirst())) }
            if line.hasPrefix(" ") { return Line(kind: .context, text: String(line.dropFirst())) }
            return Line(kind: .context, text: line)
        }
    }
}
