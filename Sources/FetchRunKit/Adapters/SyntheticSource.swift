/// What the synthetic adapters (`traffic`, `random-news`) share: a random sequence that a
/// `seed` makes reproducible and that carries on across runs, and a simulated `latency`.
struct SyntheticSource: Sendable {
    static let options = [
        AdapterOption("seed", kind: "whole number", default: nil, "makes the random sequence reproducible; it carries on across runs through the snapshot"),
        AdapterOption("latency", kind: "duration or range", default: "0ms", "simulated response time: a fixed duration (2s) or a range (50ms..2s)"),
    ]

    var seed: UInt64?
    var latency: SimulatedLatency

    init(seed: UInt64?, latency: SimulatedLatency) {
        self.seed = seed
        self.latency = latency
    }

    init(options: AdapterOptions) {
        seed = options.integer("seed", in: 0...Int.max).map { UInt64($0) }
        latency = options.value("latency", what: "latency", parse: SimulatedLatency.init(parsing:)) ?? SimulatedLatency(.zero ... .zero)
    }

    /// The generator for one fetch: seeded sources resume where the previous snapshot left off.
    func randomness(resuming state: JSONValue?) -> SourceRandomness {
        guard let seed else { return SourceRandomness(seeded: nil) }
        if state?["seed"]?.stringValue == String(seed), let saved = state?["rng"]?.stringValue, let position = UInt64(saved, radix: 16) {
            return SourceRandomness(seeded: SplitMix64(state: position))
        }
        return SourceRandomness(seeded: SplitMix64(state: seed))
    }

    /// Waits for the simulated latency; throws `CancellationError` at the deadline like a real transfer.
    func simulateLatency(using random: inout SourceRandomness, in context: FetchContext) async throws {
        let delay = latency.draw(using: &random)
        if delay > .zero { try await context.sleep(for: delay) }
        try Task.checkCancellation()
    }
}

/// System randomness, or a seeded SplitMix64 whose position is saved in the adapter state.
struct SourceRandomness: RandomNumberGenerator {
    private var seeded: SplitMix64?
    private var system = SystemRandomNumberGenerator()

    init(seeded: SplitMix64?) {
        self.seeded = seeded
    }

    mutating func next() -> UInt64 {
        seeded != nil ? seeded!.next() : system.next()
    }

    /// The fields that let the next fetch resume the sequence; empty when unseeded.
    func state(seed: UInt64?) -> [String: JSONValue] {
        guard let seed, let seeded else { return [:] }
        return ["seed": .string(String(seed)), "rng": .string(String(seeded.state, radix: 16))]
    }
}

/// SplitMix64: tiny, fast, and its whole state is one number, so it fits in a snapshot.
/// The same seed always gives the same sequence.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    package var state: UInt64

    package init(state: UInt64) {
        self.state = state
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A simulated response time: fixed (`2s`) or drawn from a range (`50ms..2s`).
package struct SimulatedLatency: Sendable, Equatable {
    public var range: ClosedRange<Duration>

    public init(_ range: ClosedRange<Duration>) {
        self.range = range
    }

    /// Parses `2s` or `50ms..2s`; throws a reason for a malformed text or an empty range.
    public init(parsing text: String) throws {
        let bounds = text.split(separator: "..", omittingEmptySubsequences: false)
        guard bounds.count <= 2 else { throw ValueError("write a duration (2s) or a range (50ms..2s)") }
        let lower = try DurationText.parse(String(bounds[0]))
        let upper = bounds.count == 2 ? try DurationText.parse(String(bounds[1])) : lower
        guard lower <= upper else { throw ValueError("the range's start is after its end") }
        range = lower ... upper
    }

    func draw(using random: inout some RandomNumberGenerator) -> Duration {
        guard range.lowerBound < range.upperBound else { return range.lowerBound }
        let span = (range.upperBound - range.lowerBound).milliseconds
        return range.lowerBound + .milliseconds(Int64.random(in: 0...span, using: &random))
    }
}
