import Foundation

/// Turns a watched selection (a JSON value, a part of a page) into the source's item: a new
/// item, with a unified diff, each time the selection's text really changes.
///
/// What counts as a change is decided on normalised lines, never on the raw text: every run of
/// whitespace (any Unicode space, `&nbsp;` included) becomes one space, lines are trimmed,
/// `ignore:` patterns (and presets) cut what they match — a line left empty is dropped — and
/// `sort: true` orders the lines. So whitespace, a counter or a reordered list never makes a
/// change on its own.
///
/// The text last seen travels in the snapshot's adapter state, with a change counter that names
/// the items `change-1`, `change-2`…: a value that changes back to what it was before is still
/// a change.
package struct ChangeTracker: Sendable, Hashable {
    /// The longest text compared and kept, in UTF-8 bytes: it is stored with every snapshot.
    package static let maximumTextBytes = 1 << 20
    /// How much text an adapter renders for the tracker (a page's selection, a JSON value's
    /// indented lines): twice what is compared, since normalising only shortens it, so that
    /// the tracker still sees the text pass its limit and says so.
    package static let maximumRenderedBytes = 2 * maximumTextBytes
    /// The most characters of a line an item's title quotes.
    static let maximumTitleLength = 200

    /// Regular expressions (and presets) whose matches are left out of the comparison.
    package var ignore: [UserPattern] = []
    package var sorted = false
    /// `report: added`: a change that only removes lines is recorded, not reported.
    package var reportsOnlyAdditions = false
    /// Keep each line's leading spaces: for text fetchrun laid out itself (pretty-printed
    /// JSON), where indentation is structure, not noise.
    package var keepsIndentation = false

    package init(ignore: [UserPattern] = [], sorted: Bool = false, reportsOnlyAdditions: Bool = false) {
        self.ignore = ignore
        self.sorted = sorted
        self.reportsOnlyAdditions = reportsOnlyAdditions
    }

    /// Checks an `ignore:` entry: a preset's name, or a regular expression ICU can compile.
    /// - Returns: the pattern to keep; throws the reason it cannot be used.
    package static func ignorePattern(_ text: String) throws -> UserPattern {
        try UserPattern.ignoring(text)
    }

    /// The lines a text is compared as. Each pattern is applied line by line, so `^` and `$`
    /// are a line's start and end.
    /// - Throws: ``UserPattern/Stopped`` when a pattern is still matching as `budget` runs out.
    package func normalizedLines(of text: String, budget: UserPattern.MatchBudget = .unbounded) throws(UserPattern.Stopped) -> [String] {
        var lines: [String] = []
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let indent = keepsIndentation ? String(repeating: " ", count: rawLine.prefix { $0 == " " }.count) : ""
            var line = Self.collapsingSpaces(rawLine)
            for pattern in ignore where !line.isEmpty {
                line = Self.collapsingSpaces(Substring(try pattern.removingMatches(from: line, budget: budget)))
            }
            if !line.isEmpty { lines.append(indent + line) }
        }
        if sorted { lines.sort() }
        return lines
    }

    /// One space for every run of whitespace, none at either end.
    static func collapsingSpaces(_ line: Substring) -> String {
        var collapsed = CollapsedLine()
        collapsed.append(line)
        return collapsed.text
    }

    /// ``collapsingSpaces(_:)`` done as the text arrives, piece by piece, so that its length
    /// is known at every step (a renderer stops at a budget).
    struct CollapsedLine {
        private(set) var text = ""
        /// Whitespace seen after some text: a space, if more text follows.
        private var pendingSpace = false

        mutating func append(_ piece: some StringProtocol) {
            for scalar in piece.unicodeScalars {
                // Zero-width spaces and the byte-order mark are not `isWhitespace` but are
                // spaces to a reader.
                if scalar.properties.isWhitespace || scalar.value == 0x200B || scalar.value == 0xFEFF {
                    pendingSpace = !text.isEmpty
                    continue
                }
                if pendingSpace { text.unicodeScalars.append(" ") }
                pendingSpace = false
                text.unicodeScalars.append(scalar)
            }
        }
    }

    /// What one fetch's selection makes of the source's item.
    package struct Observation: Sendable {
        /// The source's current item (the previous one when nothing changed); `nil` for an
        /// empty selection seen for the first time.
        package var item: Item?
        package var state: JSONValue
        /// A note for the report (the text was cut at its limit).
        package var note: String?
    }

    /// Compares `text` with what `previousState` recorded and says what the source holds now.
    /// - Parameters:
    ///   - previousItems: the snapshot's items, where the unchanged item is found again.
    ///   - link: the item's link (the source's URL as written).
    ///   - budget: when the `ignore:` patterns must stop (the source's deadline).
    /// - Throws: ``UserPattern/Stopped`` when a pattern is still matching as `budget` runs out.
    package func observe(_ text: String, previousState: JSONValue?, previousItems: [Item], link: String?, at now: Date, budget: UserPattern.MatchBudget = .unbounded) throws(UserPattern.Stopped) -> Observation {
        var lines = try normalizedLines(of: text, budget: budget)
        var note: String?
        var bytes = 0
        if let cut = lines.firstIndex(where: { bytes += $0.utf8.count + 1; return bytes > Self.maximumTextBytes }) {
            // The line that crosses the limit is kept up to it (a selection can be one long
            // line: a paragraph, a <pre>, a JSON string), so changes within the first MiB show.
            let room = Self.maximumTextBytes - (bytes - lines[cut].utf8.count - 1)
            let kept = Self.prefix(of: lines[cut], bytes: room)
            lines.removeSubrange((cut + 1)...)
            note = "the selection is longer than \(Self.maximumTextBytes / 1024) KiB; only its first \(Self.maximumTextBytes / 1024) KiB are compared (cut inside line \(cut + 1))"
            if kept.isEmpty { lines.removeLast() } else { lines[cut] = kept }
        }
        let state = ChangeState(previousState)
        let joined = lines.joined(separator: "\n")
        guard let previousText = state.text else {
            let item = makeItem(number: 1, lines: lines, title: lines.first ?? "(empty)", diff: nil, link: link, at: now)
            return Observation(item: item, state: ChangeState(text: joined, change: 1).json, note: note)
        }
        let known = previousItems.first { $0.id == Self.id(state.change) }
        if previousText == joined {
            return Observation(item: known, state: state.json, note: note)
        }
        let previousLines = previousText.isEmpty ? [] : previousText.components(separatedBy: "\n")
        let operations = TextDiff.operations(from: previousLines, to: lines)
        let added = operations.compactMap { if case .added(let line) = $0 { line } else { nil } }
        let removed = operations.compactMap { if case .removed(let line) = $0 { line } else { nil } }
        if reportsOnlyAdditions, added.isEmpty {
            // Recorded, so the next addition is compared with what is there now; not reported.
            return Observation(item: known, state: ChangeState(text: joined, change: state.change).json, note: note)
        }
        let diff = TextDiff.unified(from: previousLines, to: lines)
        // The first added line names the change best (a new price, a new status); as a title it
        // loses its indentation and a JSON line's trailing comma.
        let first = (added.first ?? removed.first)?.trimmingCharacters(in: .whitespaces)
        let line = first.map { $0.hasSuffix(",") ? String($0.dropLast()) : $0 }
        let title = added.isEmpty ? line.map { "removed: " + $0 } ?? "changed" : line ?? "changed"
        let item = makeItem(number: state.change + 1, lines: lines, title: title, diff: diff, link: link, at: now)
        return Observation(item: item, state: ChangeState(text: joined, change: state.change + 1).json, note: note)
    }

    static func id(_ change: Int) -> String { "change-\(change)" }

    /// The longest start of `line` within `bytes` UTF-8 bytes that ends between characters.
    static func prefix(of line: String, bytes: Int) -> String {
        guard bytes > 0 else { return "" }
        guard line.utf8.count > bytes else { return line }
        let utf8 = line.utf8
        var end = utf8.index(utf8.startIndex, offsetBy: bytes)
        // Back to the start of a scalar, then to the start of its grapheme cluster.
        while end > utf8.startIndex, utf8[end] & 0xC0 == 0x80 { end = utf8.index(before: end) }
        let scalars = line.unicodeScalars.distance(from: line.unicodeScalars.startIndex, to: end)
        return String(line[..<TerminalText.prefixEnd(of: line[...], scalars: scalars)])
    }

    private func makeItem(number: Int, lines: [String], title: String, diff: String?, link: String?, at now: Date) -> Item {
        // Cut here, where it is known to be no input's fault, rather than noted as oversize.
        let limits = ItemLimits.standard
        func capped(_ text: String, _ limit: Int) -> String { ItemLimits.fitted(text, toBytes: limit) }
        var item = Item(
            id: Self.id(number), title: capped(String(title.prefix(Self.maximumTitleLength)), limits.title), link: link,
            published: now, summary: capped(lines.joined(separator: "\n"), limits.summary)
        )
        if let diff { item.diff = DiffBound.fitted(diff) }
        return item
    }
}

/// An adapter that may watch one selection (a `page` with `css:`, a `json` with `select:`)
/// rather than list items: `fetchrun test-source` then shows the selection's text.
package protocol SelectionWatching {
    var watchesOneSelection: Bool { get }
}

/// The adapter state of a watched selection: its normalised text, and how many changes it has
/// had. Anything else read from the state folder (which is hostile like any input) is "nothing
/// seen yet".
private struct ChangeState {
    var text: String?
    var change = 0

    init(text: String, change: Int) {
        self.text = text
        self.change = change
    }

    init(_ json: JSONValue?) {
        guard case .object(let members)? = json, case .string(let text)? = members["text"],
              case .number(let exact)? = members["change"], case let change = exact.value, change >= 1, change < 1e15, change == change.rounded()
        else { return }
        self.text = text
        self.change = Int(change)
    }

    var json: JSONValue {
        .object(["text": .string(text ?? ""), "change": .number(Double(change))])
    }
}
