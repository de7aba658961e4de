import Foundation

/// `fetchrun status`: each source's health from the state database, as text or NDJSON.
package struct StatusReport: Sendable {
    package var style: TerminalStyle

    /// Lines coloured with ANSI escapes when `colored`.
    public init(colored: Bool = false) {
        self.init(style: TerminalStyle(colored: colored))
    }

    package init(style: TerminalStyle) {
        self.style = style
    }

    /// A line per source — name, health, items, last success, next due time, interval — and,
    /// under a failing one, its last error.
    public func lines(for sources: [(config: SourceConfig, state: SourceState)]) -> [String] {
        let width = sources.map { TerminalText.safe($0.config.name).count }.max() ?? 0
        var lines: [String] = []
        for (config, state) in sources {
            let name = TerminalText.safe(config.name).column(width)
            let health: String
            switch state.health {
            case .ok: health = style.paint("ok", .green)
            case .neverFetched: health = style.paint("never fetched", .yellow)
            case .failing:
                let since = state.failingSince.map { " since \(TextReport.timestamp($0))" } ?? ""
                health = style.paint("failing\(since), \(state.consecutiveFailures) in a row", .red)
            }
            var columns = ["\(name)  \(health)", "\(state.itemCount) item\(state.itemCount == 1 ? "" : "s")"]
            columns.append("last success " + (state.lastSuccess.map(TextReport.timestamp) ?? "never"))
            if config.settings.interval == .never {
                columns.append("interval never")
            } else {
                columns.append("due " + (state.nextDue.map(TextReport.timestamp) ?? "now"))
                let interval = state.currentInterval ?? { if case .every(let interval) = config.settings.interval { return interval } else { return nil } }()
                if let interval { columns.append("interval \(DurationText.format(interval))") }
            }
            lines.append(columns.joined(separator: "  "))
            if state.health == .failing, let error = state.lastError {
                lines.append("    last error (\(TextReport.timestamp(error.at))): \(error.kind.rawValue): \(TerminalText.safe(error.message))")
            }
            if let hint = state.movedHint {
                lines.append("    " + style.paint(TerminalText.safe(hint), .yellow))
            }
        }
        return lines
    }

    /// A `status` event's members (after `event`), for ``StatusDocument``.
    fileprivate static func writeStatus(of config: SourceConfig, _ state: SourceState, into json: inout JSONWriter) {
        json.field("source", config.name)
        json.field("type", config.type)
        json.field("health", state.health == .neverFetched ? "never_fetched" : state.health.rawValue)
        json.field("consecutive_failures", state.consecutiveFailures)
        json.field("failing_since", state.failingSince)
        json.field("last_fetch", state.lastFetch)
        json.field("last_outcome", state.lastOutcome)
        json.field("last_success", state.lastSuccess)
        json.field("next_due", state.nextDue)
        json.field("interval_ms", state.currentInterval?.milliseconds)
        json.field("items", state.itemCount)
        if let movedTo = state.movedTo {
            json.key("moved")
            json.beginObject()
            json.field("to", movedTo)
            json.field("fetches", state.movedCount)
            json.endObject()
        }
        if let error = state.lastError {
            json.key("last_error")
            json.beginObject()
            json.field("kind", error.kind.rawValue)
            json.field("message", error.message)
            json.field("at", error.at)
            json.endObject()
        }
    }
}

/// The sources `fetchrun status` and `/status` show, with their recorded states. As JSON it is
/// rendered a range of sources at a time, so that a response of 100,000 sources holds its
/// bytes once rather than as a string per line, those strings joined, and the joined copy.
package struct StatusDocument: Sendable {
    /// The sources shown, in the config's order.
    package let sources: [SourceConfig]
    let states: [String: SourceState]

    package init(sources: [SourceConfig], states: [String: SourceState]) {
        self.sources = sources
        self.states = states
    }

    /// A source's recorded state; one the store has never seen shows as never fetched.
    package func state(of source: SourceConfig) -> SourceState {
        states[source.name] ?? SourceState(name: source.name)
    }

    /// The NDJSON lines of `sources[range]` (a `status` event each, a newline after each).
    /// - Precondition: `range` lies within `sources.indices`.
    package func jsonLines(_ range: Range<Int>) -> [UInt8] {
        // A line is ~260 bytes; one with a last error, more.
        var json = JSONWriter(capacity: range.count * 320)
        for config in sources[range] {
            let state = state(of: config)
            JSONEvents.appendLine(event: "status", to: &json) { StatusReport.writeStatus(of: config, state, into: &$0) }
        }
        return json.bytes
    }
}
