/// Text from outside — a feed's title, a plugin's message, a server's error, a config key — made
/// safe to print as text.
///
/// A terminal obeys the control characters it is sent: ESC starts sequences that move the
/// cursor, rewrite the screen, set the window title or (OSC 52) the clipboard; C1 characters
/// (U+0080–U+009F) do the same on many terminals; bidirectional overrides make text read other
/// than it is. Each is shown as a visible escape (`\x1B`, `\u009B`, `\u202E`) instead; tabs and
/// line breaks become spaces, since every report line is one line. NDJSON output escapes
/// these in its own way and does not need this.
///
/// Text is also capped: a feed's 50 MB title or a server's page-long error would otherwise be
/// printed whole, burying every other line. Past ``maximumLength`` characters it is cut and
/// ends in "…". NDJSON carries the whole value, since a program reading it asked for the data.
package enum TerminalText {
    /// Characters printed of one field or one message, "…" included.
    package static let maximumLength = 500

    package static func safe(_ text: String, maximumLength: Int = maximumLength) -> String {
        // Cut before cleaning, so the work is bounded by the limit; and after, since an escape
        // prints as several characters.
        let text = capped(text, to: maximumLength)
        guard needsCleaning(text) else { return text }
        return capped(cleaned(text), to: maximumLength)
    }

    private static func cleaned(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x09, 0x0A, 0x0D:
                result.append(" ")
            case 0x00..<0x20, 0x7F:
                result += "\\x" + hex(scalar.value, digits: 2)
            case 0x80..<0xA0, 0x202A...0x202E, 0x2066...0x2069:
                result += "\\u" + hex(scalar.value, digits: 4)
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// `text` cut to `maximumLength` characters, the last one "…", when it is longer.
    ///
    /// Counted in Unicode scalars rather than grapheme clusters: a hostile text can be one
    /// cluster of millions of combining marks, and the cut must cost the limit, not the text.
    /// The cut itself falls between clusters (see ``prefixEnd(of:scalars:)``), so an emoji with
    /// its modifiers or a letter with its accents is kept whole or left out whole.
    package static func capped(_ text: String, to maximumLength: Int) -> String {
        // A text's UTF-8 length bounds its scalar count, and for a native string it is known.
        guard maximumLength > 0, text.utf8.count > maximumLength else { return text }
        let scalars = text.unicodeScalars
        guard let pastLimit = scalars.index(scalars.startIndex, offsetBy: maximumLength, limitedBy: scalars.endIndex),
              pastLimit < scalars.endIndex
        else { return text }
        return String(text[..<prefixEnd(of: text[...], scalars: maximumLength - 1)]) + "…"
    }

    /// How far back a cut looks for the start of a grapheme cluster: a longer cluster (only a
    /// made-up one is) is cut between its scalars.
    static let clusterLookBack = 64

    /// The end of the longest start of `text` with at most `scalars` Unicode scalars that ends
    /// between two grapheme clusters: a cut there never splits a character, an emoji from its
    /// skin-tone modifier or ZWJ sequence, or a letter from its combining marks. Costs at most
    /// `scalars` plus ``clusterLookBack`` steps, whatever the text.
    package static func prefixEnd(of text: Substring, scalars count: Int) -> String.Index {
        let scalars = text.unicodeScalars
        guard count > 0 else { return text.startIndex }
        guard let end = scalars.index(scalars.startIndex, offsetBy: count, limitedBy: scalars.endIndex), end < scalars.endIndex else {
            return text.endIndex
        }
        // The clusters of a window around the cut, the scalars after it included, since whether
        // the cut is a boundary depends on what follows (a modifier, a joiner, a mark).
        let windowStart = scalars.index(end, offsetBy: -clusterLookBack, limitedBy: scalars.startIndex) ?? scalars.startIndex
        let windowEnd = scalars.index(end, offsetBy: 8, limitedBy: scalars.endIndex) ?? scalars.endIndex
        let before = scalars.distance(from: windowStart, to: end)
        let window = String(String.UnicodeScalarView(scalars[windowStart..<windowEnd]))
        var boundary = 0, offset = 0
        for character in window {
            offset += character.unicodeScalars.count
            guard offset <= before else { break }
            boundary = offset
        }
        // No boundary in the window: a cluster longer than it, cut where the count ends.
        if boundary == 0, windowStart != scalars.startIndex { return end }
        return scalars.index(windowStart, offsetBy: boundary)
    }

    /// A byte scan that clean text (nearly all of it) passes without building anything.
    private static func needsCleaning(_ text: String) -> Bool {
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7F { return true }
            // U+0080–U+009F are C2 80–C2 9F; the bidi controls start E2 80 AA–AE or E2 81 A6–A9.
            if previous == 0xC2, byte < 0xA0 { return true }
            if previous == 0x80 || previous == 0x81, byte >= 0xA6, byte <= 0xAE { return true }
            previous = byte
        }
        return false
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
