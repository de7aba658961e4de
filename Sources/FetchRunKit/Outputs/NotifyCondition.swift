import Foundation

/// `notify_when:`: what a source's text must show for its news to be sent — a word appearing
/// or disappearing, a pattern, or a number below, above or moved by an amount — alone or with
/// others under `any:` / `all:`.
///
/// It is edge-triggered (``decide(_:previous:isBaseline:)``): a source's news is sent when its
/// condition becomes true, once, and again only after it has been false. What a fetch finds is
/// recorded whatever the condition says (snapshot, history); only the sending waits for it.
package indirect enum NotifyCondition: Sendable, Hashable {
    case appears(String)
    case disappears(String)
    case matches(UserPattern)
    case value(ValueTest)
    case any([NotifyCondition])
    case all([NotifyCondition])

    /// A test on the first number of the text.
    package enum ValueTest: Sendable, Hashable {
        case below(Double)
        case above(Double)
        /// Moved by at least this much since the value of the last notification (or the first
        /// value seen): an amount, or a share of that value (`percent`).
        case changesBy(Double, percent: Bool)
    }

    /// What the condition says of one text.
    package struct Evaluation: Sendable, Equatable {
        package var isMet: Bool
        /// The number the text held, when the condition reads one.
        package var value: Double?
        /// Why, in words: `"In stock" appears`, `no number in the text`, `99 is below 100`.
        package var reason: String
    }

    /// Evaluates the condition on `text`; `reference` is the value `changes_by` measures from.
    /// A `matches` pattern still matching when `budget` runs out is "not met".
    package func evaluate(_ text: String, reference: Double?, format: NumberText.Format?, budget: UserPattern.MatchBudget = .unbounded) -> Evaluation {
        switch self {
        case .appears(let word):
            let found = text.contains(word)
            return Evaluation(isMet: found, reason: "\"\(word)\" \(found ? "appears" : "does not appear")")
        case .disappears(let word):
            let found = text.contains(word)
            return Evaluation(isMet: !found, reason: "\"\(word)\" \(found ? "is there" : "is not there")")
        case .matches(let pattern):
            do {
                let found = try pattern.matches(text, budget: budget)
                return Evaluation(isMet: found, reason: "/\(pattern)/ \(found ? "matches" : "does not match")")
            } catch {
                return Evaluation(isMet: false, reason: "/\(pattern)/ was still matching at the source's deadline")
            }
        case .value(let test):
            guard let value = NumberText.firstNumber(in: text, format: format) else {
                return Evaluation(isMet: false, reason: "no number in the text")
            }
            let shown = Self.shown(value)
            switch test {
            case .below(let limit):
                return Evaluation(isMet: value < limit, value: value, reason: "\(shown) is \(value < limit ? "" : "not ")below \(Self.shown(limit))")
            case .above(let limit):
                return Evaluation(isMet: value > limit, value: value, reason: "\(shown) is \(value > limit ? "" : "not ")above \(Self.shown(limit))")
            case .changesBy(let amount, let percent):
                guard let reference else { return Evaluation(isMet: false, value: value, reason: "\(shown): the first value, nothing to compare with") }
                let moved = abs(value - reference)
                let threshold = percent ? abs(reference) * amount / 100 : amount
                let met = moved >= threshold && moved > 0
                return Evaluation(isMet: met, value: value, reason: "\(shown) moved \(Self.shown(moved)) from \(Self.shown(reference)) (\(met ? "" : "less than ")\(Self.shown(amount))\(percent ? " %" : ""))")
            }
        case .any(let conditions), .all(let conditions):
            let isAll = if case .all = self { true } else { false }
            let evaluations = conditions.map { $0.evaluate(text, reference: reference, format: format, budget: budget) }
            let met = isAll ? evaluations.allSatisfy(\.isMet) : evaluations.contains(where: \.isMet)
            return Evaluation(
                isMet: met, value: evaluations.lazy.compactMap(\.value).first,
                reason: (isAll ? "all of: " : "any of: ") + evaluations.map(\.reason).joined(separator: "; ")
            )
        }
    }

    /// What a source's state keeps between fetches: whether the condition held, and the value
    /// `changes_by` measures from.
    package struct State: Sendable, Equatable {
        package var isMet: Bool
        package var reference: Double?

        package init(isMet: Bool, reference: Double?) {
            self.isMet = isMet
            self.reference = reference
        }
    }

    /// The edge rule: send when the condition becomes true (not at a baseline, which sets the
    /// state only), and the state to keep. A `changes_by` that fired measures from the new value
    /// afterwards, and counts as false again, so that the next move of that size fires too.
    package func decide(_ evaluation: Evaluation, previous: State?, isBaseline: Bool) -> (send: Bool, state: State) {
        let wasMet = previous?.isMet ?? false
        let send = evaluation.isMet && !wasMet && !isBaseline
        var reference = previous?.reference ?? evaluation.value
        var isMet = evaluation.isMet
        if Self.measuresChange(self), evaluation.isMet {
            reference = evaluation.value
            isMet = false
        }
        return (send, State(isMet: isMet, reference: reference))
    }

    private static func measuresChange(_ condition: NotifyCondition) -> Bool {
        if case .value(.changesBy) = condition { return true }
        return false
    }

    /// The text a condition reads of a fetch's items: a watched selection's text (its item's
    /// summary), or every item's title and summary; at most 1 MiB of it.
    package static func text(of items: [Item], selection: Bool) -> String {
        var text = ""
        for item in items {
            let parts = selection ? [item.summary ?? item.title] : [item.title, item.summary ?? ""]
            for part in parts where !part.isEmpty {
                if !text.isEmpty { text += "\n" }
                text += part
            }
            if text.utf8.count > 1 << 20 { break }
        }
        return text
    }

    /// A number as people read it: no `.0` on a whole one.
    package static func shown(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
