import Foundation

/// A feed of changes — Atom 1.0 or JSON Feed 1.1 — from history records, newest first: one
/// entry per change, each with an id of its own (feed readers ignore an entry they have seen,
/// even when it is updated, so a change is never an update of an earlier entry).
///
/// Everything that came from a source is escaped for where it goes: XML text, an HTML entry's
/// content (escaped once as HTML, then again as the XML or JSON that carries it), a link's
/// attribute; links are only ever `http`/`https` (``ChangeRecorder/webLink(_:)``).
package struct ChangeFeed: Sendable {
    package enum Format: String, Sendable, CaseIterable {
        case atom, json

        /// The file extension that asks for it: `.atom`, `.json`.
        package var fileExtension: String { rawValue }

        package var contentType: String {
            switch self {
            case .atom: "application/atom+xml; charset=utf-8"
            case .json: "application/feed+json; charset=utf-8"
            }
        }
    }

    /// "fetchrun: all changes", "fetchrun: news".
    package var title: String
    /// The feed's own id: `urn:fetchrun:feed:all`, `urn:fetchrun:feed:source:news`.
    package var id: String
    /// Where the feed is served or written (`http://host:port/feeds/all.atom`), when known.
    package var selfURL: String?

    package init(title: String, id: String, selfURL: String? = nil) {
        self.title = title
        self.id = id
        self.selfURL = selfURL
    }

    /// An entry's id: the record's, as a URN (characters outside a URN's own escaped).
    package static func entryID(of record: ChangeRecord) -> String {
        var id = "urn:fetchrun:change:"
        for byte in record.id.utf8 {
            let plain = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || Array("-._~/:".utf8).contains(byte)
            id += plain ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }
        return id
    }

    /// A strong ETag for a rendered feed: its bytes' hash, quoted.
    package static func entityTag(of body: [UInt8]) -> String {
        "\"" + ItemLimits.hash(String(decoding: body, as: UTF8.self)) + "\""
    }

    /// The feed's bytes, `records` newest first; `updated` is the newest record's time (or
    /// `fallback` when there is none).
    package func render(_ records: [ChangeRecord], as format: Format, fallback: Date) -> [UInt8] {
        switch format {
        case .atom: Array(atom(records, fallback: fallback).utf8)
        case .json: json(records)
        }
    }

    private func atom(_ records: [ChangeRecord], fallback: Date) -> String {
        let e = MarkupText.escaped
        var xml = #"<?xml version="1.0" encoding="utf-8"?>"# + "\n" + #"<feed xmlns="http://www.w3.org/2005/Atom">"# + "\n"
        xml += "<id>\(e(id))</id>\n<title>\(e(title))</title>\n"
        xml += "<updated>\(CalendarText.rfc3339String(from: records.first?.at ?? fallback))</updated>\n"
        xml += "<generator>fetchrun</generator>\n"
        if let selfURL { xml += #"<link rel="self" href="\#(e(selfURL))"/>"# + "\n" }
        for record in records {
            xml += "<entry>\n<id>\(e(Self.entryID(of: record)))</id>\n"
            xml += "<title>\(e(Self.entryTitle(of: record)))</title>\n"
            xml += "<updated>\(CalendarText.rfc3339String(from: record.at))</updated>\n"
            if let published = record.published { xml += "<published>\(CalendarText.rfc3339String(from: published))</published>\n" }
            xml += "<author><name>\(e(record.source))</name></author>\n"
            xml += #"<category term="\#(e(record.source))"/><category term="\#(record.kind.rawValue)"/>"# + "\n"
            if let link = Self.link(of: record) { xml += #"<link rel="alternate" href="\#(e(link))"/>"# + "\n" }
            xml += #"<content type="html">\#(e(Self.contentHTML(of: record)))</content>"# + "\n</entry>\n"
        }
        return xml + "</feed>\n"
    }

    private func json(_ records: [ChangeRecord]) -> [UInt8] {
        var json = JSONWriter(capacity: 1024 + 1024 * records.count)
        json.beginObject()
        json.field("version", "https://jsonfeed.org/version/1.1")
        json.field("title", title)
        json.field("feed_url", selfURL)
        json.key("items")
        json.beginArray()
        for record in records {
            json.beginObject()
            json.field("id", Self.entryID(of: record))
            json.field("url", Self.link(of: record))
            json.field("title", Self.entryTitle(of: record))
            json.field("content_html", Self.contentHTML(of: record))
            json.field("date_published", record.at)
            json.key("authors")
            json.beginArray()
            json.beginObject()
            json.field("name", record.source)
            json.endObject()
            json.endArray()
            json.field("tags", [record.source, record.kind.rawValue])
            json.endObject()
        }
        json.endArray()
        json.endObject()
        json.endLine()
        return json.bytes
    }

    /// Where an entry leads: the item's link, or a move's new address — `http`/`https` only,
    /// whatever a record says.
    static func link(of record: ChangeRecord) -> String? {
        (record.link ?? record.movedTo).flatMap(ChangeRecorder.webLink)
    }

    /// `[source] title`: a reader that merges feeds still says where a change came from.
    static func entryTitle(of record: ChangeRecord) -> String {
        "[\(record.source)] " + (record.title ?? record.kind.rawValue)
    }

    /// The entry's content as HTML: a change's diff with its additions and removals marked,
    /// an item's summary, a failure's error, a move's new address.
    package static func contentHTML(of record: ChangeRecord) -> String {
        let e = MarkupText.escaped
        var html = ""
        switch record.kind {
        case .change:
            html += "<pre>"
            for line in (record.diff ?? "").split(separator: "\n", omittingEmptySubsequences: false) {
                let text = e(String(line))
                // fetchrun's diffs have hunk headers and no file headers: a line that starts
                // with `---` is a removed line that started with `--`.
                if line.hasPrefix("+") {
                    html += #"<ins style="background:#e6ffec;text-decoration:none">\#(text)</ins>"# + "\n"
                } else if line.hasPrefix("-") {
                    html += #"<del style="background:#ffebe9;text-decoration:none">\#(text)</del>"# + "\n"
                } else {
                    html += text + "\n"
                }
            }
            html += "</pre>"
        case .item:
            if let summary = record.summary { html += "<p>\(e(summary))</p>" }
        case .failing:
            html += "<p>\(e(record.error ?? "failing"))</p>"
        case .recovered:
            html += "<p>\(e(record.title ?? "recovered"))</p>" + (record.error.map { "<p>the last error was: \(e($0))</p>" } ?? "")
        case .moved:
            if let moved = record.movedTo.flatMap(ChangeRecorder.webLink) { html += #"<p>moved permanently to <a href="\#(e(moved))">\#(e(moved))</a></p>"# }
        }
        if let link = record.link.flatMap(ChangeRecorder.webLink) { html += #"<p><a href="\#(e(link))">\#(e(link))</a></p>"# }
        for note in record.notes { html += "<p><em>\(e(note))</em></p>" }
        return html
    }
}
