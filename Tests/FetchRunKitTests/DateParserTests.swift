import Foundation
import Testing
@testable import FetchRunKit

@Suite struct DateParserTests {
    /// 2003-06-10T04:00:00Z
    let reference = Date(timeIntervalSince1970: 1_055_217_600)

    @Test(arguments: [
        "Tue, 10 Jun 2003 04:00:00 GMT",
        "Tue, 10 Jun 2003 04:00:00 +0000",
        "Tue, 10 Jun 2003 04:00:00 UT",
        "Tue, 10 Jun 2003 04:00:00 Z",
        "Tue,10 Jun 2003 04:00:00 GMT",
        "10 Jun 2003 04:00:00 GMT",           // no day name
        "Fri, 10 Jun 2003 04:00:00 GMT",      // wrong day name
        "Tuesday, 10 June 2003 04:00:00 GMT", // long names
        "Tue, 10 Jun 03 04:00:00 GMT",        // two-digit year
        "Tue, 10 Jun 2003 04:00 GMT",         // no seconds
        "Tue, 10 Jun 2003 4:00:00 GMT",       // one-digit hour
        "Tue, 10 jun 2003 04:00:00 gmt",      // lower case
        "Tue, 10 Jun 2003 00:00:00 EDT",      // named zone, -4
        "Mon, 09 Jun 2003 23:00:00 EST",      // -5
        "Mon, 09 Jun 2003 21:00:00 PDT",      // -7
        "Tue, 10 Jun 2003 06:00:00 CEST",     // +2
        "Tue, 10 Jun 2003 05:00:00 +0100",
        "Tue, 10 Jun 2003 05:00:00 +01:00",
        "Mon, 09 Jun 2003 23:30:00 -0430",
        "  Tue,  10 Jun 2003   04:00:00 GMT  ",
        "Tue, 10 Jun 2003 04:00:00",          // no zone: UTC
        "Tue, 10 Jun 2003 04:00:00 A",        // military zones read as UTC
    ])
    func rfc822Variants(text: String) {
        #expect(DateParser.parse(text) == reference, "\(text)")
    }

    @Test(arguments: [
        "2003-06-10T04:00:00Z",
        "2003-06-10T04:00:00.000Z",
        "2003-06-10T06:00:00+02:00",
        "2003-06-10T06:00:00+0200",
        "2003-06-09T23:00:00-05:00",
        "2003-06-10t04:00:00z",
        "2003-06-10 04:00:00Z",
        "2003-06-10T04:00Z",
        "2003-06-10T04:00:00",
    ])
    func rfc3339Variants(text: String) {
        #expect(DateParser.parse(text) == reference, "\(text)")
    }

    @Test func fractionsAndTruncatedW3CDTF() {
        let fraction = DateParser.parse("2003-06-10T04:00:00.25Z")
        #expect(fraction == reference.addingTimeInterval(0.25))
        #expect(DateParser.parse("2003-06-10") == Date(timeIntervalSince1970: 1_055_203_200))
        #expect(DateParser.parse("2003-06") == Date(timeIntervalSince1970: 1_054_425_600))
        #expect(DateParser.parse("2003") == Date(timeIntervalSince1970: 1_041_379_200))
    }

    @Test func twoDigitYearsPivotAtFifty() {
        #expect(DateParser.parse("01 Jan 49 00:00:00 GMT") == Date(timeIntervalSince1970: 2_493_072_000))
        #expect(DateParser.parse("01 Jan 50 00:00:00 GMT") == Date(timeIntervalSince1970: -631_152_000))
    }

    @Test(arguments: [
        "", "yesterday", "31 Jun 2003 04:00:00 GMT", "29 Feb 2003 00:00:00 GMT", "10 Jun 2003 25:00:00 GMT",
        "Tue, Jun 2003 04:00:00 GMT", "2003-13-01T00:00:00Z", "2003-06-10T04:00:00+25:00", "2003-06-10T04", "10 Foo 2003",
        // An offset of twenty digits once overflowed while it was read (found by fuzzing).
        "10 Jun 2003 04:00:00 -99999999999999999999", "10 Jun 2003 04:00:00 +01000",
    ])
    func impossibleOrUnreadableDates(text: String) {
        #expect(DateParser.parse(text) == nil, "\(text)")
    }

    @Test func leapDayInALeapYear() {
        #expect(DateParser.parse("29 Feb 2024 12:00:00 GMT") == Date(timeIntervalSince1970: 1_709_208_000))
    }
}

@Suite struct HTMLEntitiesTests {
    @Test func decodesNumericAndNamedReferences() {
        #expect(HTMLEntities.decode("It&#8217;s &quot;here&quot; &mdash; &eacute;t&#xE9;") == "It’s \"here\" — été")
        #expect(HTMLEntities.decode("AT&amp;T") == "AT&T")
    }

    @Test func leavesUnknownAndBrokenReferencesAlone() {
        #expect(HTMLEntities.decode("fish & chips") == "fish & chips")
        #expect(HTMLEntities.decode("&unknown; &#; &#x110000;") == "&unknown; &#; &#x110000;")
        #expect(HTMLEntities.decode("&#0;") == "&#0;")
    }
}
