import Foundation

extension FetchPipeline {
    /// `notify_when:`, when the source has one: its news is sent only as the condition becomes
    /// true (``NotifyCondition/decide(_:previous:isBaseline:)``); the report says why it was or
    /// was not. Returns the condition's state to record.
    /// - Parameters:
    ///   - until: when a `matches` pattern must stop (the source's deadline).
    ///   - isFirstFetch: there was no snapshot: this fetch sets the baseline.
    func notifyWhen(
        _ output: FetchOutput, of source: SourceConfig, under lease: SourceLease, until deadline: ContinuousClock.Instant, isFirstFetch: Bool,
        found: inout (report: SourceReport, snapshot: Snapshot?, deliveries: [QueuedDelivery])
    ) -> NotifyCondition.State? {
        guard let condition = source.routing.notifyWhen else { return nil }
        let watched = (source.adapter as? any SelectionWatching)?.watchesOneSelection == true
        let budget = UserPattern.MatchBudget(deadline: deadline, on: clock)
        let evaluation = condition.evaluate(
            NotifyCondition.text(of: output.items, selection: watched), reference: lease.state.condition?.reference,
            format: source.routing.numberFormat, budget: budget
        )
        let decision = condition.decide(evaluation, previous: lease.state.condition, isBaseline: isFirstFetch && !source.routing.sendBaseline)
        if decision.send {
            found.report.notes.append(TerminalText.safe("notify_when: \(evaluation.reason): sent", maximumLength: 300))
        } else if !found.deliveries.isEmpty {
            found.report.notes.append(TerminalText.safe("notify_when: \(evaluation.reason): not sent", maximumLength: 300))
            found.deliveries = []
        }
        return decision.state
    }
}
