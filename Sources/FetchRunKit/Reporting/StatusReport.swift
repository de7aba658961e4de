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

    /// One `status` event per source.
    public static func jsonLines(for sources: [(config: SourceConfig, state: SourceState)]) -> [String] {
        sources.map { config, state in
            JSONEvents.event("status") { json in
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
    }
}
