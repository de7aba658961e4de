import Foundation
import Testing
@testable import FetchRunKit

@Suite struct JSONWriterTests {
    @Test func stringsSurviveEscapingExactly() throws {
        let tricky = "quote \" backslash \\ newline \n tab \t bell \u{07} slash / émoji 🎉 nul-free"
        var json = JSONWriter()
        json.beginObject()
        json.field("text", tricky)
        json.endObject()
        let decoded = try JSONSerialization.jsonObject(with: Data(json.bytes)) as? [String: String]
        #expect(decoded?["text"] == tricky)
        #expect(!json.string.contains("\\/"))
    }

    @Test func valuesAndNesting() throws {
        var json = JSONWriter()
        json.value(JSONValue.object(["a": .array([.number(1), .number(0.5), .bool(true), .null, .string("x")]), "b": .object([:])]))
        #expect(json.string == #"{"a":[1,0.5,true,null,"x"],"b":{}}"#)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(json.bytes)) == .object(["a": .array([.number(1), .number(0.5), .bool(true), .null, .string("x")]), "b": .object([:])]))
    }

    @Test func datesAreRFC3339ToTheSecond() {
        #expect(CalendarText.rfc3339String(from: Date(timeIntervalSince1970: 1_055_217_600.75)) == "2003-06-10T04:00:00Z")
        #expect(CalendarText.rfc822String(from: Date(timeIntervalSince1970: 1_055_217_600)) == "Tue, 10 Jun 2003 04:00:00 +0000")
        #expect(CalendarText.rfc3339String(from: Date(timeIntervalSince1970: -86_400)) == "1969-12-31T00:00:00Z")
        // What is written reads back.
        let date = Date(timeIntervalSince1970: 1_709_208_000)
        #expect(DateParser.parse(CalendarText.rfc3339String(from: date)) == date)
        #expect(DateParser.parse(CalendarText.rfc822String(from: date)) == date)
        // A JSON value is the same text, quoted, written straight into the writer's bytes.
        let written: [(TimeInterval, String)] = [
            (0, "1970-01-01T00:00:00Z"), (1_709_251_199.999, "2024-02-29T23:59:59Z"),
            (-30_610_224_000, "1000-01-01T00:00:00Z"), (253_402_300_799, "9999-12-31T23:59:59Z"),
        ]
        for (seconds, text) in written {
            var json = JSONWriter()
            json.beginArray()
            json.value(Date(timeIntervalSince1970: seconds))
            json.value(Date(timeIntervalSince1970: seconds))
            json.endArray()
            #expect(json.string == "[\"\(text)\",\"\(text)\"]")
            #expect(CalendarText.rfc3339String(from: Date(timeIntervalSince1970: seconds)) == text)
        }
    }

    @Test func snapshotFileReadsBackWithJSONDecoder() throws {
        let snapshot = Snapshot(
            source: "s", type: "rss", updatedAt: Date(timeIntervalSince1970: 1_700_000_000),
            items: [Item(id: "1", title: "A \"quoted\"\ntitle", summary: "<p>x</p>", extra: ["k": "v"]), Item(id: "2", title: "B")],
            validators: HTTPValidators(etag: "W/\"x\""), adapterState: .object(["n": .number(3)])
        )
        let decoded = try SnapshotCoding.decoder.decode(Snapshot.self, from: snapshot.jsonData())
        #expect(decoded == snapshot)
        let text = String(decoding: snapshot.jsonData(), as: UTF8.self)
        // One item per line: a diff of two snapshots shows which items changed.
        #expect(text.split(separator: "\n").filter { $0.contains("\"id\":") }.count == 2)
    }
}

@Suite struct JSONReaderTests {
    func fullSnapshot() -> Snapshot {
        let second = Date(timeIntervalSince1970: 1_700_000_000)
        let items = [
            Item(
                id: "1", title: "A \"quoted\"\ntitle \u{07} \\ émoji 🎉", link: "https://h/a?b=c&d", published: second, updated: second.addingTimeInterval(60),
                summary: "<p>x</p>", author: "Ann", enclosures: [Enclosure(url: "https://h/e.mp3", type: "audio/mpeg", length: 1 << 40, file: "/m/e.mp3"), Enclosure(url: "https://h/f")],
                extra: ["k": "v", "road": "A1 \u{1F}"]
            ),
            Item(id: "2", title: ""),
        ]
        return Snapshot(
            source: "s", type: "rss", updatedAt: second, items: items,
            validators: HTTPValidators(etag: "W/\"x\"", lastModified: "Tue, 10 Jun 2003 04:00:00 GMT"),
            adapterState: .object(["n": .number(3), "half": .number(-0.5), "list": .array([.bool(true), .null, .string("\u{10FFFF}")]), "nested": .object([:])])
        )
    }

