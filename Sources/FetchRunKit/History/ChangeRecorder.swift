import Foundation

/// The rule of what a fetch adds to its source's history — written once, for every store and
/// command, and applied by ``FetchPipeline`` as it builds the fetch's commit:
///
/// - each new item (not a baseline's) is an ``ChangeRecord/Kind/item``, or a
///   ``ChangeRecord/Kind/change`` when it carries a watched selection's diff;
/// - the first failure after a success is ``ChangeRecord/Kind/failing``, with its error; the
///   first success after failures is ``ChangeRecord/Kind/recovered``;
/// - a permanent redirect seen ``SourceState/movedHintAfter`` times in a row is
///   ``ChangeRecord/Kind/moved``, once.
///
/// Text from the source is bounded (title 1 KiB, summary 2 KiB, diff 64 KiB with a note when
/// cut); links other than `http`/`https` are dropped.
package enum ChangeRecorder {
    /// A record's summary: enough to recognise an item, not its article.
    package static let maximumSummaryBytes = 2_048
    package static let maximumTitleBytes = 1_024
    package static let maximumErrorBytes = 2_048

    /// What `report` adds to the history, given the source's state before and after it was
    /// recorded; nothing when `retention` is off.
    package static func records(
        for report: SourceReport, before: SourceState, after: SourceState, retention: HistoryRetention, at now: Date
    ) -> [ChangeRecord] {
        guard retention.isEnabled else { return [] }
        var records: [ChangeRecord] = []
        let source = report.name
        if !report.isBaseline {
            for item in report.outcome.newItems { records.append(record(of: item, source: source, at: now)) }
        }
        if let failure = report.outcome.failure, before.consecutiveFailures == 0 {
            let since = after.failingSince ?? now
            var record = ChangeRecord(id: "\(source)/failing/\(SourceState.milliseconds(since))", source: source, kind: .failing, at: now)
            record.title = "failing: " + bounded(failure.message, maximumTitleBytes)
            record.error = bounded(failure.message, maximumErrorBytes)
            record.errorKind = failure.kind.rawValue
            records.append(record)
        } else if report.outcome.failure == nil, before.consecutiveFailures > 0 {
            let since = before.failingSince ?? now
            var record = ChangeRecord(id: "\(source)/recovered/\(SourceState.milliseconds(since))", source: source, kind: .recovered, at: now)
            let failures = before.consecutiveFailures
            record.title = "recovered after \(failures) failure\(failures == 1 ? "" : "s")"
            record.error = before.lastError.map { bounded($0.message, maximumErrorBytes) }
            records.append(record)
        }
        if let movedTo = after.movedTo, after.movedCount == SourceState.movedHintAfter, before.movedCount < SourceState.movedHintAfter || before.movedTo != movedTo {
            var record = ChangeRecord(id: "\(source)/moved/\(ItemLimits.hash(movedTo))", source: source, kind: .moved, at: now)
            record.movedTo = webLink(movedTo)
            record.title = "moved permanently to " + bounded(movedTo, maximumTitleBytes)
            records.append(record)
        }
        return records
    }

    /// A new item's record. A change's id names its diff too: a selection's change numbers
    /// start again after `reset`, and the same number must not hide another change.
    static func record(of item: Item, source: String, at now: Date) -> ChangeRecord {
        let key = Delivery.deliveryKey(of: item.id)
        var record: ChangeRecord
        if let diff = item.diff {
            let fitted = DiffBound.fitted(diff)
            record = ChangeRecord(id: "\(source)/change/\(key)/\(ItemLimits.hash(diff))", source: source, kind: .change, at: now)
            record.diff = fitted
            if let note = DiffBound.note(of: fitted) { record.notes.append(note) }
        } else {
            record = ChangeRecord(id: "\(source)/item/\(key)", source: source, kind: .item, at: now)
        }
        record.title = bounded(item.title, maximumTitleBytes)
        record.link = item.link.flatMap(webLink)
        record.summary = item.summary.map { bounded($0, maximumSummaryBytes) }
        record.published = item.published
        return record
    }

    /// `link` when it is an `http` or `https` URL; anything else (`javascript:`, `data:`, a
    /// relative path) is no link to follow from a history, a feed or a page.
    package static func webLink(_ link: String) -> String? {
        let trimmed = link.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let colon = trimmed.firstIndex(of: ":") else { return nil }
        let scheme = trimmed[..<colon].lowercased()
        guard scheme == "http" || scheme == "https", trimmed[colon...].hasPrefix("://") else { return nil }
        return trimmed
    }

    private static func bounded(_ text: String, _ limit: Int) -> String {
        ItemLimits.fitted(text, toBytes: limit)
    }
}
