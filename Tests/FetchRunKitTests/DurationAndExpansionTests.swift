import Testing
@testable import FetchRunKit

@Suite struct DurationTextTests {
    @Test(arguments: [
        ("250ms", Duration.milliseconds(250)),
        ("30s", .seconds(30)),
        ("5m", .seconds(300)),
        ("1h30m", .seconds(5400)),
        ("1.5s", .milliseconds(1500)),
        ("2h", .seconds(7200)),
        (" 10s ", .seconds(10)),
        ("\t5m", .seconds(300)),
        ("10s\u{00A0}", .seconds(10)),
        ("90d", .seconds(90 * 86_400)),
        ("1d12h", .seconds(36 * 3600)),
    ])
    func parses(text: String, expected: Duration) throws {
        #expect(try DurationText.parse(text) == expected)
    }

    @Test(arguments: ["", "30", "5x", "s", "1h30", "ten seconds", "-5s", "9999h", "367d", "d"])
    func refuses(text: String) {
        #expect(throws: DurationText.ParseError.self) { try DurationText.parse(text) }
    }

    @Test func formatsShortest() {
        #expect(DurationText.format(.milliseconds(250)) == "250ms")
        #expect(DurationText.format(.seconds(30)) == "30s")
        #expect(DurationText.format(.seconds(5400)) == "1h30m")
        #expect(DurationText.format(.milliseconds(1500)) == "1.5s")
    }

    @Test func formatRoundTrips() throws {
        for text in ["250ms", "1s", "90m", "1h", "1h0m5s", "2.25s"] {
            let duration = try DurationText.parse(text)
            #expect(try DurationText.parse(DurationText.format(duration)) == duration)
        }
    }
}

@Suite struct ReportColumnTests {
    /// What `String(format: "%.2fs")` printed before, to the hundredth.
    @Test(arguments: [
        (Duration.zero, "0.00s"),
        (.milliseconds(4), "0.00s"),
        (.milliseconds(5), "0.01s"),
        (.milliseconds(1234), "1.23s"),
        (.milliseconds(1235), "1.24s"),
        (.milliseconds(59_999), "60.00s"),
        (.seconds(3600), "3600.00s"),
        (.milliseconds(-250), "-0.25s"),
    ])
    func secondsToTheHundredth(duration: Duration, expected: String) {
        #expect(TextReport.seconds(duration) == expected)
    }

    @Test func aDurationBeyondAnyRunIsStillPrinted() {
        #expect(TextReport.seconds(.seconds(Int64.max)) == "\(Int64.max)s")
    }

    @Test func columnsPadAndCutByCharacters() {
        #expect("feed".column(6) == "feed  ")
        #expect("feed".column(4) == "feed")
        #expect("feeds-of-the-day".column(5) == "feeds")
        #expect("é✓".column(3) == "é✓ ")
        #expect("🇫🇷x".column(2) == "🇫🇷x")
        #expect("x".column(0) == "")
        #expect("7".leftPadded(3) == "  7")
    }
}

@Suite struct EnvironmentExpansionTests {
    let expansion = EnvironmentExpansion(environment: ["TOKEN": "s3cret", "EMPTY": ""])

    @Test func expandsVariablesAndDefaults() throws {
        #expect(try expansion.expand("Bearer ${TOKEN}") == "Bearer s3cret")
        #expect(try expansion.expand("${MISSING:-fallback}") == "fallback")
        #expect(try expansion.expand("${EMPTY:-fallback}") == "fallback")
        #expect(try expansion.expand("${TOKEN:-x}") == "s3cret")
        #expect(try expansion.expand("${MISSING:-}") == "")
    }

    @Test func leavesOtherDollarsAlone() throws {
        #expect(try expansion.expand("costs $5") == "costs $5")
        #expect(try expansion.expand("$${TOKEN}") == "${TOKEN}")
        #expect(try expansion.expand("no variables") == "no variables")
    }

    @Test func unsetVariableWithoutDefaultIsAnError() {
        #expect(throws: EnvironmentExpansion.ExpansionError.self) { try expansion.expand("${MISSING}") }
        #expect(throws: EnvironmentExpansion.ExpansionError.self) { try expansion.expand("${TOKEN") }
        #expect(throws: EnvironmentExpansion.ExpansionError.self) { try expansion.expand("${1BAD}") }
    }
}
