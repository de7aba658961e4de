import Foundation
import Testing
@testable import FetchRunKit

/// Numbers keep their digits, list entries their readable titles, and every limit is the
/// documented one: a long list is cut, deep markup flattened, a hostile expression refused.
@Suite struct NumbersAndLimitsTests {
    // MARK: JSON numbers

    @Test func integersPastTwoToTheFiftyThirdKeepEveryDigit() throws {
        let document = try JSONReader.value(of: Data(#"{"a": 1311111111111111111, "b": 1311111111111111112, "c": -9223372036854775809, "d": 0.1, "e": 1e21, "f": 12345678901234567890123}"#.utf8))
        #expect(document["a"]?.scalarText == "1311111111111111111")
        #expect(document["b"]?.scalarText == "1311111111111111112")
        #expect(document["a"] != document["b"])
        #expect(document["c"]?.scalarText == "-9223372036854775809")
        #expect(document["f"]?.scalarText == "12345678901234567890123")
        // Floats keep their shortest round-trip form.
        #expect(document["d"]?.scalarText == "0.1")
        #expect(document["e"]?.scalarText == "1e+21")
        // Written back with every digit.
        var json = JSONWriter()
        json.value(document)
        #expect(json.string == #"{"a":1311111111111111111,"b":1311111111111111112,"c":-9223372036854775809,"d":0.1,"e":1e+21,"f":12345678901234567890123}"#)
        // Ordered by value, and by digits where the values round to the same double.
        let a = try #require(JSONNumber(json: "1311111111111111111")), b = try #require(JSONNumber(json: "1311111111111111112"))
        #expect(a < b && !(b < a))
        let negative = try #require(JSONNumber(json: "-1311111111111111112"))
        #expect(negative < a)
    }

    @Test func aJSONPathComparesIdsWithEveryDigit() throws {
        let document = try JSONReader.value(of: Data(#"{"posts": [{"id": 1311111111111111111, "t": "old"}, {"id": 1311111111111111112, "t": "new"}]}"#.utf8))
        let selected = try JSONPath("$.posts[?@.id == 1311111111111111112].t").select(in: document)
        #expect(selected == [.string("new")])
        let greater = try JSONPath("$.posts[?@.id > 1311111111111111111].t").select(in: document)
        #expect(greater == [.string("new")])
    }

    @Test func jsonItemsWithSnowflakeIdsAreToldApart() throws {
        let entries = (0..<5).map { #"{"id": \#(1311111111111111110 + $0), "title": "post \#(1311111111111111110 + $0)"}"# }
        let document = try JSONReader.value(of: Data("[\(entries.joined(separator: ","))]".utf8))
        let paths = JSONAdapter.ItemPaths(each: try JSONPath("$[*]"), id: try JSONPath("$.id"), title: try JSONPath("$.title"))
        let (items, _) = try JSONAdapter.items(in: document, paths: paths, base: nil, documentBytes: 1000, from: "api", cancellation: CancellationFlag())
        #expect(items.map(\.id) == (0..<5).map { String(1311111111111111110 + $0) })
        #expect(items.map(\.title) == (0..<5).map { "post \(1311111111111111110 + $0)" })
    }

    // MARK: Lists

    @Test func aJSONListLongerThanTheCapKeepsItsFirstEntriesAndSaysHowManyWereDropped() throws {
        let count = ItemLimits.standard.itemsPerFetch + 2_500
        let document = JSONValue.array((0..<count).map { .object(["id": .string("e\($0)")]) })
        let paths = JSONAdapter.ItemPaths(each: try JSONPath("$[*]"), id: try JSONPath("$.id"))
        let (items, notes) = try JSONAdapter.items(in: document, paths: paths, base: nil, documentBytes: count * 64, from: "api", cancellation: CancellationFlag())
        #expect(items.count == ItemLimits.standard.itemsPerFetch)
        #expect(items.first?.id == "e0" && items.last?.id == "e\(ItemLimits.standard.itemsPerFetch - 1)")
        #expect(notes.contains("2500 entries past the first 10000 dropped"), "\(notes)")
    }

    @Test func aPageListLongerThanTheCapKeepsItsFirstEntriesAndSaysHowManyWereDropped() throws {
        let count = ItemLimits.standard.itemsPerFetch + 10
        let html = "<ul>" + (0..<count).map { "<li id=e\($0)>entry \($0)</li>" }.joined() + "</ul>"
        let page = try HTMLDocument.parse(Data(html.utf8), url: nil).document
        let selectors = PageAdapter.ItemSelectors(each: try CSSSelector("li"))
        let (items, note) = try PageAdapter.items(in: page, selectors: selectors, excluded: [], pageBytes: html.utf8.count, from: "page", cancellation: CancellationFlag())
        #expect(items.count == ItemLimits.standard.itemsPerFetch)
        #expect(items.first?.title == "entry 0")
        #expect(note == "10 entries past the first 10000 dropped")
    }

    @Test func aListEntrysDefaultTitleIsItsTextWithoutItsLinksURLs() throws {
        let html = #"<ul><li><a href="v1.0.html">Version 1.0</a></li><li>Notes for <a href="/v2">Version 2.0</a> — 漢字</li></ul>"#
        let page = try HTMLDocument.parse(Data(html.utf8), url: "http://host/releases/").document
        let selectors = PageAdapter.ItemSelectors(each: try CSSSelector("li"))
        let (items, _) = try PageAdapter.items(in: page, selectors: selectors, excluded: [], pageBytes: html.utf8.count, from: "page", cancellation: CancellationFlag())
        #expect(items.map(\.title) == ["Version 1.0", "Notes for Version 2.0 — 漢字"])
        #expect(items.map(\.link) == ["http://host/releases/v1.0.html", "http://host/v2"])
    }

    // MARK: Depth

    @Test func contentPastTheDepthLimitIsFlattenedAndTheRestOfThePageKept() throws {
        let html = "<body><p>before</p>" + String(repeating: "<font>", count: 300) + "deep text" + "<p id=after>after the tag soup</p></body>"
        let page = try HTMLDocument.parse(Data(html.utf8), url: nil).document
        let body = try #require(page.nodes.firstIndex { $0.name == "body" })
        let text = page.text(of: body)
        #expect(text.contains("before") && text.contains("deep text") && text.contains("after the tag soup"), "\(text)")
        #expect(page.cutDepth > 0)
        // A hundred thousand closed levels, then content: the content is still there.
        let nested = String(repeating: "<div>", count: 100_000) + "x" + String(repeating: "</div>", count: 100_000) + "<p>tail</p>"
        let deep = try HTMLDocument.parse(Data(nested.utf8), url: nil).document
        #expect(deep.nodes.contains { $0.text == "tail" })
        #expect(deep.nodes.count < 400)
    }

    @Test func anXPathNestedPastTheLimitIsRefusedWithItsColumnNotACrash() {
        let deep = String(repeating: "(", count: 50_000) + "1" + String(repeating: ")", count: 50_000)
        #expect(throws: ValueError.self) { try XPathQuery(deep) }
        do {
            _ = try XPathQuery(deep)
        } catch {
            #expect("\(error)".contains("column 65"), "\(error)")
        }
        // Within the limit, and brackets inside a string, are fine.
        let fine = String(repeating: "(", count: 60) + "1" + String(repeating: ")", count: 60)
        #expect(throws: Never.self) { try XPathQuery(fine) }
        #expect(throws: Never.self) { try XPathQuery("//p[contains(., '" + String(repeating: "(", count: 500) + "')]") }
    }
}
