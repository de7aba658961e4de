import Foundation

/// One thing to send through one output: a new item, or a source's failing / recovered alert.
///
/// Deliveries wait in the outbox (a table of `state.db`) from the moment a fetch records them
/// until an output has sent them. ``id`` is stable — the source and the item's id, or the source
/// and when its failures began — so a receiver can drop the repeat that a crash between sending
/// and marking may cause.
public struct Delivery: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case item
        /// The source has failed `alert_after` times in a row.
        case failing
        /// A source that was failing succeeded again.
        case recovered
    }

    /// Stable across retries and processes: what a receiver deduplicates by.
    public var id: String
    public var kind: Kind
    public var source: String
    /// The JSON object sent (a command's NDJSON line, a webhook's body) and read by templates.
    public var payload: String

    public init(id: String, kind: Kind, source: String, payload: String) {
        self.id = id
        self.kind = kind
        self.source = source
        self.payload = payload
    }

    /// A new item of `source`.
    package static func item(_ item: Item, source: String, sourceTitle: String?) -> Delivery {
        delivery(.item, id: "\(source)/\(deliveryKey(of: item.id))", source: source) { json in
            json.field("source_title", sourceTitle)
            item.writeMembersWithDiff(into: &json)
        }
    }

    /// The item's part of a delivery id: the id itself when it is printable ASCII without
    /// spaces or `%`, up to 200 bytes — what a header line, a file name and a log can carry as
    /// it is — else `h:` and 16 hex digits of its hash (FNV-1a, 64 bit). Item ids come from
    /// feeds: CR, LF, NUL and megabytes of text must never reach a header line.
    package static func deliveryKey(of id: String) -> String {
        let plain = !id.isEmpty && id.utf8.count <= 200 && id.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") }
        return plain ? id : "h:" + ItemLimits.hash(id)
    }

    /// `source` has failed `failures` times in a row since `since`.
    package static func failing(source: String, since: Date, failures: Int, error: FetchFailure) -> Delivery {
        delivery(.failing, id: "\(source)/failing/\(Int64(since.timeIntervalSince1970 * 1000))", source: source) { json in
            json.field("failures", failures)
            json.field("failing_since", since)
            json.field("error", error.message)
            json.field("error_kind", error.kind.rawValue)
        }
    }

    /// `source`, failing since `since`, works again.
    package static func recovered(source: String, since: Date, failures: Int, at: Date) -> Delivery {
        delivery(.recovered, id: "\(source)/recovered/\(Int64(since.timeIntervalSince1970 * 1000))", source: source) { json in
            json.field("failures", failures)
            json.field("failing_since", since)
            json.field("recovered_at", at)
        }
    }

    /// A delivery whose payload starts with what every one has: `event`, `delivery_id`, `source`.
    private static func delivery(_ kind: Kind, id: String, source: String, _ members: (inout JSONWriter) -> Void) -> Delivery {
        var json = JSONWriter()
        json.beginObject()
        json.field("event", kind.rawValue)
        json.field("delivery_id", id)
        json.field("source", source)
        members(&json)
        json.endObject()
        return Delivery(id: id, kind: kind, source: source, payload: json.string)
    }

    /// The alerts a fetch's outcome raises for the outputs that want them: `failing` when the
    /// failures in a row reach an output's `alert_after`, `recovered` on the first success after
    /// that — one each, never one per failed fetch.
    /// - Parameters:
    ///   - failuresBefore, failingSinceBefore: the source's run of failures before this fetch.
    package static func alerts(
        for report: SourceReport, failuresBefore: Int, failingSinceBefore: Date?,
        routes: [(output: String, alertAfter: Int)], at now: Date
    ) -> [(output: String, delivery: Delivery)] {
        var alerts: [(output: String, delivery: Delivery)] = []
        for route in routes {
            if let failure = report.outcome.failure, failuresBefore + 1 == route.alertAfter {
                alerts.append((route.output, .failing(source: report.name, since: failingSinceBefore ?? now, failures: route.alertAfter, error: failure)))
            } else if report.outcome.failure == nil, failuresBefore >= route.alertAfter, let since = failingSinceBefore {
                alerts.append((route.output, .recovered(source: report.name, since: since, failures: failuresBefore, at: now)))
            }
        }
        return alerts
    }

    /// The payload's fields as text, for templates: `title`, `link`, `source`, `error`…;
    /// `tags` joined with ", ". A payload that is not an object (a damaged row) has none.
    public var fields: [String: String] {
        guard case .object(let object)? = try? JSONReader.value(of: Data(payload.utf8)) else { return [:] }
        var fields: [String: String] = [:]
        for (key, value) in object {
            if let text = value.scalarText {
                fields[key] = text
            } else if case .array(let values) = value {
                fields[key] = values.compactMap(\.scalarText).joined(separator: ", ")
            }
        }
        return fields
    }
}

/// A delivery waiting in the outbox, with what its attempts so far left behind.
package struct PendingDelivery: Sendable, Hashable {
    /// The outbox row.
    public var row: Int64
    public var output: String
    public var delivery: Delivery
    public var attempts: Int
    public var lastError: String?
    public var createdAt: Date
    public var nextAttemptAt: Date
    /// When the sender gave up on it, after its output's `give_up_after` attempts and age;
    /// it is sent again only on `fetchrun outputs --retry --given-up`.
    public var givenUpAt: Date?

    public init(row: Int64, output: String, delivery: Delivery, attempts: Int, lastError: String?, createdAt: Date, nextAttemptAt: Date, givenUpAt: Date? = nil) {
        self.row = row
        self.output = output
        self.delivery = delivery
        self.attempts = attempts
        self.lastError = lastError
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.givenUpAt = givenUpAt
    }
}
