import Foundation

/// `type: random-news` — the coin-flip news mock of the background-fetch demo.
///
/// The first fetch yields "News text 1". Every later fetch flips a coin that comes up heads
/// with `probability`; heads adds "News text N+1" dated now (new data), tails adds nothing
/// (no data). N carries on from the snapshot, so numbering continues across runs.
package struct RandomNewsAdapter: ConfigurableAdapter {
    public static let type = "random-news"
    public static let summary = "coin-flip news mock: \"News text N+1\" on heads, nothing on tails"
    public static let options = [
        AdapterOption("probability", kind: "number 0...1", default: "0.5", "chance that a fetch finds a new story"),
    ] + SyntheticSource.options

    public var probability: Double
    var synthetic: SyntheticSource

    /// A coin-flip source built in code: a new story with `probability` per fetch.
    public init(probability: Double = 0.5, seed: UInt64? = nil, latency: SimulatedLatency = SimulatedLatency(.zero ... .zero)) {
        self.probability = min(1, max(0, probability))
        synthetic = SyntheticSource(seed: seed, latency: latency)
    }

    public init(options: AdapterOptions) throws {
        probability = options.number("probability", in: 0...1) ?? 0.5
        synthetic = SyntheticSource(options: options)
    }

    public func fetch(_ context: FetchContext) async throws -> FetchOutput {
        let state = context.previous?.adapterState
        var random = synthetic.randomness(resuming: state)
        try await synthetic.simulateLatency(using: &random, in: context)

        let count = state?["count"]?.intValue ?? Self.highestNumber(in: context.previousItems)
        var items: [Item] = []
        // The first story is there from the start, as the demo seeded its list; after that the coin decides.
        if count == 0 || Double.random(in: 0..<1, using: &random) < probability {
            items.append(Self.story(number: count + 1, at: context.date))
        }
        var newState = random.state(seed: synthetic.seed)
        newState["count"] = .number(Double(count + items.count))
        return FetchOutput(items: items, adapterState: .object(newState))
    }

    static func story(number: Int, at date: Date) -> Item {
        Item(id: "news-\(number)", title: "News text \(number)", published: date, extra: ["number": String(number)])
    }

    /// For snapshots without adapter state (written by hand, or by an older fetchrun).
    static func highestNumber(in items: [Item]) -> Int {
        items.compactMap { $0.extra["number"].flatMap(Int.init) }.max() ?? 0
    }
}
