import Foundation

/// The JSON of the state directory's files, in one place: snapshots and their items are
/// written by hand with ``JSONWriter`` (JSONEncoder was most of the cost of a large run), and
/// read with a JSONDecoder that parses dates with fetchrun's own RFC 3339 reader.
enum SnapshotCoding {
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        // Our own RFC 3339 reader: Foundation's `.iso8601` goes through ICU and was most of
        // the cost of reading a thousand snapshots.
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = DateParser.rfc3339(text) else {
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
    }
}

extension Snapshot {
    /// The snapshot file: top-level members and each item on a line of their own.
    func jsonData() -> Data {
        var json = JSONWriter(capacity: 1024 + items.count * 512)
        json.beginObject()
        json.newline(indent: 2)
        json.key("version"); json.value(version)
        json.newline(indent: 2)
        json.key("source"); json.value(source)
        json.newline(indent: 2)
        json.key("type"); json.value(type)
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
