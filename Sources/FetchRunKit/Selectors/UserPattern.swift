import Foundation

/// A regular expression from the config — `ignore:`, `include:`, `exclude:` — or one of the
/// `ignore:` presets, matched so that it cannot outlive its source.
///
/// - Syntax: ICU's (as NSRegularExpression reads it: lookbehind, `(?i)`, `\p{L}`…), with `^`
///   and `$` matching at every line's start and end, since the text compared is lines.
/// - Time: a match reports its progress every few thousand steps of the engine, and stops
///   there once its ``MatchBudget`` is spent (the source's deadline passed, or its fetch was
///   cancelled): a pattern with catastrophic backtracking costs at most its source's deadline
///   of CPU, then fails the source, instead of spinning on a thread for as long as the process
///   runs.
/// - A preset matches whole tokens only: never inside a URL, an e-mail or IP address (its
///   port included), a version such as `1.2.3`, or a longer number.
package struct UserPattern: @unchecked Sendable, Hashable, CustomStringConvertible {
    // NSRegularExpression is immutable once made and documented safe to share across threads.
    /// The pattern as the config writes it (a preset by its name).
    package let description: String
    private let expression: NSRegularExpression
    /// Where a preset's matches may not fall: URLs and addresses, which hold digits, dots and
    /// colons that read like dates, times and numbers.
    private let protected: NSRegularExpression?

    package static func == (a: UserPattern, b: UserPattern) -> Bool {
        a.description == b.description && (a.protected == nil) == (b.protected == nil)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(description)
        hasher.combine(protected == nil)
    }

    /// A regular expression as the config writes it.
    /// - Throws: ``ValueError`` saying why it cannot be compiled.
    package init(_ pattern: String) throws {
        do {
            expression = try NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        } catch {
            throw ValueError("not a regular expression (ICU syntax, such as (?i)swift|linux)")
        }
        description = pattern
        protected = nil
    }

    /// A preset of `ignore:`, or nil for a name that is none.
    package init?(preset name: String) {
        guard let pattern = Self.presets[name] else { return nil }
        // The presets are fixed: a test compiles each.
        expression = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        protected = try! NSRegularExpression(pattern: Self.protectedSpans, options: [.caseInsensitive])
        description = name
    }

    /// An `ignore:` entry: a preset's name, or else a regular expression.
    package static func ignoring(_ entry: String) throws -> UserPattern {
        if let preset = UserPattern(preset: entry) { return preset }
        do {
            return try UserPattern(entry)
        } catch let error as ValueError {
            throw ValueError("\(error.description); presets: \(presetNames.joined(separator: ", "))")
        }
    }

    package static var presetNames: [String] { presets.keys.sorted() }

    // MARK: The presets

    /// Not preceded by a letter, digit or `_`, nor by `.`, `,`, `:`, `/` or `-` after one; not
    /// followed by a letter, digit or `_`, nor by one of those and a digit. So `1:18` in
    /// `127.0.0.1:18777` or `2` in `1.2.3` is not a token of its own.
    private static let tokenStart = #"(?<![\p{L}\p{N}_])(?<![\p{L}\p{N}][.,:/-])"#
    private static let tokenEnd = #"(?![\p{L}\p{N}_])(?![.,:/-]\p{N})"#
    private static let months = "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\\.?"

    static let presets: [String: String] = [
        // ISO dates with an optional time; day.month.year with a four-digit year (or two
        // digits each, 05.03.24); written-out months in either order.
        "dates": tokenStart + #"(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?|\d{1,2}[./]\d{1,2}[./]\d{4}|\d{2}[./]\d{2}[./]\d{2}|\d{1,2}\.? "# + months + #",? \d{4}|"# + months + #" \d{1,2},? \d{4})"# + tokenEnd,
        // A time may follow an ISO date's `T`.
        "times": #"(?:(?<=\dT)|"# + tokenStart + #")\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?[AaPp]\.?[Mm]\.?)?(?:\s?(?:Z|UTC|GMT|[+-]\d{2}:?\d{2}))?"# + tokenEnd,
        // Thousands grouped by `.`, `,` or `'` (1.299,00 · 1,299.00 · 1'299), or digits with
        // one decimal part; a sign before.
        "numbers": #"(?<![\p{L}\p{N}_])(?<![\p{L}\p{N}][.,:/-])[-+]?(?:\d{1,3}(?:([.,'])\d{3})(?:\1\d{3})*(?:[.,]\d+)?|\d+(?:[.,]\d+)?)"# + tokenEnd,
    ]

    /// URLs (with a scheme, or `www.`), e-mail addresses, IPv4 addresses and host names with a
    /// port or path, bracketed IPv6 addresses.
    static let protectedSpans = #"\b[a-z][a-z0-9+.-]*://\S+|\bwww\.\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/\S*)?|\[[0-9a-f:.]+\](?::\d+)?|\b(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)(?:/\S*)?"#

    // MARK: Matching

    /// When a match must stop: its source's deadline (an instant of `clock`), its fetch's
    /// cancellation.
    package struct MatchBudget: Sendable {
        package var deadline: ContinuousClock.Instant?
        package var clock: any FetchClock
        package var cancellation: CancellationFlag?

        package init(deadline: ContinuousClock.Instant? = nil, on clock: any FetchClock = SystemClock(), cancellation: CancellationFlag? = nil) {
            self.deadline = deadline
            self.clock = clock
            self.cancellation = cancellation
        }

        /// No bound but the calling task's cancellation.
        package static let unbounded = MatchBudget()

        var isSpent: Bool {
            if cancellation?.isCancelled == true || Task.isCancelled { return true }
            return deadline.map { clock.now >= $0 } ?? false
        }
    }

    /// Thrown when a match stopped because its budget was spent.
    package struct Stopped: Error, Sendable, CustomStringConvertible {
        package var pattern: String
        package var description: String { "the pattern '\(TerminalText.safe(pattern, maximumLength: 120))' was still matching when the source's deadline passed; stopped" }
    }

    /// The ranges of `text` (UTF-16, of `string`) the pattern matches, in order.
    private func ranges(in string: NSString, budget: MatchBudget) throws(Stopped) -> [NSRange] {
        var ranges: [NSRange] = []
        var stopped = false
        let whole = NSRange(location: 0, length: string.length)
        expression.enumerateMatches(in: string as String, options: [.reportProgress], range: whole) { result, _, stop in
            if budget.isSpent {
                stopped = true
                stop.pointee = true
                return
            }
            if let result, result.range.length > 0 { ranges.append(result.range) }
        }
        if stopped { throw Stopped(pattern: description) }
        guard let protected, !ranges.isEmpty else { return ranges }
        var guarded: [NSRange] = []
        protected.enumerateMatches(in: string as String, options: [], range: whole) { result, _, _ in
            if let result { guarded.append(result.range) }
        }
        return guarded.isEmpty ? ranges : ranges.filter { range in !guarded.contains { NSIntersectionRange($0, range).length > 0 } }
    }

    /// `text` without what the pattern matches.
    /// - Throws: ``Stopped`` once the budget is spent.
    package func removingMatches(from text: String, budget: MatchBudget = .unbounded) throws(Stopped) -> String {
        let string = NSString(string: text)
        let ranges = try ranges(in: string, budget: budget)
        guard !ranges.isEmpty else { return text }
        var result = ""
        var location = 0
        for range in ranges {
            if range.location > location { result += string.substring(with: NSRange(location: location, length: range.location - location)) }
            location = range.location + range.length
        }
        if location < string.length { result += string.substring(from: location) }
        return result
    }

    /// Whether the pattern matches anywhere in `text`.
    /// - Throws: ``Stopped`` once the budget is spent.
    package func matches(_ text: String, budget: MatchBudget = .unbounded) throws(Stopped) -> Bool {
        var found = false
        var stopped = false
        expression.enumerateMatches(in: text, options: [.reportProgress], range: NSRange(location: 0, length: text.utf16.count)) { result, _, stop in
            if budget.isSpent {
                stopped = true
                stop.pointee = true
            } else if result != nil {
                found = true
                stop.pointee = true
            }
        }
        if stopped, !found { throw Stopped(pattern: description) }
        return found
    }
}
