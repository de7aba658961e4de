import Foundation
import Testing
@testable import FetchRunKit

/// `notify_when:`: numbers read as people write them, each condition, and the edge rule.
@Suite struct NotifyConditionTests {
    @Test(arguments: [
        ("1.299,00 €", nil, 1299.0), ("$1,299.00", nil, 1299.0), ("1 299 €", nil, 1299.0), ("1\u{00A0}299,50 €", nil, 1299.5),
        ("CHF 1'299.–", nil, 1299.0), ("CHF 1’299.50", nil, 1299.5), ("1,299", nil, 1299.0), ("12,5 %", nil, 12.5), ("3.14", nil, 3.14),
        ("1.299.000 Einwohner", nil, 1_299_000.0), ("Preis: 99 € (statt 129 €)", nil, 99.0), ("-3,5 °C", nil, -3.5), ("X-100", nil, 100.0),
        ("1,299", NumberText.Format.de, 1.299), ("1.299", NumberText.Format.en, 1.299), ("1.299", NumberText.Format.de, 1299.0),
        ("1 299,00 €", NumberText.Format.fr, 1299.0), ("1'299.00", NumberText.Format.ch, 1299.0), ("¥１２３ 45", nil, 45.0),
        ("価格 2,980円", nil, 2980.0), ("₹1,23,456", nil, 123_456.0),
    ] as [(String, NumberText.Format?, Double)])
    func numbersAreReadAsWritten(text: String, format: NumberText.Format?, expected: Double) {
        #expect(NumberText.firstNumber(in: text, format: format) == expected, "\(text)")
    }

    @Test func aTextWithoutANumberHasNone() {
        #expect(NumberText.firstNumber(in: "Ausverkauft") == nil)
        #expect(NumberText.firstNumber(in: "") == nil)
        let none = NotifyCondition.value(.below(100)).evaluate("Sold out", reference: nil, format: nil)
        #expect(!none.isMet && none.value == nil && none.reason == "no number in the text")
    }

    @Test func eachConditionSaysWhetherItHoldsAndWhy() throws {
        let text = "Kaffeemühle\n1.099,00 €\nIn stock"
        #expect(NotifyCondition.appears("In stock").evaluate(text, reference: nil, format: nil).isMet)
        #expect(!NotifyCondition.disappears("In stock").evaluate(text, reference: nil, format: nil).isMet)
        #expect(NotifyCondition.matches(try UserPattern("(?i)in\\s+STOCK")).evaluate(text, reference: nil, format: nil).isMet)
        let below = NotifyCondition.value(.below(1_100)).evaluate(text, reference: nil, format: nil)
        #expect(below.isMet && below.value == 1099 && below.reason == "1099 is below 1100")
        #expect(!NotifyCondition.value(.above(1_100)).evaluate(text, reference: nil, format: nil).isMet)
        #expect(NotifyCondition.value(.changesBy(5, percent: true)).evaluate(text, reference: 1_299, format: nil).isMet)
        #expect(!NotifyCondition.value(.changesBy(5, percent: true)).evaluate(text, reference: 1_120, format: nil).isMet)
        #expect(NotifyCondition.value(.changesBy(100, percent: false)).evaluate(text, reference: 1_199, format: nil).isMet)
        #expect(!NotifyCondition.value(.changesBy(5, percent: true)).evaluate(text, reference: nil, format: nil).isMet)
        let both = NotifyCondition.all([.appears("In stock"), .value(.below(1_000))]).evaluate(text, reference: nil, format: nil)
        #expect(!both.isMet && both.reason == "all of: \"In stock\" appears; 1099 is not below 1000")
        #expect(NotifyCondition.any([.appears("Sold out"), .value(.below(1_100))]).evaluate(text, reference: nil, format: nil).isMet)
    }

