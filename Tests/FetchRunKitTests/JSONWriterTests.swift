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
        #expect(DateParser.rfc3339String(from: Date(timeIntervalSince1970: 1_055_217_600.75)) == "2003-06-10T04:00:00Z")
        #expect(DateParser.rfc822String(from: Date(timeIntervalSince1970: 1_055_217_600)) == "Tue, 10 Jun 2003 04:00:00 +0000")
        #expect(DateParser.rfc3339String(from: Date(timeIntervalSince1970: -86_400)) == "1969-12-31T00:00:00Z")
        // What is written reads back.
        let date = Date(timeIntervalSince1970: 1_709_208_000)
        #expect(DateParser.parse(DateParser.rfc3339String(from: date)) == date)
        #expect(DateParser.parse(DateParser.rfc822String(from: date)) == date)
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
