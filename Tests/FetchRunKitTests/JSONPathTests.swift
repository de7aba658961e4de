import Foundation
import Testing
@testable import FetchRunKit

/// JSONPath against RFC 9535's own examples (§1.5, §2.3), and the queries it must refuse.
@Suite struct JSONPathTests {
    static func json(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    static let bookstore = try! json("""
        { "store": {
            "book": [
              { "category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95 },
              { "category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99 },
              { "category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553-21311-3", "price": 8.99 },
              { "category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord of the Rings", "isbn": "0-395-19395-8", "price": 22.99 }
            ],
            "bicycle": { "color": "red", "price": 399 }
          }
        }
        """)

    func select(_ query: String, in document: JSONValue = bookstore) throws -> [JSONValue] {
        try #require(JSONPath(query).select(in: document))
    }

    func titles(_ nodes: [JSONValue]) -> [String] {
        nodes.compactMap { if case .object(let book) = $0, case .string(let title)? = book["title"] { title } else { nil } }
    }

    @Test func theBookstoreExamplesOfSection1_5() throws {
        let authors: [JSONValue] = ["Nigel Rees", "Evelyn Waugh", "Herman Melville", "J. R. R. Tolkien"].map { .string($0) }
        #expect(try select("$.store.book[*].author") == authors)
        #expect(try select("$..author") == authors)
        #expect(try select("$.store.*").count == 2)
        #expect(Set(try select("$.store..price")) == Set([8.95, 12.99, 8.99, 22.99, 399].map(JSONValue.number)))
        #expect(titles(try select("$..book[2]")) == ["Moby Dick"])
        #expect(titles(try select("$..book[-1]")) == ["The Lord of the Rings"])
        #expect(titles(try select("$..book[0,1]")) == ["Sayings of the Century", "Sword of Honour"])
        #expect(titles(try select("$..book[:2]")) == ["Sayings of the Century", "Sword of Honour"])
        #expect(titles(try select("$..book[?@.isbn]")) == ["Moby Dick", "The Lord of the Rings"])
        #expect(titles(try select("$..book[?@.price<10]")) == ["Sayings of the Century", "Moby Dick"])
        // Every member value and element below the root: the store, its book list, 4 books with
        // 18 fields, the bicycle with 2.
        #expect(try select("$..*").count == 27)
        #expect(try select("$['store']['bicycle'][\"color\"]") == [.string("red")])
    }

    @Test func indexesAndSlicesOfSection2_3() throws {
        let letters = try Self.json(#"["a", "b", "c", "d", "e", "f", "g"]"#)
        func picked(_ query: String) throws -> String {
            try select(query, in: letters).map { if case .string(let s) = $0 { s } else { "?" } }.joined()
        }
        #expect(try picked("$[1]") == "b")
        #expect(try picked("$[-2]") == "f")
        #expect(try picked("$[7]") == "")
        #expect(try picked("$[1:3]") == "bc")
        #expect(try picked("$[5:]") == "fg")
        #expect(try picked("$[1:5:2]") == "bd")
        #expect(try picked("$[5:1:-2]") == "fd")
        #expect(try picked("$[::-1]") == "gfedcba")
        #expect(try picked("$[0:100:0]") == "")
        #expect(try picked("$[-100:100]") == "abcdefg")
    }

    @Test func theFilterExamplesOfSection2_3_5() throws {
        let document = try Self.json("""
            {"a": [3, 5, 1, 2, 4, 6, {"b": "j"}, {"b": "k"}, {"b": {}}, {"b": "kilo"}],
             "o": {"p": 1, "q": 2, "r": 3, "s": 5, "t": {"u": 6}},
             "e": "f"}
            """)
        #expect(try select("$.a[?@.b == 'kilo']", in: document) == [try Self.json(#"{"b": "kilo"}"#)])
        #expect(try select("$.a[?(@.b == 'kilo')]", in: document) == [try Self.json(#"{"b": "kilo"}"#)])
        #expect(try select("$.a[?@>3.5]", in: document) == [5, 4, 6].map(JSONValue.number))
        #expect(try select("$.a[?@.b]", in: document).count == 4)
        #expect(try select("$[?@.*]", in: document).count == 2)
        #expect(try select("$.o[?@<3, ?@<3]", in: document) == [1, 2, 1, 2].map(JSONValue.number))
        #expect(try select(#"$.a[?@<2 || @.b == "k"]"#, in: document) == [.number(1), try Self.json(#"{"b": "k"}"#)])
        #expect(try select("$.a[?@.b == $.x]", in: document) == [3, 5, 1, 2, 4, 6].map(JSONValue.number))
        #expect(try select("$.a[?@ == @]", in: document).count == 10)
        #expect(try select("$.o[?@>1 && @<4]", in: document) == [2, 3].map(JSONValue.number))
        #expect(try select("$.o[?@.u || @.x]", in: document) == [try Self.json(#"{"u": 6}"#)])
        #expect(try select("$.a[?!@.b]", in: document) == [3, 5, 1, 2, 4, 6].map(JSONValue.number))
        #expect(try select("$.a[?length(@.b) == 4]", in: document) == [try Self.json(#"{"b": "kilo"}"#)])
        #expect(try select("$.a[?@.b == null]", in: document).isEmpty)
    }

    @Test func singularQueriesAreKnown() throws {
        #expect(try JSONPath("$.store.bicycle.color").isSingular)
        #expect(try JSONPath("$['store'].book[0]").isSingular)
        #expect(try !JSONPath("$.store.book[*]").isSingular)
        #expect(try !JSONPath("$..price").isSingular)
    }

    @Test func badQueriesSayWhereTheyStopMakingSense() {
        for (query, column, words) in [
            ("store.book", 1, "starts with '$'"),
            ("$.store.", 9, "member name"),
            ("$[", 3, "a selector"),
            ("$['open", 8, "not closed"),
            ("$[1", 4, "expected ',' or ']'"),
            ("$.a[?@.* == 1]", 14, "singular query"),
            ("$.a[?'x']", 9, "literal alone"),
            ("$[9007199254740992]", 19, "beyond"),
            ("$[01]", 5, "leading zeros"),
            ("$.a ]", 4, "unexpected"),
        ] {
            do {
                _ = try JSONPath(query)
                Issue.record("\(query) was accepted")
            } catch {
                #expect(error.column == column && error.message.contains(words), "\(query): \(error)")
            }
        }
        // A hostile query: deeply nested parentheses are refused, not a crash.
        let deep = "$[?" + String(repeating: "(", count: 10_000) + "@" + String(repeating: ")", count: 10_000) + "]"
        #expect(throws: JSONPathError.self) { try JSONPath(deep) }
    }

    /// A watched value nested 500 deep around 200,000 numbers: 400 KB of JSON, but 200 MB as
    /// indented lines. The text stops at twice what is compared, and the comparison says it
    /// was cut, as for a page.
    @Test func aDeeplyNestedWatchedValueIsWrittenOnlyToItsBudget() throws {
        let depth = 500
        let json = String(repeating: "[", count: depth) + Array(repeating: "0", count: 200_000).joined(separator: ",") + String(repeating: "]", count: depth)
        let document = try JSONAdapter.read(Data(json.utf8), from: "api")
        let text = try JSONAdapter.watchedText(of: document, at: try JSONPath("$"), visitBudget: JSONPath.visitBudget(documentBytes: json.utf8.count), from: "api")
        let budget = ChangeTracker.maximumRenderedBytes
        #expect(text.utf8.count >= budget && text.utf8.count < budget + 2 * depth + 8)
        #expect(text.hasPrefix("[\n  [\n") && text.hasSuffix(String(repeating: " ", count: 2 * depth) + "0,"))
        var tracker = ChangeTracker()
        tracker.keepsIndentation = true
        let seen = try tracker.observe(text, previousState: nil, previousItems: [], link: "api", at: Date())
        #expect(seen.note?.hasPrefix("the selection is longer than 1024 KiB") == true, "\(seen.note ?? "no note")")
        // A value within the budget is written whole.
        #expect(JSONValue.array([.number(1), .object(["b": .string("x"), "a": .null])]).prettyPrinted() == "[\n  1,\n  {\n    \"a\": null,\n    \"b\": \"x\"\n  }\n]")
    }

    /// `$..entry..title` over entries nested 500 deep around 100,000 numbers gathers nothing,
    /// but would walk the numbers once for each entry: 50 million values for 200 KB of JSON
    /// (a 2 MB document of that shape took 36 s of CPU). One budget of visits for the whole
    /// evaluation, filters' queries included, stops it; the same queries over the same numbers
    /// not nested are answered within it. (A budget smaller than a fetch's, for the same shape
    /// 50 deep around 20,000 numbers: a million values.)
    @Test func aQueryLooksAtNoMoreValuesThanItsBudgetFiltersIncluded() throws {
        let budget = 200_000
        let numbers = "[" + Array(repeating: "0", count: 20_000).joined(separator: ",") + "]"
        let nested = try JSONAdapter.read(Data((String(repeating: #"{"entry":"#, count: 50) + numbers + String(repeating: "}", count: 50)).utf8), from: "api")
        let flat = try JSONAdapter.read(Data(#"{"entry": {"entry": [], "x": \#(numbers)}}"#.utf8), from: "api")
        for query in ["$..entry..title", "$..[?@..title]", "$..entry[?@..title || @..name]"] {
            let path = try JSONPath(query)
            #expect(path.select(in: nested, maximumVisits: budget) == nil, "\(query)")
            #expect(path.select(in: flat, maximumVisits: budget) == [], "\(query)")
        }
        // What the gathering bound lets through is still counted: a wildcard's children too.
        #expect(try JSONPath("$.entry.x[*]").select(in: flat, maximumVisits: 20_002)?.count == 20_000)
        #expect(try JSONPath("$.entry.x[*]").select(in: flat, maximumVisits: 20_001) == nil)

        let failure = #expect(throws: FetchFailure.self) {
            try JSONAdapter.watchedText(of: nested, at: try JSONPath("$..entry..title"), visitBudget: budget, from: "api")
        }
        #expect(failure?.kind == .selector)
        #expect(failure?.message == "api: '$..entry..title' selects more than 1000000 values at a step, or looks at more than 200000 in all", "\(failure?.message ?? "")")
        // A fetch's budget: 16 million values, or four per byte of a larger document, without
        // overflow at the extreme.
        #expect(JSONPath.visitBudget(documentBytes: 1_000) == 16_000_000)
        #expect(JSONPath.visitBudget(documentBytes: 10 << 20) == 40 << 20)
        #expect(JSONPath.visitBudget(documentBytes: .max) == .max)
    }

    /// Nested entries that each reach the same large string: the items stop at four times the
    /// document's size of text (at least 1 MiB), as a page's do. (The paths are made here: a
    /// config takes only a field path that names one value; the budget holds for any.)
    @Test func nestedJSONEntriesCannotMultiplyTheDocumentsText() throws {
        var nested = JSONValue.object(["text": .string(String(repeating: "z", count: 60_000)), "id": .string("deepest")])
        for level in 0..<300 { nested = .object(["id": .string("level-\(level)"), "inner": nested]) }
        let document = JSONValue.array([nested])
        var writer = JSONWriter()
        writer.value(document)
        let bytes = writer.string.utf8.count
        let paths = JSONAdapter.ItemPaths(each: try JSONPath("$..[?@.id]"), id: try JSONPath(entryPath: "id"), summary: try JSONPath(entryPath: "$..text"))
        let listed = try JSONAdapter.items(in: document, paths: paths, base: nil, documentBytes: bytes, from: "api", cancellation: CancellationFlag())
        // 301 entries whose summaries are all the same 60 KB: 1 MiB holds 17 of them.
        #expect(listed.items.count == 17)
        #expect(listed.notes == ["284 entries left out past 1024 KiB of item text (four times the document's size, at least 1 MiB)"])
    }
}
