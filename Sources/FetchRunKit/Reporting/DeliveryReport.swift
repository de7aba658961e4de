import Foundation

/// What outputs did, as text lines and NDJSON: after a run's fetches (`delivery` events), in
/// watch mode as deliveries happen, and for `fetchrun outputs`.
package enum DeliveryReport {
    /// One line per output that sent or failed: `outputs: chat: 3 sent`,
    /// `outputs: mail: 2 not sent (reason); they wait in the outbox`.
    package static func lines(for results: [OutboxDelivery.Result]) -> [String] {
        results.map { result in
            var parts: [String] = []
            if result.delivered > 0 { parts.append("\(result.delivered) sent") }
            if result.failed > 0 || result.error != nil {
                let reason = result.error.map { " (\(TerminalText.safe($0)))" } ?? ""
                parts.append("\(result.failed) not sent\(reason); they wait in the outbox (`fetchrun outputs`)")
            }
            return "outputs: \(result.output): " + parts.joined(separator: ", ")
        }
    }

    /// `{"event":"delivery","output":…,"delivered":n,"failed":m,"error":…}`.
    package static func jsonLine(for result: OutboxDelivery.Result) -> String {
        JSONEvents.event("delivery") { json in
            json.field("output", result.output)
            json.field("delivered", result.delivered)
            json.field("failed", result.failed)
            json.field("error", result.error)
        }
    }

    /// `fetchrun outputs`: each configured output (and any the outbox still names) with what
    /// waits for it.
    package static func outboxLines(outputs: [OutputConfig], pending: [PendingDelivery], delivered: [String: Int], style: TerminalStyle) -> [String] {
        var lines: [String] = []
        let byOutput = Dictionary(grouping: pending, by: \.output)
        let unknown = byOutput.keys.filter { name in !outputs.contains { $0.name == name } }.sorted()
        for output in outputs {
            let waiting = byOutput[output.name] ?? []
            let failing = waiting.filter { $0.attempts > 0 }
            var line = "\(style.paint(output.name, .bold))  \(output.type)  \(TerminalText.safe(output.output.target))  "
            line += waiting.isEmpty ? style.paint("nothing pending", .green) : style.paint("\(waiting.count) pending", failing.isEmpty ? .yellow : .red)
            if !failing.isEmpty { line += ", \(failing.count) failed at least once" }
            line += "  \(delivered[output.name] ?? 0) sent (last 30 days)"
            lines.append(line)
            if let oldest = waiting.first {
                lines.append("    oldest: \(TerminalText.safe(oldest.delivery.id)) since \(TextReport.timestamp(oldest.createdAt))")
            }
            if let last = failing.last, let error = last.lastError {
                lines.append("    last error (\(last.attempts) attempt\(last.attempts == 1 ? "" : "s"), next \(TextReport.timestamp(last.nextAttemptAt))): \(TerminalText.safe(error))")
            }
        }
        for name in unknown {
            lines.append("\(style.paint(name, .bold))  " + style.paint("\(byOutput[name]!.count) pending for an output the config no longer has; they are not sent", .yellow))
        }
        return lines
    }

    /// One `output` event per output: `pending`, `failed`, `sent`, `oldest`, `last_error`, `next_attempt`.
    package static func outboxJSONLines(outputs: [OutputConfig], pending: [PendingDelivery], delivered: [String: Int]) -> [String] {
        let byOutput = Dictionary(grouping: pending, by: \.output)
        let names = outputs.map(\.name) + byOutput.keys.filter { name in !outputs.contains { $0.name == name } }.sorted()
        return names.map { name in
            let waiting = byOutput[name] ?? []
            let failing = waiting.filter { $0.attempts > 0 }
            let config = outputs.first { $0.name == name }
            return JSONEvents.event("output") { json in
                json.field("output", name)
                json.field("type", config?.type)
                json.field("configured", config != nil)
                json.field("pending", waiting.count)
                json.field("failed", failing.count)
                json.field("sent", delivered[name] ?? 0)
                json.field("oldest", waiting.first?.createdAt)
                json.field("last_error", failing.last?.lastError)
                json.field("next_attempt", failing.last?.nextAttemptAt)
            }
        }
    }
}
