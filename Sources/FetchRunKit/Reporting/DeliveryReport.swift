import Foundation

/// What outputs did, as text lines and NDJSON: after a run's fetches (`delivery` events), in
/// watch mode as deliveries happen, and for `fetchrun outputs`.
package enum DeliveryReport {
    /// One line per output that sent or failed: `outputs: chat: 3 sent`,
    /// `outputs: mail: 2 not sent (reason); they wait in the outbox`.
    package static func lines(for results: [OutboxDelivery.Result]) -> [String] {
        results.map { result in
            var parts: [String] = []
            if let at = result.digestAt {
                parts.append("collected for the digest at \(TextReport.timestamp(at))")
            }
            if result.delivered > 0 { parts.append("\(result.delivered) sent") }
            if let until = result.heldUntil, result.failed == 0 {
                let reason = result.error.map { " (\(TerminalText.safe($0)))" } ?? ""
                parts.append("nothing sent before \(TextReport.timestamp(until)), as the service asked\(reason); `fetchrun outputs --retry --force` sends now")
            } else if result.failed > 0 || result.error != nil {
                let reason = result.error.map { " (\(TerminalText.safe($0)))" } ?? ""
                let waiting = result.failed - result.givenUp
                if waiting > 0 || result.givenUp == 0 {
                    parts.append("\(waiting) not sent\(reason); \(waiting == 1 ? "it waits" : "they wait") in the outbox (`fetchrun outputs`)")
                }
                if result.givenUp > 0 {
                    parts.append("\(result.givenUp) given up\(waiting > 0 ? "" : reason) (`fetchrun outputs --retry --given-up` sends \(result.givenUp == 1 ? "it" : "them") again)")
                }
            }
            if let until = result.heldUntil, result.failed > 0 {
                parts.append("the service asked for nothing before \(TextReport.timestamp(until))")
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
            json.field("given_up", result.givenUp)
            json.field("error", result.error)
            json.field("not_before", result.heldUntil)
            json.field("digest_at", result.digestAt)
        }
    }

    /// `fetchrun outputs`: each configured output (and any the outbox still names) with what
    /// waits for it.
    /// An output whose service asked to wait (a hold later than `now`) says until when.
    package static func outboxLines(
        outputs: [OutputConfig], pending: [PendingDelivery], delivered: [String: Int], holds: [String: OutputHold] = [:], now: Date, style: TerminalStyle
    ) -> [String] {
        var lines: [String] = []
        let byOutput = Dictionary(grouping: pending, by: \.output)
        let unknown = byOutput.keys.filter { name in !outputs.contains { $0.name == name } }.sorted()
        for output in outputs {
            let rows = byOutput[output.name] ?? []
            let waiting = rows.filter { $0.givenUpAt == nil }
            let givenUp = rows.filter { $0.givenUpAt != nil }
            let failing = waiting.filter { $0.attempts > 0 }
            var line = "\(style.paint(output.name, .bold))  \(output.type)  \(TerminalText.safe(output.output.target))  "
            line += waiting.isEmpty ? style.paint("nothing pending", .green) : style.paint("\(waiting.count) pending", failing.isEmpty ? .yellow : .red)
            if !failing.isEmpty { line += ", \(failing.count) failed at least once" }
            if !givenUp.isEmpty { line += ", " + style.paint("\(givenUp.count) given up", .red) }
            line += "  \(delivered[output.name] ?? 0) sent (last 30 days)"
            lines.append(line)
            if let oldest = waiting.first {
                lines.append("    oldest: \(TerminalText.safe(oldest.delivery.id)) since \(TextReport.timestamp(oldest.createdAt))")
            }
            if let digest = output.digest, let oldest = waiting.first {
                lines.append("    digest \(TerminalText.safe(digest.description)) (\(digest.timeZone.identifier)): sent at \(TextReport.timestamp(digest.next(after: oldest.createdAt)))")
            }
            if let hold = holds[output.name], hold.notBefore > now {
                lines.append("    not before \(TextReport.timestamp(hold.notBefore)): the service asked to wait (\(TerminalText.safe(hold.reason))); `--retry --force` sends now")
            }
            if let last = failing.last, let error = last.lastError {
                lines.append("    last error (\(last.attempts) attempt\(last.attempts == 1 ? "" : "s"), next \(TextReport.timestamp(last.nextAttemptAt))): \(TerminalText.safe(error))")
            }
            for row in givenUp.prefix(Self.givenUpListed) {
                lines.append("    given up: \(TerminalText.safe(row.delivery.id)) (\(row.attempts) attempts since \(TextReport.timestamp(row.createdAt))): \(TerminalText.safe(row.lastError ?? "no error recorded"))")
            }
            if givenUp.count > Self.givenUpListed {
                lines.append("    and \(givenUp.count - Self.givenUpListed) more given up (--format json lists every one)")
            }
            if !givenUp.isEmpty {
                lines.append("    `fetchrun outputs --retry --given-up \(output.name)` sends the given-up ones again")
            }
        }
        for name in unknown {
            lines.append("\(style.paint(name, .bold))  " + style.paint("\(byOutput[name]!.count) pending for an output the config no longer has; they are not sent", .yellow))
        }
        return lines
    }

    /// How many given-up deliveries the text listing names per output.
    static let givenUpListed = 10

    /// One `output` event per output: `pending`, `failed`, `given_up`, `sent`, `oldest`,
    /// `last_error`, `next_attempt`, `not_before` (the service's hold); then a `given_up` event per given-up delivery (`output`,
    /// `id`, `source`, `attempts`, `queued`, `given_up_at`, `last_error`).
    package static func outboxJSONLines(outputs: [OutputConfig], pending: [PendingDelivery], delivered: [String: Int], holds: [String: OutputHold] = [:], now: Date) -> [String] {
        let byOutput = Dictionary(grouping: pending, by: \.output)
        let names = outputs.map(\.name) + byOutput.keys.filter { name in !outputs.contains { $0.name == name } }.sorted()
        let summaries = names.map { name in
            let rows = byOutput[name] ?? []
            let waiting = rows.filter { $0.givenUpAt == nil }
            let failing = waiting.filter { $0.attempts > 0 }
            let config = outputs.first { $0.name == name }
            return JSONEvents.event("output") { json in
                json.field("output", name)
                json.field("type", config?.type)
                json.field("configured", config != nil)
                json.field("pending", waiting.count)
                json.field("failed", failing.count)
                json.field("given_up", rows.count - waiting.count)
                json.field("sent", delivered[name] ?? 0)
                json.field("oldest", waiting.first?.createdAt)
                json.field("last_error", failing.last?.lastError)
                json.field("next_attempt", failing.last?.nextAttemptAt)
                json.field("not_before", holds[name].flatMap { $0.notBefore > now ? $0.notBefore : nil })
            }
        }
        let givenUp = pending.filter { $0.givenUpAt != nil }.map { row in
            JSONEvents.event("given_up") { json in
                json.field("output", row.output)
                json.field("id", row.delivery.id)
                json.field("source", row.delivery.source)
                json.field("attempts", row.attempts)
                json.field("queued", row.createdAt)
                json.field("given_up_at", row.givenUpAt)
                json.field("last_error", row.lastError)
            }
        }
        return summaries + givenUp
    }
}
