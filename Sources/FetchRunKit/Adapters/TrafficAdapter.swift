import Foundation

/// `type: traffic` — a synthetic traffic-status feed, after the background-fetch demo app that
/// created 0–2 random status updates on every fetch (`createNewStatusUpdatesWithMin:0 max:3`).
///
/// Every fetch creates between `min` and `max` updates (inclusive), each a status on a road with
/// a unique id, so every update is new data. With `latency` it stands in for a slow source.
public struct TrafficAdapter: ConfigurableAdapter {
    public static let type = "traffic"
    public static let summary = "synthetic road-traffic status updates, min...max new ones per fetch"
    public static let options = [
        AdapterOption("min", kind: "whole number", default: "0", "fewest updates a fetch creates"),
        AdapterOption("max", kind: "whole number", default: "2", "most updates a fetch creates"),
    ] + SyntheticSource.options

    public var updatesPerFetch: ClosedRange<Int>
    var synthetic: SyntheticSource

    /// A traffic source built in code: `updatesPerFetch` new updates per fetch; with a `seed`,
    /// a reproducible sequence; each fetch waiting `latency` first (between its two bounds).
    public init(updatesPerFetch: ClosedRange<Int> = 0...2, seed: UInt64? = nil, latency: ClosedRange<Duration> = .zero ... .zero) {
        self.updatesPerFetch = updatesPerFetch
        synthetic = SyntheticSource(seed: seed, latency: SimulatedLatency(latency))
    }

    public init(options: AdapterOptions) throws {
        let min = options.integer("min", in: 0...1000) ?? 0
        let max = options.integer("max", in: 0...1000) ?? Swift.max(2, min)
        if min > max {
            options.report("'min' (\(min)) is greater than 'max' (\(max))", key: "min")
        }
        updatesPerFetch = min ... Swift.max(min, max)
        synthetic = SyntheticSource(options: options)
    }

    public func fetch(_ context: FetchContext) async throws -> FetchOutput {
        let state = context.previous?.adapterState
        var random = synthetic.randomness(resuming: state)
        try await synthetic.simulateLatency(using: &random, in: context)

        var nextNumber = state?["next_update"]?.intValue ?? 1
        let now = context.date
        var updates: [Item] = []
        for _ in 0..<Int.random(in: updatesPerFetch, using: &random) {
            updates.append(TrafficStatus.random(using: &random).item(number: nextNumber, at: now))
            nextNumber += 1
        }
        var newState = random.state(seed: synthetic.seed)
        newState["next_update"] = .number(Double(nextNumber))
        // The newest update goes first, as the demo inserted each one at the top of its list.
        return FetchOutput(items: updates.reversed(), adapterState: .object(newState))
    }
}

/// One traffic-status update: what happens where, how bad it is.
struct TrafficStatus {
    enum Condition: String, CaseIterable {
        case clear, slow, queueing, closed, accident, roadworks

        var headline: String {
            switch self {
            case .clear: return "traffic is flowing freely"
            case .slow: return "slow traffic"
            case .queueing: return "queueing traffic"
            case .closed: return "road closed"
            case .accident: return "accident, lanes blocked"
            case .roadworks: return "roadworks, lane restrictions"
            }
        }

        /// The severities this condition can have, mildest first.
        var severities: [String] {
            switch self {
            case .clear: return ["none"]
            case .slow: return ["low", "moderate"]
            case .queueing: return ["moderate", "high"]
            case .closed: return ["severe"]
            case .accident: return ["moderate", "high", "severe"]
            case .roadworks: return ["low", "moderate"]
            }
        }

        var delayMinutes: ClosedRange<Int> {
            switch self {
            case .clear: return 0...0
            case .slow: return 5...15
            case .queueing: return 10...40
            case .closed: return 30...120
            case .accident: return 15...90
            case .roadworks: return 5...25
            }
        }
    }

    static let roads: [(name: String, directions: [String], junctions: ClosedRange<Int>)] = [
        ("M25", ["clockwise", "anticlockwise"], 1...31),
        ("M1", ["northbound", "southbound"], 1...48),
        ("M6", ["northbound", "southbound"], 1...45),
        ("M4", ["eastbound", "westbound"], 1...49),
        ("M62", ["eastbound", "westbound"], 1...38),
        ("A1(M)", ["northbound", "southbound"], 1...65),
        ("M8", ["eastbound", "westbound"], 1...31),
        ("A14", ["eastbound", "westbound"], 1...60),
    ]

    var road: String
    var direction: String
    var condition: Condition
    var severity: String
    var fromJunction: Int
    var delayMinutes: Int

    static func random(using random: inout some RandomNumberGenerator) -> TrafficStatus {
        let road = roads.randomElement(using: &random)!
        let condition = Condition.allCases.randomElement(using: &random)!
        return TrafficStatus(
            road: road.name,
            direction: road.directions.randomElement(using: &random)!,
            condition: condition,
            severity: condition.severities.randomElement(using: &random)!,
            fromJunction: Int.random(in: road.junctions.lowerBound...(road.junctions.upperBound - 1), using: &random),
            delayMinutes: Int.random(in: condition.delayMinutes, using: &random)
        )
    }

    var location: String { "between J\(fromJunction) and J\(fromJunction + 1)" }

    func item(number: Int, at time: Date) -> Item {
        var title = "\(road) \(direction): \(condition.headline) \(location)"
        if delayMinutes > 0 { title += " (\(severity), +\(delayMinutes) min)" }
        return Item(
            id: "update-\(number)",
            title: title,
            published: time,
            summary: "\(condition.headline.prefix(1).uppercased())\(condition.headline.dropFirst()) on the \(road) \(direction) \(location). Severity: \(severity). Expected delay: \(delayMinutes) minutes.",
            extra: [
                "road": road,
                "direction": direction,
                "status": condition.rawValue,
                "severity": severity,
                "location": location,
                "delay_minutes": String(delayMinutes),
            ]
        )
    }
}
