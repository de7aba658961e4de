import Foundation

/// What ``SourceStateStore/schedule(_:now:)`` writes — the rule both stores apply, in Swift:
///
/// - A source a config lists (enabled, with an interval) is scheduled. One scheduled for the
///   first time keeps the due time a fetch recorded (a `run` before the first watch), else is
///   due within `min(interval, 10 s)`, spread by a hash of its name so that a fleet's first
///   round does not start at one instant.
/// - One whose settings changed (another fingerprint) is due at once.
/// - One no longer listed is retired: kept with its state and snapshot, never leased by due time.
package struct SchedulePlan: Sendable {
    /// A source as a store has it now.
    package typealias Known = (fingerprint: String?, scheduled: Bool, due: Date?)

    /// A source to write as scheduled.
    package struct Row: Sendable {
        package var name: String
        package var fingerprint: String
        package var due: Date
        /// Whether its adapter reads the previous snapshot (a lease then carries it).
        package var readsSnapshot: Bool
    }

    /// Added and changed sources; unchanged ones need no write.
    package var rows: [Row] = []
    package var retire: [String] = []
    package var change = ScheduleChange()

    package init(_ sources: [SourceConfig], known: [String: Known], now: Date) {
        var listed = Set<String>()
        for source in sources where source.enabled {
            guard case .every(let interval) = source.settings.interval, listed.insert(source.name).inserted else { continue }
            let spread = max(1, min(interval.milliseconds, 10_000))
            let firstDue = now.addingTimeInterval(Double(Item.fnv1a(source.name) % UInt64(spread)) / 1000)
            let row = Row(name: source.name, fingerprint: source.fingerprint, due: firstDue, readsSnapshot: source.adapter.readsPreviousSnapshot)
            guard let before = known[source.name], before.scheduled else {
                change.added.append(source.name)
                rows.append(Row(name: row.name, fingerprint: row.fingerprint, due: known[source.name]?.due ?? firstDue, readsSnapshot: row.readsSnapshot))
                continue
            }
            guard before.fingerprint != source.fingerprint else { continue }
            change.changed.append(source.name)
            rows.append(Row(name: row.name, fingerprint: row.fingerprint, due: min(before.due ?? firstDue, firstDue), readsSnapshot: row.readsSnapshot))
        }
        retire = known.filter { $0.value.scheduled && !listed.contains($0.key) }.keys.sorted()
        change.retired = retire
        change.added.sort()
        change.changed.sort()
    }
}
