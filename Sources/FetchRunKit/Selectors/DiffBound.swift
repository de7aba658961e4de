/// The one bound on a watched selection's diff, wherever it is kept (the item, the history, a
/// feed entry): 64 KiB. A longer diff keeps its first lines that fit and ends with a line that
/// says so, so that whoever reads it knows it goes on.
package enum DiffBound {
    package static let maximumBytes = 64 * 1024

    /// The start of every line that marks a cut diff.
    package static let cutLinePrefix = "… diff cut:"

    /// `diff` as it is when it fits; else its first whole lines and a last line naming the size.
    package static func fitted(_ diff: String) -> String {
        let size = diff.utf8.count
        guard size > maximumBytes else { return diff }
        let cutLine = "\(cutLinePrefix) \(size / 1024) KiB, the first \(maximumBytes / 1024) KiB kept"
        let room = maximumBytes - cutLine.utf8.count - 1
        var kept: [Substring] = []
        var used = 0
        for line in diff.split(separator: "\n", omittingEmptySubsequences: false) {
            let cost = line.utf8.count + 1
            guard used + cost <= room else {
                // A first line longer than the room is kept in part, cut between characters.
                if kept.isEmpty { kept.append(Substring(ItemLimits.truncate(String(line), toBytes: room - 1))) }
                break
            }
            kept.append(line)
            used += cost
        }
        return kept.joined(separator: "\n") + "\n" + cutLine
    }

    /// The note for a diff ``fitted(_:)`` cut, from its last line; `nil` for a whole one.
    package static func note(of diff: String) -> String? {
        guard let last = diff.split(separator: "\n").last, last.hasPrefix(cutLinePrefix) else { return nil }
        return String(last.dropFirst(2))
    }
}
