import Foundation

/// Adapter plugin protocol, version 1 (docs/plugins.md is the contract).
///
/// fetchrun writes one JSON request on the plugin's stdin and closes it; the plugin writes
/// JSON lines on stdout — items, and at most one `{"state": …}` — and exits 0. Anything else
/// fails the source with a reason that names the line.
package enum PluginProtocol {
    static let version = 1
    /// The most stdout a plugin may write in one fetch.
    static let outputLimit = 10 * 1024 * 1024

    /// The request: protocol version, source name and options, the config's folder (for
    /// relative paths), previous items and state, deadline.
    static func request(source: String, options: [String: JSONValue], configDirectory: String, previous: Snapshot?, deadline: Duration) -> Data {
        var json = JSONWriter(capacity: 4096)
        json.beginObject()
        json.key("protocol"); json.value(version)
        json.key("source"); json.value(source)
        json.key("config_directory"); json.value(configDirectory)
        json.key("options"); json.value(JSONValue.object(options))
        json.key("previous")
        json.beginObject()
        json.key("items")
        json.beginArray()
        for item in previous?.items ?? [] {
            json.beginObject()
            item.writeMembers(into: &json)
            json.endObject()
        }
        json.endArray()
        json.key("state")
        json.value(previous?.adapterState ?? .null)
        json.endObject()
        json.key("deadline_ms"); json.value(max(0, deadline.milliseconds))
        json.endObject()
        return Data(json.bytes + [0x0A])
    }

    /// Items and state from a plugin's stdout.
    /// - Throws: ``FetchFailure`` (`.adapter`) naming the first line that is not valid.
    package static func parse(_ output: Data) throws -> (items: [Item], state: JSONValue?) {
        var items: [Item] = []
        var state: JSONValue?
        for (index, line) in output.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) else { continue }
            // fetchrun's own reader: JSONDecoder's took time that grew with the cube of a
            // line's nesting (0.7 s for a line of 400 brackets), so a plugin could stall a pool
            // thread for minutes within its output cap.
            guard let value = try? JSONReader.value(of: Data(line)), case .object(let object) = value else {
                throw FetchFailure(.adapter, "plugin output line \(number) is not a JSON object: \(preview(line))")
            }
            if object.keys.count == 1, let newState = object["state"] {
                guard state == nil else { throw FetchFailure(.adapter, "plugin output line \(number): a second state object (one at most)") }
                state = newState
                continue
            }
            items.append(try item(object, line: number))
        }
        return (items, state)
    }

    private static func item(_ object: [String: JSONValue], line: Int) throws -> Item {
        guard let id = object["id"]?.stringValue, !id.isEmpty else {
            throw FetchFailure(.adapter, "plugin output line \(line): an item needs an 'id' (a non-empty string)")
        }
        guard let title = object["title"]?.stringValue else {
            throw FetchFailure(.adapter, "plugin output line \(line): item '\(id)' needs a 'title' (a string)")
        }
        var enclosures: [Enclosure] = []
        if case .array(let list)? = object["enclosures"] {
            for case .object(let enclosure) in list {
                guard let url = enclosure["url"]?.stringValue else { continue }
                enclosures.append(Enclosure(url: url, type: enclosure["type"]?.stringValue, length: enclosure["length"]?.intValue.map(Int64.init)))
            }
        }
        var extra: [String: String] = [:]
        if case .object(let fields)? = object["extra"] {
            for (key, value) in fields { extra[key] = value.scalarText }
        }
        return Item(
            id: id, title: title, link: object["link"]?.stringValue,
            published: object["published"]?.stringValue.flatMap(DateParser.parse),
            updated: object["updated"]?.stringValue.flatMap(DateParser.parse),
            summary: object["summary"]?.stringValue, author: object["author"]?.stringValue,
            enclosures: enclosures, extra: extra,
            tags: { if case .array(let tags)? = object["tags"] { return tags.compactMap(\.stringValue) } else { return [] } }()
        )
    }

    private static func preview(_ line: Data.SubSequence) -> String {
        let text = String(decoding: line.prefix(80), as: UTF8.self)
        return "'" + text + (line.count > 80 ? "…" : "") + "'"
    }
}

