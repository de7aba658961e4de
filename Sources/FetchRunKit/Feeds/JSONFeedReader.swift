import Foundation

/// Reads JSON Feed 1.0 and 1.1 (jsonfeed.org) into the same ``Feed`` the XML formats give.
///
/// The rules are the XML parser's: a field of the wrong type or an unreadable date is dropped
/// with a warning and its item kept; an item that is not an object is dropped; items past
/// ``FeedParseLimits/items`` are dropped; nesting is bounded by ``JSONReader``. Only a
/// document that is not JSON, or not a JSON Feed (no jsonfeed.org `version`, no `items`
/// array), fails.
///
/// Mapping: `id` (a string, or a number as its text), `url` (else `external_url`) as the link,
/// `title`, `summary` (else `content_html`, else `content_text`), `date_published`,
/// `date_modified`, the first of `authors` (1.1) or `author` (1.0) — the item's, else the
/// feed's — `tags`, `image`, and `attachments` as enclosures (`mime_type`,
/// `size_in_bytes`). Relative URLs are resolved against the URL the feed was fetched from.
struct JSONFeedReader {
    var baseURL: String?
    var limits: FeedParseLimits

    /// Whether the document looks like JSON rather than XML: its first byte after a UTF-8
    /// byte-order mark and whitespace is `{`.
    static func looksLikeJSON(_ data: Data) -> Bool {
        var bytes = data.prefix(1024).drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            bytes = bytes.dropFirst(3).drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        }
        return bytes.first == UInt8(ascii: "{")
    }

    func read(_ data: Data, cancellation: CancellationFlag?) throws -> Feed {
        var document = data
        if document.starts(with: [0xEF, 0xBB, 0xBF]) { document = document.dropFirst(3) }
        let value: JSONValue
        do {
            value = try JSONReader.value(of: Data(document))
        } catch {
            throw FeedParseError("not a JSON Feed: \(error.description)")
        }
        guard case .object(let top) = value else { throw FeedParseError("not a JSON Feed: the document is not a JSON object") }
        guard let version = top["version"]?.stringValue, version.contains("jsonfeed.org/version/") else {
            throw FeedParseError("not a JSON Feed: no 'version' naming jsonfeed.org")
        }
        guard case .array(let entries)? = top["items"] else { throw FeedParseError("a JSON Feed without an 'items' array") }

        var warnings = FeedWarnings()
        let base = baseURL ?? Self.text(top["feed_url"])
        let feedAuthor = Self.firstAuthor(in: top)
        var items: [Item] = []
        for (index, entry) in entries.enumerated() {
            if cancellation?.isCancelled == true { throw CancellationError() }
            guard items.count < limits.items else {
                warnings.append("read the first \(limits.items) items; \(entries.count - index) more dropped (the limit of items per document)")
                break
            }
            guard case .object(let fields) = entry else {
                warnings.append("item \(index + 1) is not an object; dropped")
                continue
            }
            items.append(item(from: fields, number: index + 1, feedAuthor: feedAuthor, base: base, warnings: &warnings))
        }
        return Feed(
            format: version.hasSuffix("/1.1") ? .jsonFeed11 : .jsonFeed10,
            title: Self.text(top["title"]).map(ItemDraft.clean),
            link: Self.text(top["home_page_url"]).map { ItemDraft.resolve($0, against: base) },
            items: items, warnings: warnings.lines
        )
    }

    private func item(from fields: [String: JSONValue], number: Int, feedAuthor: String?, base: String?, warnings: inout FeedWarnings) -> Item {
        let draft = ItemDraft()
        func string(_ key: String) -> String? {
            guard let value = fields[key], value != .null else { return nil }
            guard let text = Self.text(value) else {
                warnings.append("item \(number): '\(key)' is not a string; dropped")
                return nil
            }
            return text
        }
        // The id may be a number in feeds written before 1.0 settled on strings.
        if let id = fields["id"], id != .null {
            switch id {
            case .number(let value) where !value.value.isFinite:
                warnings.append("item \(number): 'id' is a number beyond what a double holds; dropped")
            case .string, .number: draft.guid = Self.trimmed(id.scalarText)
            default: warnings.append("item \(number): 'id' is not a string; dropped")
            }
        }
        draft.guidIsPermaLink = false
        draft.link = string("url")
        draft.otherLink = string("external_url")
        draft.title = string("title")
        draft.summary = string("summary")
        draft.content = string("content_html")
        draft.fallbackSummary = string("content_text")
        for (key, field) in [("date_published", FeedField.published), ("date_modified", .updated)] {
            guard let text = string(key) else { continue }
            draft.setDate(field, DateParser.parse(text), text: text)
        }
        draft.author = Self.firstAuthor(in: fields) ?? feedAuthor
        if case .array(let tags)? = fields["tags"] {
            draft.categories = tags.compactMap { Self.text($0) }
        }
        if let image = string("image") { draft.extra["image"] = ItemDraft.resolve(image, against: base) }
        if let attachments = fields["attachments"], attachments != .null {
            guard case .array(let list) = attachments else {
                warnings.append("item \(number): 'attachments' is not an array; dropped")
                return draft.item(baseURL: base, warnings: &warnings)
            }
            for attachment in list {
                guard case .object(let attachment) = attachment, let url = Self.text(attachment["url"]) else {
                    warnings.append("item \(number): an attachment without a 'url'; dropped")
                    continue
                }
                draft.enclosures.append(Enclosure(url: url, type: Self.text(attachment["mime_type"]), length: Self.byteCount(attachment["size_in_bytes"])))
            }
        }
        return draft.item(baseURL: base, warnings: &warnings)
    }

    /// A string member's text, trimmed; `nil` when absent, empty or not a string.
    private static func text(_ value: JSONValue?) -> String? {
        trimmed(value?.stringValue)
    }

    private static func trimmed(_ text: String?) -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        return text
    }

    /// `authors[0].name` (1.1), else `author.name` (1.0).
    private static func firstAuthor(in object: [String: JSONValue]) -> String? {
        if case .array(let authors)? = object["authors"] {
            for author in authors {
                if let name = text(author["name"]) { return name }
            }
        }
        return text(object["author"]?["name"])
    }

    /// A size that is a whole number of bytes and fits 64 bits; anything else is no size.
    private static func byteCount(_ value: JSONValue?) -> Int64? {
        guard case .number(let exact)? = value, case let number = exact.value, number >= 0, number < 9.2e18 else { return nil }
        return Int64(exactly: number.rounded(.down))
    }
}
