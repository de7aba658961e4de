import Foundation

/// Formats reports as NDJSON: one object per line, each with an `event` field.
///
/// Events: `item` (a new item, or a stored one for `show`), `changed` (a watched selection's
/// new item, with its `diff`), `source` (one source's outcome),
/// `run` (the overall result), `probe` (what `fetchrun probe` fetched). Dates are RFC 3339,
/// durations in milliseconds.
package enum JSONEvents {
    /// `item` events for a source's new items: what a run can print as each source finishes.
    /// And an `updated` event for each known item whose title or link changed
    /// (`report_updates: true`), with the item as it is now.
    public static func itemLines(for source: SourceReport) -> [String] {
        source.outcome.newItems.map { item(source: source.name, sourceTitle: source.title, $0, event: $0.diff == nil ? "item" : "changed") }
            + source.updatedItems.map { updated in
                event("updated") { json in
                    json.field("source", source.name)
                    json.field("source_title", source.title)
                    updated.writeMembers(into: &json)
                }
            }
    }

    /// `source` events in config order, then the `run` event.
    public static func summaryLines(for report: RunReport) -> [String] {
        var lines = report.sources.map { Self.source($0) }
        lines.append(event("run") { json in
            json.field("result", report.result.rawValue)
            json.field("new", report.newItemCount)
            json.field("sources", report.sources.count)
            json.field("failed", report.failedCount)
            json.field("duration_ms", report.duration.milliseconds)
        })
        return lines
    }

    /// `fetchrun probe`: one `probe` event (status, bytes, time, format), then an `item` per item.
    package static func lines(forProbe feed: Feed, response: HTTPResponse, location: String) -> [String] {
        let probe = event("probe") { json in
            json.field("location", location)
            json.field("status", response.status)
            json.field("bytes", response.body.count)
            json.field("duration_ms", response.duration.milliseconds)
            json.field("format", feed.format.rawValue)
            json.field("title", feed.title)
            json.field("items", feed.items.count)
            if !feed.warnings.isEmpty { json.field("warnings", feed.warnings) }
        }
        return [probe] + feed.items.map { item(source: nil, $0) }
    }

    /// `fetchrun probe --format json` of a web page or a JSON document: one `probe` event with
    /// `kind` (`page` or `json`), the page's `title` and `feeds`, the `entries` path and count of
    /// a JSON document, `suggested` (the source: name, type and its keys) and `preview` (lines).
    package static func lines(forProbe reading: SourceSuggestion.Reading, response: HTTPResponse, location: String, suggested: ConfigEditor.NewSource?) -> [String] {
        [event("probe") { json in
            json.field("location", location)
            json.field("status", response.status)
            json.field("bytes", response.body.count)
            json.field("duration_ms", response.duration.milliseconds)
            switch reading {
            case .feed:
                break
            case .page(let page):
                json.field("kind", "page")
                json.field("title", page.title)
                json.key("feeds")
                json.beginArray()
                for feed in page.feeds {
                    json.beginObject()
                    json.field("url", feed.url)
                    json.field("type", feed.type)
                    json.field("title", feed.title)
                    json.endObject()
                }
                json.endArray()
                if page.feeds.isEmpty { json.field("preview", page.text.split(separator: "\n").prefix(20).map(String.init)) }
            case .json(let document):
                json.field("kind", "json")
                json.field("entries", document.items.isEmpty ? nil : document.entries)
                json.field("preview", document.preview)
            }
            if let suggested {
                json.key("suggested")
                json.beginObject()
                json.field("name", suggested.name)
                json.field("type", suggested.type)
                for field in suggested.fields { json.field(field.key, field.value) }
                for map in suggested.maps {
                    json.key(map.key)
                    json.beginObject()
                    for entry in map.entries { json.field(entry.key, entry.value) }
                    json.endObject()
                }
                json.endObject()
            }
        }]
    }

    /// One `item` event (or `event`): the source's name (and its own title, a feed's, when
    /// known), then the item's fields as the snapshot holds them, `tags` included, and its
    /// ``Item/diff`` as `diff`.
    public static func item(source: String?, sourceTitle: String? = nil, _ item: Item, event name: String = "item") -> String {
        event(name) { json in
            json.field("source", source)
            json.field("source_title", sourceTitle)
            item.writeMembersWithDiff(into: &json)
        }
    }

    /// One `source` event: the outcome, counts and failure of one fetch; `next_fetch` when a
    /// watch or worker knows when the source is due again.
    public static func source(_ report: SourceReport, nextFetch: Date? = nil) -> String {
        event("source") { json in
            json.field("source", report.name)
            json.field("type", report.type)
            json.field("title", report.title)
            json.field("outcome", report.outcome.name)
            json.field("new", report.newCount)
            if report.isBaseline, report.newCount > 0 { json.field("baseline", true) }
            if report.updatedCount > 0 { json.field("updated", report.updatedCount) }
            json.field("total", report.totalItems)
            json.field("duration_ms", report.duration.milliseconds)
            if report.queueWait > .zero {
                json.field("queue_wait_ms", report.queueWait.milliseconds)
                json.field("queue_host", report.queueHost)
            }
            if let failure = report.outcome.failure { write(failure, into: &json) }
            if !report.notes.isEmpty { json.field("notes", report.notes) }
            json.field("next_fetch", nextFetch)
        }
    }

    /// A failure, one shape wherever it appears: `failure` with `kind`, `message`, and the
    /// HTTP `status` and `retry_after_ms` when there are.
    static func write(_ failure: FetchFailure, into json: inout JSONWriter) {
        json.key("failure")
        json.beginObject()
        json.field("kind", failure.kind.rawValue)
        json.field("message", failure.message)
        json.field("status", failure.status)
        json.field("retry_after_ms", failure.retryAfter?.milliseconds)
        json.endObject()
    }

    /// One event object: `event` first, then what `members` writes.
    package static func event(_ name: String, _ members: (inout JSONWriter) -> Void) -> String {
        var json = JSONWriter()
        write(event: name, into: &json, members)
        return json.string
    }

    /// ``event(_:_:)`` appended to `json` as a line of NDJSON: many events in one buffer,
    /// without a string for each.
    package static func appendLine(event name: String, to json: inout JSONWriter, _ members: (inout JSONWriter) -> Void) {
        write(event: name, into: &json, members)
        json.endLine()
    }

    private static func write(event name: String, into json: inout JSONWriter, _ members: (inout JSONWriter) -> Void) {
        json.beginObject()
        json.field("event", name)
        members(&json)
        json.endObject()
    }
}
