import Foundation
import Logging

/// When a watcher's sources are due, and where it learns so: a watch keeps its own timetable
/// (``LocalSchedule``); a worker leases due sources from the store every worker shares
/// (``LeasedSchedule``). Everything else — which sources are watched, fetches in flight,
/// reports, stopping — is the ``Watcher``'s, the same for both.
///
/// Times are offsets from the watcher's origin on its clock. A schedule belongs to one watcher
/// and is used on its executor only: its asynchronous work runs isolated to that watcher.
package protocol WatchSchedule: AnyObject {
    /// `name` (of `generation`) is due at `due`: first fetches, fetches after one ended, and
    /// sources a reload added or changed.
    func queue(_ name: String, generation: Int, due: Duration)

    /// The sources due by `now`, at most `room` of them, taken off the schedule for the
    /// watcher to start; entries `isCurrent` rejects (a removed or replaced source's) are dropped.
    func takeDue(by now: Duration, room: Int, isCurrent: (_ name: String, _ generation: Int) -> Bool) -> [String]

    /// When the watcher's timer should next look, given that some fetch could start; `nil`
    /// when nothing is waiting for a time.
    func nextLook(after now: Duration) -> Duration?

    /// Whether a change — a fetch ended, a source added — is worth a turn of the timer now,
    /// rather than at the time it sleeps until (`timerTarget`).
    func wantsTurn(room: Int, inFlight: Int, maxInFlight: Int, timerTarget: Duration?) -> Bool

    /// `name`, now of `generation`, is due at `now` ahead of its schedule ("check now").
    /// - Throws: when a shared schedule cannot record it; then nothing changed.
    func checkNow(_ name: String, generation: Int, at now: Duration, for watcher: isolated Watcher) async throws

    /// A turn of the timer: what is due is started through `watcher`.
    func turn(for watcher: isolated Watcher) async

    /// The config was reloaded with `sources`. Throws when the new schedule cannot be recorded;
    /// then nothing changed.
    func reload(_ sources: [SourceConfig], at date: Date, for watcher: isolated Watcher) async throws

    /// The watcher has stopped: nothing more is started.
    func finish(logger: Logger, for watcher: isolated Watcher) async
}

/// A watch's own timetable: every source's next due time in one queue, and one timer on the
/// watcher's clock sleeping until the first of them.
package final class LocalSchedule: WatchSchedule {
    /// Due times as offsets: a concrete type, so that the heap's code is specialised — a first
    /// wave of 100,000 sources sifts it 200,000 times.
    private var queue = DueQueue<Duration, (name: String, generation: Int)>()

    package init() {}

    package func queue(_ name: String, generation: Int, due: Duration) {
        queue.insert((name, generation), due: due)
    }

    package func takeDue(by now: Duration, room: Int, isCurrent: (_ name: String, _ generation: Int) -> Bool) -> [String] {
        var due: [String] = []
        while due.count < room {
            queue.removeFirst { !isCurrent($0.element.name, $0.element.generation) }
            guard let next = queue.first, next.due <= now else { break }
            queue.removeFirst()
            due.append(next.element.name)
        }
        return due
    }

    package func nextLook(after now: Duration) -> Duration? {
        queue.first?.due
    }

    package func wantsTurn(room: Int, inFlight: Int, maxInFlight: Int, timerTarget: Duration?) -> Bool {
        guard room > 0, let next = queue.first?.due else { return false }
        return timerTarget.map { next < $0 } ?? true
    }

    package func checkNow(_ name: String, generation: Int, at now: Duration, for watcher: isolated Watcher) async throws {
        queue(name, generation: generation, due: now)
    }

    package func turn(for watcher: isolated Watcher) async {
        watcher.dispatchDueFetches()
    }

    package func reload(_ sources: [SourceConfig], at date: Date, for watcher: isolated Watcher) async throws {}

    package func finish(logger: Logger, for watcher: isolated Watcher) async {}
}
