import Foundation

/// The text a chat or phone notification carries: deliveries written in a target's markup,
/// every value from outside escaped for it, and kept within the target's length limit.
///
/// A message is made of blocks (a title line, a summary, a diff, a source line). Each block
/// is escaped as a whole, so a cut never falls inside an escape or a tag; a block that does
/// not fit is cut in its unescaped text and escaped again. With `overflow: truncate` what does
/// not fit is cut with "…"; with `split` the blocks go on in further messages, in order.
package struct NotificationText: Sendable {
    /// How a target reads text.
    package enum Markup: Sendable {
        /// Shown as written (ntfy, Gotify).
        case plain
        /// Slack's mrkdwn: `&`, `<` and `>` are the only characters it asks to escape.
        case slack
        /// Discord's Markdown: its formatting characters escaped with a backslash.
        case discord
        /// HTML (Telegram's `parse_mode: HTML`, Matrix's `formatted_body`).
        case html
    }

    /// What to do with a message past the limit.
    package enum Overflow: String, Sendable, CaseIterable {
        case truncate, split
    }

    package var markup: Markup
    /// The most a message may hold, counted as the target counts (see ``Limit``).
    package var limit: Limit
    package var overflow: Overflow = .truncate

    /// A target's length limit: characters (Unicode scalars, as Discord and Telegram count
    /// them) or UTF-8 bytes (as ntfy counts a message body).
    package enum Limit: Sendable {
        case characters(Int)
        case bytes(Int)
        /// UTF-8 bytes, each line break counted as the `<br>\n` it is sent as (Matrix's
        /// HTML, where a line break alone would show as a space).
        case bytesWithBreaks(Int)
        case none

        package func length(_ text: String) -> Int {
            switch self {
            case .characters: text.unicodeScalars.count
            case .bytes: text.utf8.count
            case .bytesWithBreaks: text.utf8.reduce(0) { $0 + ($1 == 0x0A ? 5 : 1) }
            case .none: 0
            }
        }

        package var maximum: Int {
            switch self {
            case .characters(let count), .bytes(let count), .bytesWithBreaks(let count): count
            case .none: .max
            }
        }
    }

    package init(markup: Markup, limit: Limit, overflow: Overflow = .truncate) {
        self.markup = markup
        self.limit = limit
        self.overflow = overflow
    }

    // MARK: Markup

    /// `text` as the target shows it literally.
    package func escaped(_ text: String) -> String {
        switch markup {
        case .plain:
            return text
        case .slack:
            return Self.replacing(text, [("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")])
        case .html:
            return Self.replacing(text, [("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("\"", "&quot;")])
        case .discord:
            var result = ""
            result.reserveCapacity(text.utf8.count + 8)
            for scalar in text.unicodeScalars {
                if Self.discordSpecial.contains(scalar) { result.append("\\") }
                result.unicodeScalars.append(scalar)
            }
            return result
        }
    }

    /// Discord's Markdown characters: emphasis, code, spoilers, quotes, headings, lists,
    /// masked links, and `<` (which starts mentions, channels and timestamps).
    private static let discordSpecial: Set<Unicode.Scalar> = ["\\", "*", "_", "~", "`", "|", ">", "<", "#", "-", "[", "]", "(", ")", "@"]

    private static func replacing(_ text: String, _ pairs: [(Character, String)]) -> String {
        guard text.contains(where: { character in pairs.contains { $0.0 == character } }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for character in text {
            if let pair = pairs.first(where: { $0.0 == character }) { result += pair.1 } else { result.append(character) }
        }
        return result
    }

    /// A title, bold, linked to `link` when there is one (a link only when it is http(s)).
    func heading(_ title: String, link: String?) -> String {
        let link = link.flatMap { Self.isWebLink($0) ? $0 : nil }
        switch markup {
        case .plain:
            return title + (link.map { "\n" + $0 } ?? "")
        case .slack:
            // Inside <url|text> a `|` or `>` would end the URL or the link.
            guard let link else { return "*\(escaped(title))*" }
            return "*<\(Self.percentEncoding(link, ["|", ">", "<", " "]))|\(escaped(title))>*"
        case .discord:
            guard let link else { return "**\(escaped(title))**" }
            return "**[\(escaped(title))](<\(Self.percentEncoding(link, [">", ")", " "]))>)**"
        case .html:
            guard let link else { return "<b>\(escaped(title))</b>" }
            return "<b><a href=\"\(escaped(link))\">\(escaped(title))</a></b>"
        }
    }

    /// A diff or other preformatted text.
    func preformatted(_ text: String) -> String {
        switch markup {
        case .plain: return text
        case .html: return "<pre>\(escaped(text))</pre>"
        case .slack, .discord:
            // A fence inside would end the block: the backticks become look-alikes.
            let fenced = text.replacingOccurrences(of: "```", with: "ˋˋˋ")
            return "```\n\(markup == .slack ? escaped(fenced) : fenced)\n```"
        }
    }

    func dim(_ text: String) -> String {
        switch markup {
        case .plain: return text
        case .slack, .discord: return "_\(escaped(text))_"
        case .html: return "<i>\(escaped(text))</i>"
        }
    }

    private static func isWebLink(_ link: String) -> Bool {
        let lowered = link.prefix(8).lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    private static func percentEncoding(_ link: String, _ characters: Set<Character>) -> String {
        var result = ""
        for character in link {
            if characters.contains(character) {
                result += character.utf8.map { String(format: "%%%02X", $0) }.joined()
            } else {
                result.append(character)
            }
        }
        return result
    }

    // MARK: Messages

    /// One part of a message: its text in the target's markup, and how to make it again from
    /// a shorter version of its plain text when it must be cut.
    struct Block {
        var plain: String
        var render: @Sendable (String) -> String
        /// The plain text is already in the target's markup (a template's, its placeholders
        /// escaped): a cut must not fall inside an escape.
        var isEscaped = false
        var text: String { render(plain) }
    }

    /// The blocks of one delivery: a template's text (its placeholders escaped), else a
    /// heading per kind of delivery, the summary, the diff and the source.
    func blocks(of delivery: Delivery, template: OutputTemplate?) -> [Block] {
        let fields = delivery.fields
        if let template {
            let escapedFields = fields.mapValues { escaped($0) }
            return [Block(plain: template.render(escapedFields), render: { $0 }, isEscaped: true)]
        }
        let source = fields["source_title"].map { "\(fields["source"] ?? "") · \($0)" } ?? fields["source"] ?? ""
        let this = self
        switch delivery.kind {
        case .item:
            var blocks = [Block(plain: Self.capped(fields["title"] ?? fields["id"] ?? "", 300)) { this.heading($0, link: fields["link"]) }]
            if let summary = fields["summary"].map(Self.readable), !summary.isEmpty {
                blocks.append(Block(plain: summary) { this.escaped($0) })
            }
            if let diff = fields["diff"], !diff.isEmpty {
                blocks.append(Block(plain: diff) { this.preformatted($0) })
            }
            blocks.append(Block(plain: source) { this.dim($0) })
            return blocks
        case .failing:
            let text = "\(fields["source"] ?? "") is failing: \(fields["error"] ?? "") (\(fields["failures"] ?? "?") times in a row since \(fields["failing_since"] ?? "?"))"
            return [Block(plain: text) { "⚠ " + this.escaped($0) }]
        case .recovered:
            let text = "\(fields["source"] ?? "") works again, after \(fields["failures"] ?? "?") failures since \(fields["failing_since"] ?? "?")"
            return [Block(plain: text) { "✓ " + this.escaped($0) }]
        }
    }

    /// The messages for one delivery: one, or with `split` as many as its length needs.
    package func messages(for delivery: Delivery, template: OutputTemplate?) -> [String] {
        fit(blocks(of: delivery, template: template))
    }

    /// One message for several deliveries (`digest: true`): a count, then a line per delivery
    /// (its heading) while they fit, then "and N more"; with `split`, every line, over as many
    /// messages as it takes.
    package func digest(of deliveries: [Delivery], template: OutputTemplate?) -> [String] {
        let this = self
        let items = deliveries.count(where: { $0.kind == .item })
        let header = items == deliveries.count ? "\(items) new item\(items == 1 ? "" : "s")" : "\(deliveries.count) notifications"
        let lines = deliveries.map { delivery -> Block in
            if template != nil || delivery.kind != .item {
                let text = blocks(of: delivery, template: template).map(\.text).joined(separator: " ")
                return Block(plain: text, render: { $0 }, isEscaped: true)
            }
            let fields = delivery.fields
            let title = Self.capped(fields["title"] ?? fields["id"] ?? "", 300)
            return Block(plain: title) { "• " + this.heading($0, link: fields["link"]).replacingOccurrences(of: "\n", with: " ") + " " + this.dim("(\(fields["source"] ?? ""))") }
        }
        let heading = Block(plain: header) { this.heading($0, link: nil) }
        guard overflow == .truncate else { return fit([heading] + lines) }
        // Grown in place, its length counted as it grows: without a limit (Gotify) a digest of
        // a thousand 64 KiB deliveries would otherwise be copied whole for every line.
        var message = heading.text, length = limit.length(message)
        for (index, line) in lines.enumerated() {
            let rest = lines.count - index - 1
            let more = rest > 0 ? limit.length("\n" + escaped("… and \(rest) more")) : 0
            let added = "\n" + line.text
            let grown = length + limit.length(added)
            guard grown + more <= limit.maximum else {
                return [message + "\n" + escaped("… and \(lines.count - index) more")]
            }
            message.append(added)
            length = grown
        }
        return [message]
    }

    /// The blocks joined by blank lines into messages within the limit.
    private func fit(_ blocks: [Block]) -> [String] {
        let separator = "\n\n"
        let maximum = limit.maximum
        var messages: [String] = []
        // Grown in place, its length counted as it grows (see ``digest(of:template:)``).
        var current = "", length = 0
        for block in blocks {
            let text = block.text
            let joinedLength = current.isEmpty ? limit.length(text) : length + limit.length(separator) + limit.length(text)
            if joinedLength <= maximum {
                if !current.isEmpty { current.append(separator) }
                current.append(text)
                length = joinedLength
                continue
            }
            let room = maximum - (current.isEmpty ? 0 : length + limit.length(separator))
            switch overflow {
            case .truncate:
                if let cut = cut(block, toFit: room) { current = current.isEmpty ? cut : current + separator + cut }
                return [current]
            case .split:
                var rest = block.plain
                if room > 16, let (head, tail) = split(block, plain: rest, toFit: room) {
                    current = current.isEmpty ? head : current + separator + head
                    rest = tail
                }
                if !current.isEmpty { messages.append(current) }
                current = ""
                while !rest.isEmpty {
                    var piece = block
                    piece.plain = rest
                    let pieceLength = limit.length(piece.text)
                    if pieceLength <= maximum {
                        current = piece.text
                        length = pieceLength
                        break
                    }
                    guard let (head, tail) = split(block, plain: rest, toFit: maximum) else { break }
                    messages.append(head)
                    rest = tail
                }
            }
        }
        if !current.isEmpty || messages.isEmpty { messages.append(current) }
        guard messages.count > Self.maximumParts else { return messages }
        // A 64 KiB diff is 33 Discord messages: past a handful the rest is said, not sent, so
        // one item cannot run into the service's rate limit (and be sent again from its start).
        let dropped = messages.count - (Self.maximumParts - 1)
        return Array(messages.prefix(Self.maximumParts - 1)) + [escaped("… and \(dropped) more part\(dropped == 1 ? "" : "s") not sent (at most \(Self.maximumParts) messages for one item)")]
    }

    /// The most messages `overflow: split` makes of one delivery (or one digest).
    package static let maximumParts = 10

    /// The block cut in its plain text, with "…", so that its rendering fits `room`.
    private func cut(_ block: Block, toFit room: Int) -> String? {
        guard room > 0 else { return nil }
        var piece = block
        // Shorten by a tenth until it fits, then no more: the rendering's length grows with
        // the text, so the search ends in a few steps even for 64 KiB of diff.
        var keep = min(block.plain.unicodeScalars.count, room)
        while keep > 0 {
            let end = safeEnd(of: block, before: TerminalText.prefixEnd(of: block.plain[...], scalars: keep))
            piece.plain = String(block.plain[..<end]) + "…"
            if limit.length(piece.text) <= room { return piece.text }
            keep = keep * 9 / 10
        }
        return nil
    }

    /// The block's first part that fits `room` (cut at a line break or a space when one is
    /// near), rendered, and the plain text left.
    private func split(_ block: Block, plain: String, toFit room: Int) -> (String, String)? {
        let scalars = plain.unicodeScalars
        var piece = block
        var keep = min(scalars.count, room)
        while keep > 0 {
            var end = safeEnd(of: block, before: TerminalText.prefixEnd(of: plain[...], scalars: keep))
            if end < plain.endIndex {
                let searchFrom = scalars.index(end, offsetBy: -200, limitedBy: scalars.startIndex) ?? scalars.startIndex
                if let breakAt = scalars[searchFrom..<end].lastIndex(where: { $0 == "\n" || $0 == " " }), breakAt > scalars.startIndex {
                    end = breakAt
                }
            }
            guard end > plain.startIndex else {
                keep = keep * 9 / 10
                continue
            }
            piece.plain = String(plain[..<end])
            if limit.length(piece.text) <= room {
                let rest = plain[end...]
                return (piece.text, String(rest.hasPrefix("\n") || rest.hasPrefix(" ") ? rest.dropFirst() : rest))
            }
            keep = keep * 9 / 10
        }
        return nil
    }

    /// Where a cut of an already escaped block (a template's text) may fall at or before `end`:
    /// never inside an HTML entity (`&amp;`) or after the backslash of a Discord escape, which
    /// would leave half an escape at the end of the message.
    private func safeEnd(of block: Block, before end: String.Index) -> String.Index {
        guard block.isEscaped else { return end }
        let text = block.plain
        switch markup {
        case .plain:
            return end
        case .html, .slack:
            // Nor inside a tag: an entity is at most 10 characters (`&#x10FFFF;`), a tag a
            // template writes not many more.
            var index = end, steps = 0
            while index > text.startIndex, steps < 32 {
                index = text.index(before: index)
                steps += 1
                if text[index] == ";" || text[index] == ">" { return end }
                if text[index] == "&" || text[index] == "<" { return index }
            }
            return end
        case .discord:
            var backslashes = 0, index = end
            while index > text.startIndex, text[text.index(before: index)] == "\\" {
                index = text.index(before: index)
                backslashes += 1
            }
            return backslashes % 2 == 1 ? text.index(before: end) : end
        }
    }

    static func capped(_ text: String, _ count: Int) -> String {
        TerminalText.capped(text, to: count)
    }

    /// A summary as a reader sees it: a feed's HTML as its text (tags gone, entities
    /// decoded), runs of whitespace as one space — in a notification it is one paragraph.
    static func readable(_ summary: String) -> String {
        // Without a tag, decoding the entities is all there is to do: no parser needed.
        guard summary.contains("<") else { return ItemDraft.clean(summary) }
        return HTMLDocument.text(ofFragment: summary).split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }
}
