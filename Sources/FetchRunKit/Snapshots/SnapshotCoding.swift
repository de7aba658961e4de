import Foundation

/// The JSON of the state directory's files, in one place: snapshots and their items are
/// written by hand with ``JSONWriter`` (JSONEncoder was most of the cost of a large run) and
/// read by hand with ``JSONReader``; the download queue's entries are read with a JSONDecoder
/// that parses dates with fetchrun's own RFC 3339 reader.
package enum SnapshotCoding {
    package static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        // Our own RFC 3339 reader: Foundation's `.iso8601` goes through ICU and was most of
        // the cost of reading a thousand snapshots.
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = CalendarText.rfc3339(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 date: \(text)")
            }
            return date
        }
        return decoder
    }()

    /// A decoding error as one short reason for a message.
    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context):
            return "not valid JSON" + (context.codingPath.isEmpty ? "" : " at \(context.codingPath.map(\.stringValue).joined(separator: "."))")
        case DecodingError.keyNotFound(let key, _):
            return "missing field '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "wrong type at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        default:
            return "\(error)"
        }
    }
}

extension Item {
    /// The item's members, into an object the caller has opened.
    /// The members a report or a delivery carries: ``Item/diff`` as a `diff` member of its
    /// own rather than inside `extra`, where the snapshot keeps it.
    func writeMembersWithDiff(into json: inout JSONWriter) {
        guard let diff else { return writeMembers(into: &json) }
        var plain = self
        plain.extra[Item.diffKey] = nil
        plain.writeMembers(into: &json)
        json.field("diff", diff)
    }

    func writeMembers(into json: inout JSONWriter) {
        json.field("id", id)
        json.field("title", title)
        json.field("link", link)
        json.field("published", published)
        json.field("updated", updated)
        json.field("summary", summary)
        json.field("author", author)
        if !enclosures.isEmpty {
            json.key("enclosures")
            json.beginArray()
            for enclosure in enclosures {
                json.beginObject()
                json.field("url", enclosure.url)
                json.field("type", enclosure.type)
                json.field("length", enclosure.length)
                json.field("file", enclosure.file)
                json.endObject()
            }
            json.endArray()
        }
        if !extra.isEmpty {
            json.key("extra")
            json.beginObject()
            for name in extra.keys.sorted() { json.field(name, extra[name]) }
            json.endObject()
        }
        if !tags.isEmpty { json.field("tags", tags) }
    }
}

extension Snapshot {
    /// The snapshot file: top-level members and each item on a line of their own.
    package func jsonData() -> Data {
        var json = JSONWriter(capacity: 1024 + items.count * 512)
        json.beginObject()
        json.newline(indent: 2)
        json.key("version"); json.value(version)
        json.newline(indent: 2)
        json.key("source"); json.value(source)
        json.newline(indent: 2)
        json.key("type"); json.value(type)
        if let title {
            json.newline(indent: 2)
            json.key("title"); json.value(title)
        }
        json.newline(indent: 2)
        json.key("updated_at"); json.value(updatedAt)
        if let validators {
            json.newline(indent: 2)
            json.key("validators")
            json.beginObject()
            json.field("etag", validators.etag)
            json.field("last_modified", validators.lastModified)
            json.endObject()
        }
        if let adapterState {
            json.newline(indent: 2)
            json.key("adapter_state"); json.value(adapterState)
        }
        if let seen {
            json.newline(indent: 2)
            json.key("seen")
            json.beginObject()
            json.field("identity", seen.identity.rawValue)
            json.field("last_fetch", seen.lastFetchText)
            json.field("earlier", seen.earlierText)
            json.endObject()
        }
        json.newline(indent: 2)
        json.key("items")
        json.beginArray()
        for item in items {
            json.newline(indent: 4)
            json.beginObject()
            item.writeMembers(into: &json)
            json.endObject()
        }
        if !items.isEmpty { json.newline(indent: 2) }
        json.endArray()
        json.newline(indent: 0)
        json.endObject()
        return Data(json.bytes + [0x0A])
    }
}

