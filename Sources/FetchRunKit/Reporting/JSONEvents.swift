import Foundation

/// Formats reports as NDJSON: one object per line, each with an `event` field.
///
/// Events: `item` (a new item, or a stored one for `show`), `source` (one source's outcome),
/// `run` (the overall result). Dates are RFC 3339, durations in milliseconds.
public enum JSONEvents {
    /// `item` events for every new item, `source` events in config order, then one `run` event.
    public static func lines(for report: RunReport) -> [String] {
        var lines: [String] = []
        for source in report.sources {
            lines += source.outcome.newItems.map { item(source: source.name, $0) }
        }
        lines += report.sources.map(Self.source)
        lines.append(encode(RunEvent(
            result: report.result, new: report.newItemCount, sources: report.sources.count,
            failed: report.failedCount, durationMs: report.duration.milliseconds
        )))
        return lines
    }

    /// `fetchrun probe`: one `probe` event (status, bytes, time, format), then an `item` per item.
    public static func lines(forProbe feed: Feed, response: HTTPResponse, location: String) -> [String] {
        [encode(ProbeEvent(
            location: location, status: response.status, bytes: response.body.count,
            durationMs: response.duration.milliseconds, format: feed.format.rawValue,
            title: feed.title, items: feed.items.count, warnings: feed.warnings.isEmpty ? nil : feed.warnings
        ))] + feed.items.map { item(source: nil, $0) }
    }

    public static func item(source: String?, _ item: Item) -> String {
        encode(ItemEvent(source: source, item: item))
    }

    public static func source(_ report: SourceReport) -> String {
        encode(SourceEvent(
            source: report.name, type: report.type, outcome: report.outcome.name,
            new: report.outcome.newItems.count, total: report.totalItems,
            durationMs: report.duration.milliseconds, failure: report.outcome.failure.map(FailureObject.init),
            notes: report.notes.isEmpty ? nil : report.notes
        ))
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    static func encode(_ value: some Encodable) -> String {
        // Every event is made of strings, numbers and dates: encoding cannot fail.
        String(decoding: try! encoder.encode(value), as: UTF8.self)
    }
}

private struct ProbeEvent: Encodable {
    let event = "probe"
    var location: String
    var status: Int
    var bytes: Int
    var durationMs: Int64
    var format: String
    var title: String?
    var items: Int
    var warnings: [String]?

    enum CodingKeys: String, CodingKey {
        case event, location, status, bytes, format, title, items, warnings
        case durationMs = "duration_ms"
    }
}

private struct ItemEvent: Encodable {
    var source: String?
    var item: Item

    enum CodingKeys: String, CodingKey { case event, source }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("item", forKey: .event)
        try container.encodeIfPresent(source, forKey: .source)
        try item.encode(to: encoder)
    }
}

private struct FailureObject: Encodable {
    var kind: FetchFailure.Kind
    var message: String
    var status: Int?
    var retryAfterMs: Int64?

    init(_ failure: FetchFailure) {
        kind = failure.kind
        message = failure.message
        status = failure.status
        retryAfterMs = failure.retryAfter?.milliseconds
    }

    enum CodingKeys: String, CodingKey {
        case kind, message, status
        case retryAfterMs = "retry_after_ms"
    }
}

private struct SourceEvent: Encodable {
    let event = "source"
    var source: String
    var type: String
    var outcome: String
    var new: Int
    var total: Int
    var durationMs: Int64
    var failure: FailureObject?
    var notes: [String]?

    enum CodingKeys: String, CodingKey {
        case event, source, type, outcome, new, total, failure, notes
        case durationMs = "duration_ms"
    }
}

private struct RunEvent: Encodable {
    let event = "run"
    var result: RunResult
    var new: Int
    var sources: Int
    var failed: Int
    var durationMs: Int64

    enum CodingKeys: String, CodingKey {
        case event, result, new, sources, failed
        case durationMs = "duration_ms"
    }
}
