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
    /// Where the entry starts in the config file; line 0 for an output built in code.
    public var mark = SourceMark(line: 0, column: 0)

    public init(name: String, type: String, output: any Output, events: Set<Event> = [.items], alertAfter: Int = 3) {
        self.name = name
        self.type = type
        self.output = output
        self.events = events
        self.alertAfter = alertAfter
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