extension Snapshot {
    /// Reads a snapshot file as ``jsonData()`` writes it. Unknown members are skipped (a newer
    /// fetchrun may add some); missing or mistyped ones fail with where and what.
    package init(json data: Data) throws(JSONReader.Failure) {
        self = try JSONReader.read(data) { reader throws(JSONReader.Failure) in
            var version: Int?, source: String?, type: String?, updatedAt: Date?, items: [Item]?
            var validators: HTTPValidators?, adapterState: JSONValue?, title: String?, seen: SeenItems?
            try reader.readObject { reader, key throws(JSONReader.Failure) in
                switch key {
                case "version": version = try reader.readInt()
                case "source": source = try reader.readString()
                case "type": type = try reader.readString()
                case "title": title = try reader.readOptionalString()
                case "updated_at": updatedAt = try reader.readDate()
                case "validators":
                    guard !reader.readNull() else { return }
                    var found = HTTPValidators()
                    try reader.readObject { reader, key throws(JSONReader.Failure) in
                        switch key {
                        case "etag": found.etag = try reader.readOptionalString()
                        case "last_modified": found.lastModified = try reader.readOptionalString()
                        default: try reader.skipValue()
                        }
                    }
                    validators = found
                case "adapter_state":
                    let value = try reader.readValue()
                    adapterState = value == .null ? nil : value
                case "seen":
                    // A set that does not read is rebuilt, as after an upgrade: never a reason
                    // to refuse the snapshot and its items.
                    guard case .object(let members) = try reader.readValue(),
                          let identity = members["identity"]?.stringValue, let lastFetch = members["last_fetch"]?.stringValue,
                          let earlier = members["earlier"]?.stringValue
                    else { return }
                    seen = SeenItems(identity: identity, lastFetch: lastFetch, earlier: earlier)
                case "items":
                    var read: [Item] = []
                    try reader.readArray { reader, _ throws(JSONReader.Failure) in read.append(try Item(reading: &reader)) }
                    items = read
                default:
                    try reader.skipValue()
                }
            }
            guard let version else { throw reader.missing("version") }
            guard let source else { throw reader.missing("source") }
            guard let type else { throw reader.missing("type") }
            guard let updatedAt else { throw reader.missing("updated_at") }
            guard let items else { throw reader.missing("items") }
            var snapshot = Snapshot(source: source, type: type, updatedAt: updatedAt, items: items, validators: validators, adapterState: adapterState, title: title)
            snapshot.version = version
            snapshot.seen = seen
            return snapshot
        }
    }
}

extension Item {
    /// Reads an item as ``writeMembers(into:)`` writes it.
    init(reading reader: inout JSONReader) throws(JSONReader.Failure) {
        var id: String?, title: String?, link: String?, published: Date?, updated: Date?
        var summary: String?, author: String?, enclosures: [Enclosure] = [], extra: [String: String] = [:], tags: [String] = []
        try reader.readObject { reader, key throws(JSONReader.Failure) in
            switch key {
            case "id": id = try reader.readString()
            case "title": title = try reader.readString()
            case "link": link = try reader.readOptionalString()
            case "published": published = try reader.readOptionalDate()
            case "updated": updated = try reader.readOptionalDate()
            case "summary": summary = try reader.readOptionalString()
            case "author": author = try reader.readOptionalString()
            case "enclosures":
                guard !reader.readNull() else { return }
                try reader.readArray { reader, _ throws(JSONReader.Failure) in
                    var url: String?, type: String?, length: Int64?, file: String?
                    try reader.readObject { reader, key throws(JSONReader.Failure) in
                        switch key {
                        case "url": url = try reader.readString()
                        case "type": type = try reader.readOptionalString()
                        case "length": length = try reader.readOptionalInt64()
                        case "file": file = try reader.readOptionalString()
                        default: try reader.skipValue()
                        }
                    }
                    guard let url else { throw reader.missing("url") }
                    enclosures.append(Enclosure(url: url, type: type, length: length, file: file))
                }
            case "extra":
                guard !reader.readNull() else { return }
                try reader.readObject { reader, key throws(JSONReader.Failure) in extra[key] = try reader.readString() }
            case "tags":
                guard !reader.readNull() else { return }
                try reader.readArray { reader, _ throws(JSONReader.Failure) in tags.append(try reader.readString()) }
            default:
                try reader.skipValue()
            }
        }
        guard let id else { throw reader.missing("id") }
        guard let title else { throw reader.missing("title") }
        self.init(id: id, title: title, link: link, published: published, updated: updated, summary: summary, author: author, enclosures: enclosures, extra: extra, tags: tags)
    }
}
