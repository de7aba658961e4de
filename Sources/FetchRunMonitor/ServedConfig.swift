import FetchRunKit

/// The sources and outputs the endpoint shows — `/status`, the feeds' names and tags, the
/// dashboard — as of the config last loaded: at start, then at each reload that took, so that
/// a source a SIGHUP added can be looked at (and checked now) at once, and one it removed is
/// gone from the pages.
package final class ServedConfig: Sendable {
    package struct Snapshot: Sendable {
        package var sources: [SourceConfig]
        /// Every source's tags, by name: the sources and tags a feed may name.
        package var tags: [String: [String]]
        /// Every output: name and type.
        package var outputs: [(name: String, type: String)]
    }

    private let current: Locked<Snapshot>

    package init(sources: [SourceConfig] = [], outputs: [OutputConfig] = []) {
        current = Locked(Self.snapshot(sources, outputs))
    }

    package var snapshot: Snapshot { current.withLock { $0 } }

    /// A reload took: the pages show `sources` and `outputs` from now on.
    package func update(sources: [SourceConfig], outputs: [OutputConfig]) {
        let snapshot = Self.snapshot(sources, outputs)
        current.withLock { $0 = snapshot }
    }

    private static func snapshot(_ sources: [SourceConfig], _ outputs: [OutputConfig]) -> Snapshot {
        Snapshot(
            sources: sources, tags: Dictionary(sources.map { ($0.name, $0.tags) }, uniquingKeysWith: { first, _ in first }),
            outputs: outputs.map { ($0.name, $0.type) }
        )
    }
}