    /// Sent once as it becomes true, again only after it was false; a baseline only sets it.
    @Test func theEdgeRuleSendsOnceWhenTheConditionBecomesTrue() {
        let condition = NotifyCondition.appears("In stock")
        var state: NotifyCondition.State?
        var sent: [Bool] = []
        for (text, baseline) in [("In stock", true), ("In stock", false), ("Sold out", false), ("In stock", false), ("In stock now", false)] {
            let decision = condition.decide(condition.evaluate(text, reference: nil, format: nil), previous: state, isBaseline: baseline)
            sent.append(decision.send)
            state = decision.state
        }
        #expect(sent == [false, false, false, true, false])
    }

    /// `changes_by` measures from the value of the last notification: each move of its size fires.
    @Test func aChangeByMeasuresFromTheLastNotification() {
        let condition = NotifyCondition.value(.changesBy(10, percent: true))
        var state: NotifyCondition.State?
        var sent: [Bool] = []
        for (price, baseline) in [("100 €", true), ("105 €", false), ("111 €", false), ("115 €", false), ("99 €", false)] {
            let decision = condition.decide(condition.evaluate(price, reference: state?.reference, format: nil), previous: state, isBaseline: baseline)
            sent.append(decision.send)
            state = decision.state
        }
        // 100 (the reference), 105 (5 %), 111 (11 %: sent; the reference is 111), 115, 99 (10.8 %: sent).
        #expect(sent == [false, false, true, false, true])
        #expect(state?.reference == 99)
    }

    @Test func conditionsAreReadFromTheConfigAndMistakesNamed() throws {
        let config = try ConfigLoader(environment: [:]).load(text: """
            defaults: { notify_when: { disappears: "Sold out" } }
            sources:
              - { name: a, type: random-news }
              - { name: b, type: random-news, number_format: de, notify_when: { any: [ { value: { below: 100 } }, { value: { changes_by: "5%" } }, { matches: "(?i)cancel+ed" } ] } }
            """, file: "sources.yaml", directory: "/")
        #expect(config.sources[0].routing.notifyWhen == .disappears("Sold out"))
        #expect(config.sources[1].routing.numberFormat == .de)
        #expect(config.sources[1].routing.notifyWhen == .any([.value(.below(100)), .value(.changesBy(5, percent: true)), .matches(try UserPattern("(?i)cancel+ed"))]))
        for (yaml, message) in [
            ("{ appears: a, disappears: b }", "'notify_when' must be a mapping with one condition"),
            ("{ soon: x }", "'notify_when': unknown condition 'soon'"),
            ("{ value: { under: 3 } }", "unknown test 'under'"),
            ("{ value: { changes_by: \"-5%\" } }", "'changes_by' must be an amount or a share"),
            ("{ all: [] }", "'notify_when' 'all' must be a list of conditions"),
            ("{ matches: \"(\" }", "'notify_when' 'matches':"),
        ] {
            #expect(throws: (any Error).self, "\(yaml)") {
                _ = try ConfigLoader(environment: [:]).load(text: "sources:\n  - { name: a, type: random-news, notify_when: \(yaml) }\n", file: "sources.yaml", directory: "/")
            }
            do {
                _ = try ConfigLoader(environment: [:]).load(text: "sources:\n  - { name: a, type: random-news, notify_when: \(yaml) }\n", file: "sources.yaml", directory: "/")
            } catch {
                #expect("\(error)".contains(message), "\(yaml): \(error)")
            }
        }
    }

    @Test func aStateKeepsTheConditionAndAHostileOneReadsAsNone() {
        var state = SourceState(name: "s")
        state.condition = NotifyCondition.State(isMet: true, reference: 1_299.5)
        #expect(SourceState(name: "s", json: state.json, nextDue: nil).condition == state.condition)
        #expect(SourceState(name: "s", json: #"{"condition_met": "yes", "condition_value": 1}"#, nextDue: nil).condition == nil)
        #expect(SourceState(name: "s", json: #"{"condition_met": false, "condition_value": "x"}"#, nextDue: nil).condition == NotifyCondition.State(isMet: false, reference: nil))
    }
}
