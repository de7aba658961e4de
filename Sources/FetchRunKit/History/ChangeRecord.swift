import Foundation

/// One change a source reported, as the history keeps it: a new item, a watched selection's
/// change with its diff, the source starting to fail or recovering, or a permanent redirect
/// seen often enough to hint at. Written with the fetch that found it (``FetchCommit/history``),
/// in the same transaction as its snapshot and outbox rows, by either store.
///
/// ``id`` is stable and unique per change: a repeat of the same change (a fetch done again
/// after a crash) is the same id and is recorded once; another change is another id.
package struct ChangeRecord: Sendable, Hashable {
    package enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A new item of a feed or a list.
        case item
        /// A watched selection changed: ``ChangeRecord/diff`` says how.
        case change
        /// The source started failing: its first failure after a success.
        case failing
        /// The source works again after failing.
        case recovered
        /// The source's URL redirects permanently, often enough to update the config.
        case moved
    }

    package var id: String
    package var source: String
    package var kind: Kind
    /// When the fetch that found it ended.
    package var at: Date
    package var title: String?
    /// `http`/`https` only (anything else from a feed is dropped by ``ChangeRecorder``).
    package var link: String?
    package var summary: String?
    package var published: Date?
    /// A ``Kind/change``'s unified diff, at most ``ChangeRecorder/maximumDiffBytes``.
    package var diff: String?
    /// A ``Kind/failing`` source's error; the kind of failure beside it.
    package var error: String?
    package var errorKind: String?
    /// A ``Kind/moved`` source's new address.
    package var movedTo: String?
    /// What was cut to fit ("diff cut to 64 KiB of 300 KiB").
    package var notes: [String] = []
    /// The PNG a rendered page's fetch took with this change (`screenshot: true`), by its name
    /// in the state folder's ``ScreenshotFolder``.
    package var screenshot: String?

    package init(id: String, source: String, kind: Kind, at: Date) {
        self.id = id
        self.source = source
        self.kind = kind
        self.at = at
    }

    /// The record as one JSON object: what the stores keep and `history --format json` prints.
    package var json: String {
        var writer = JSONWriter(capacity: 256 + (summary?.utf8.count ?? 0) + (diff?.utf8.count ?? 0))
        writeObject(into: &writer)
        return writer.string
    }

    /// The record's object, with `event` first when given (an NDJSON line of a command).
    package func writeObject(into json: inout JSONWriter, event: String? = nil) {
        json.beginObject()
        json.field("event", event)
        json.field("id", id)
        json.field("source", source)
        json.field("kind", kind.rawValue)
        json.field("at", at)
        json.field("title", title)
        json.field("link", link)
        json.field("summary", summary)
        json.field("published", published)
        json.field("diff", diff)
        json.field("error", error)
        json.field("error_kind", errorKind)
        json.field("moved_to", movedTo)
        if !notes.isEmpty { json.field("notes", notes) }
        json.field("screenshot", screenshot)
        json.endObject()
    }

    /// Reads a stored record. Rows are the store's to keep, but a state folder is anyone's to
    /// edit: a row that is not such an object throws, and the caller skips it.
    package init(json text: String) throws(JSONReader.Failure) {
        self = try JSONReader.read(Data(text.utf8)) { (reader: inout JSONReader) throws(JSONReader.Failure) -> ChangeRecord in
            var id: String?, source: String?, kind: Kind?, at: Date?
            var record = ChangeRecord(id: "", source: "", kind: .item, at: .distantPast)
            try reader.readObject { (reader: inout JSONReader, key: String) throws(JSONReader.Failure) in
                switch key {
                case "id": id = try reader.readString()
                case "source": source = try reader.readString()
                case "kind": kind = Kind(rawValue: try reader.readString())
                case "at": at = try reader.readDate()
                case "title": record.title = try reader.readOptionalString()
                case "link": record.link = try reader.readOptionalString()
                case "summary": record.summary = try reader.readOptionalString()
                case "published": record.published = try reader.readOptionalDate()
                case "diff": record.diff = try reader.readOptionalString()
                case "error": record.error = try reader.readOptionalString()
                case "error_kind": record.errorKind = try reader.readOptionalString()
                case "moved_to": record.movedTo = try reader.readOptionalString()
                case "screenshot": record.screenshot = try reader.readOptionalString()
                case "notes":
                    try reader.readArray { (reader: inout JSONReader, _: Int) throws(JSONReader.Failure) in record.notes.append(try reader.readString()) }
                default: try reader.skipValue()
                }
            }
            guard let id else { throw reader.missing("id") }
            guard let source else { throw reader.missing("source") }
            guard let kind else { throw reader.missing("kind") }
            guard let at else { throw reader.missing("at") }
            record.id = id
            record.source = source
            record.kind = kind
            record.at = at
            return record
        }
    }
}