    @Test func everyFieldReadsBackAsJSONDecoderReadsIt() throws {
        let data = fullSnapshot().jsonData()
        let fast = try Snapshot(json: data)
        #expect(fast == fullSnapshot())
        #expect(fast == (try SnapshotCoding.decoder.decode(Snapshot.self, from: data)))
    }

    @Test func escapesAndUnknownMembersAreRead() throws {
        let text = #"{"version":1,"source":"s","type":"t","updated_at":"2023-11-14T22:13:20Z","future":{"deep":[1,2,{"x":null}]},"validators":null,"items":[{"id":"\u00e9\ud83c\udf89\/\b\f\r\t","title":"t","enclosures":null,"extra":null,"new":true}]}"#
        let snapshot = try Snapshot(json: Data(text.utf8))
        #expect(snapshot.items.first?.id == "é🎉/\u{08}\u{0C}\r\t")
        #expect(snapshot.validators == nil)
        #expect(snapshot.items.first?.enclosures.isEmpty == true)
    }

    @Test func brokenAndHostileFilesFailWithWhereAndWhyNeverATrap() {
        let valid = String(decoding: fullSnapshot().jsonData(), as: UTF8.self)
        let cases: [(String, String)] = [
            (String(valid.prefix(valid.count / 2)), "not valid JSON"),
            (valid + "x", "more data after the end"),
            (valid.replacingOccurrences(of: #""id":"2""#, with: #""id":2"#), "wrong type at 'items.1.id' (expected a string)"),
            (valid.replacingOccurrences(of: #""id":"2","#, with: ""), "missing field 'id' at 'items.1'"),
            (valid.replacingOccurrences(of: #""length":1099511627776"#, with: #""length":99999999999999999999"#), "expected an integer that fits 64 bits"),
            (valid.replacingOccurrences(of: #""length":1099511627776"#, with: #""length":1.5"#), "expected a whole number"),
            (valid.replacingOccurrences(of: #""source":"s""#, with: #""source":"\ud800x""#), "lone surrogate"),
            (valid.replacingOccurrences(of: #""source":"s""#, with: "\"source\":\"a\u{01}b\""), "control character"),
            (valid.replacingOccurrences(of: #""updated_at":"2023-11-14T22:13:20Z""#, with: #""updated_at":"yesterday""#), "expected an RFC 3339 date"),
            (#"{"version":1,"source":"s","type":"t","updated_at":"2023-11-14T22:13:20Z","adapter_state":"# + String(repeating: "[", count: 100_000), "nested deeper than 512"),
            (#"{"version":1,"source":"s","type":"t","updated_at":"2023-11-14T22:13:20Z","items":[{"id":"1","title":"t","extra":{"\u001b]52;c;x\u0007":5}}]}"#, "wrong type at 'items.0.extra."),
            (#"{"\#u{1b}":5}"#, "control character"),
            ("", "not valid JSON"),
        ]
        for (text, expected) in cases {
            do {
                _ = try Snapshot(json: Data(text.utf8))
                Issue.record("read: \(text.prefix(80))")
            } catch {
                #expect(error.description.contains(expected), "\(error.description) — wanted \(expected)")
                #expect(!error.description.contains("\u{1b}"))
            }
        }
        // Bytes that are not UTF-8 inside a string.
        var bytes = Array(valid.utf8)
        let at = bytes.firstIndex(of: UInt8(ascii: "A"))!
        bytes[at] = 0xFF
        #expect(throws: JSONReader.Failure.self) { try Snapshot(json: Data(bytes)) }
    }

    @Test func randomItemsReadBackAsJSONDecoderReadsThem() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aé\"\\\n\t\u{01}\u{7F}🎉 /<>&") + ["\u{2028}", "\u{FEFF}"]
        func text() -> String { String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }) }
        for _ in 0..<200 {
            let items = (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                Item(id: text(), title: text(), link: Bool.random() ? text() : nil, published: Bool.random() ? Date(timeIntervalSince1970: Double(Int.random(in: -1_000_000_000...4_000_000_000))) : nil,
                     summary: Bool.random() ? text() : nil, enclosures: Bool.random() ? [Enclosure(url: text(), length: Int64.random(in: .min ... .max))] : [], extra: Bool.random() ? [text(): text()] : [:])
            }
            let snapshot = Snapshot(source: text(), type: "t", updatedAt: Date(timeIntervalSince1970: 1_700_000_000), items: items)
            let data = snapshot.jsonData()
            #expect(try Snapshot(json: data) == (try SnapshotCoding.decoder.decode(Snapshot.self, from: data)))
        }
    }
}

@Suite struct TagsAndTitleTests {
    @Test func tagsAndTheSourceTitleSurviveTheSnapshotAndReachNDJSON() throws {
        let snapshot = Snapshot(source: "s", type: "rss", updatedAt: Date(timeIntervalSince1970: 1_700_000_000),
                                items: [Item(id: "1", title: "A", tags: ["swift", "feeds \u{1b}[2J"])], title: "The Feed")
        let data = snapshot.jsonData()
        #expect(try Snapshot(json: data) == snapshot)
        #expect(try SnapshotCoding.decoder.decode(Snapshot.self, from: data) == snapshot)
        let line = JSONEvents.item(source: "s", sourceTitle: snapshot.title, snapshot.items[0])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["tags"] as? [String] == ["swift", "feeds \u{1b}[2J"])
        #expect(object["source_title"] as? String == "The Feed")
        // Text output makes them safe for a terminal.
        let text = TextReport(colored: false).lines(for: snapshot).joined(separator: "\n")
        #expect(text.contains("s  The Feed  rss"))
        #expect(text.contains("# swift, feeds"))
        #expect(!text.contains("\u{1b}"))
    }

    @Test func tagsAreCappedLikeEveryOtherField() {
        let item = Item(id: "1", title: "t", tags: (0..<100).map { "tag\($0)" } + [String(repeating: "x", count: 1_000)])
        let (bounded, note) = ItemLimits.standard.apply(to: [item])
        #expect(bounded[0].tags.count == 64)
        #expect(note?.contains("tag list") == true)
        let long = ItemLimits.standard.apply(to: [Item(id: "2", title: "t", tags: [String(repeating: "y", count: 1_000)])])
        #expect(long.items[0].tags[0].utf8.count <= 256)
    }
}

@Suite struct SummaryLineTests {
    func report(_ outcomes: [SourceOutcome]) -> RunReport {
        RunReport(sources: outcomes.enumerated().map { SourceReport(name: "s\($0.offset)", type: "t", outcome: $0.element, totalItems: 0, duration: .zero) }, duration: .milliseconds(10))
    }

    @Test func theLastLineIsColouredAsTheExitStatusIs() {
        let style = TextReport(colored: true)
        let failure = SourceOutcome.failed(FetchFailure(.network, "down"))
        let green = "\u{1b}[32m", yellow = "\u{1b}[33m", red = "\u{1b}[31m"
        // Exit 0: green only when there is something new.
        #expect(style.summary(for: report([.newData([Item(id: "1", title: "t")])])).hasPrefix(green + "newData: 1 new item"))
        #expect(!style.summary(for: report([.noData])).contains("\u{1b}"))
        // Exit 2: never green; the word says how many failed.
        let partial = style.summary(for: report([.newData([Item(id: "1", title: "t")]), failure]))
        #expect(partial.hasPrefix(yellow + "newData, 1 of 2 failed: 1 new item from 2 sources"), "\(partial)")
        // Exit 3, and an interrupted run: red.
        #expect(style.summary(for: report([failure, failure])).hasPrefix(red + "failed: 0 new items from 2 sources, 2 failed"))
        let cancelled = SourceOutcome.failed(FetchFailure(.cancelled, "cancelled"))
        #expect(style.summary(for: report([.noData, cancelled])).hasPrefix(red + "interrupted (noData)"))
    }
}
