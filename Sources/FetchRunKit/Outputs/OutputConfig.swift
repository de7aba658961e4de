import Foundation

/// One entry of the config's `outputs:` list: where new items (and, if asked, failure alerts)
/// are sent, and which of those events.
public struct OutputConfig: Sendable {
    public enum Event: String, Sendable, Hashable, CaseIterable {
        /// New items of the sources that send here.
        case items
        /// A source failing `alert_after` times in a row, and its recovery.
        case failures
    }

    public var name: String
    /// The entry's `type:`.
    public var type: String
    public var output: any Output
    public var events: Set<Event> = [.items]
    /// Failures in a row before a `failures` output hears of a source.
    public var alertAfter = 3
    /// When a delivery that keeps failing is given up: after this many attempts *and* this long
    /// since it was queued (`give_up_attempts`, `give_up_after`), so that neither a burst of
    /// quick retries nor a machine that was off for a week gives up on its own.
    public var giveUp = GiveUp()
    /// Where the entry starts in the config file; line 0 for an output built in code.
    public var mark = SourceMark(line: 0, column: 0)
    /// For an output written from the history (``HistoryOutput``): the sources that send to it,
    /// as the config routes them; `nil` is every source.
    package var historySources: [String]?
    /// `digest: SCHEDULE`: the output's deliveries are collected and sent together at its times;
    /// `nil` sends them as they come.
    package var digest: DigestSchedule?

    public init(name: String, type: String, output: any Output, events: Set<Event> = [.items], alertAfter: Int = 3) {
        self.name = name
        self.type = type
        self.output = output
        self.events = events
        self.alertAfter = alertAfter
    }
}

extension OutputConfig {
    /// When the sender stops trying a delivery: both limits passed. A given-up delivery is kept
    /// and listed by `fetchrun outputs`, and sent again only on `outputs --retry --given-up`.
    public struct GiveUp: Sendable, Hashable {
        /// Failed attempts (default 10).
        public var attempts: Int
        /// Time since the delivery was queued (default a day).
        public var age: Duration

        public init(attempts: Int = 10, age: Duration = .seconds(86_400)) {
            self.attempts = attempts
            self.age = age
        }

        /// Whether a delivery queued at `createdAt` that has now failed `attempts` times is given up.
        public func givesUp(attempts failed: Int, createdAt: Date, at now: Date) -> Bool {
            failed >= attempts && now.timeIntervalSince(createdAt) >= Double(age.components.seconds)
        }
    }
}

/// Which outputs a source sends to, and which of its items.
package struct SourceRouting: Sendable {
    /// `outputs:` of the source: `nil` sends to every output, `[]` to none.
    public var outputs: [String]?
    public var filter = ItemFilter()
    /// Send what a source's first fetch finds (`send_baseline: true`); by default a first
    /// fetch only sets the baseline.
    public var sendBaseline = false
    /// `notify_when:`: news is sent only when this becomes true; `nil`: always.
    package var notifyWhen: NotifyCondition?
    /// `number_format:`: how the source writes numbers, for `notify_when`'s `value`; `nil`: guessed.
    package var numberFormat: NumberText.Format?

    public init(outputs: [String]? = nil, filter: ItemFilter = ItemFilter(), sendBaseline: Bool = false) {
        self.outputs = outputs
        self.filter = filter
        self.sendBaseline = sendBaseline
    }

    /// The outputs of `all` this source's `event`s go to.
    public func outputs(for event: OutputConfig.Event, among all: [OutputConfig]) -> [OutputConfig] {
        all.filter { $0.events.contains(event) && (outputs?.contains($0.name) ?? true) }
    }
}
