import Foundation
import Testing
@testable import FetchRunKit

/// CSS selectors, XPath and the text a page's selection is compared as.
@Suite struct PageSelectionTests {
    static let page = """
        <!DOCTYPE html>
        <html><head><title>Shop</title><base href="https://shop.example/catalog/"><style>p { color: red }</style></head>
        <body>
          <nav class="top menu"><a href="/">Home</a> <a href="#main">Skip</a></nav>
          <main id="main">
            <h1>Offers&nbsp;today</h1>
            <p class="price sale" data-sku="A-1">Kettle: <b>19.99</b> EUR</p>
            <p class="price" data-sku="B-2">Toaster: 24.99 EUR<br>was 29.99</p>
            <div class="ad">Buy now!</div>
            <ul class="news">
              <li><a href="items/1">First story</a> <time datetime="2026-11-20T08:00:00Z">Nov 20</time></li>
              <li><a href="items/2">Second story</a> <time datetime="2026-11-21T08:00:00Z">Nov 21</time></li>
              <li class="last"><a href="https://other.example/3">Third story</a></li>
            </ul>
            <script>var tracking = 1;</script>
          </main>
        </body></html>
        """

    func document(_ html: String = page) throws -> HTMLDocument {
        try HTMLDocument.parse(Data(html.utf8), url: "https://shop.example/catalog/index.html").document
    }

    func texts(_ selector: String, in document: HTMLDocument) throws -> [String] {
        // As a watched selection's text shows it, links with their URLs, on one line.
        try CSSSelector(selector).select(in: document).map { document.text(of: $0).split(separator: "\n").joined(separator: " ") }
    }

    @Test func selectorsOfEveryKindTheIssueNames() throws {
        let document = try document()
        #expect(try texts("h1", in: document) == ["Offers today"])
        #expect(try texts(".price", in: document) == ["Kettle: 19.99 EUR", "Toaster: 24.99 EUR was 29.99"])
        #expect(try texts("p.price.sale", in: document) == ["Kettle: 19.99 EUR"])
        #expect(try texts("#main > h1", in: document) == ["Offers today"])
        #expect(try texts("[data-sku]", in: document).count == 2)
        #expect(try texts("[data-sku=B-2]", in: document) == ["Toaster: 24.99 EUR was 29.99"])
        #expect(try texts("[data-sku*='-1']", in: document) == ["Kettle: 19.99 EUR"])
        #expect(try texts("[class^=pri]", in: document).count == 2)
        #expect(try texts("[class~=menu] a", in: document).count == 2)
        #expect(try texts("main li", in: document).count == 3)
        #expect(try texts("body > li", in: document).isEmpty)
        #expect(try texts("ul.news > li:nth-child(2) a", in: document) == ["Second story <https://shop.example/catalog/items/2>"])
        #expect(try texts("li:nth-child(odd) > a", in: document).map { $0.prefix(5) } == ["First", "Third"])
        #expect(try texts("li:nth-last-child(1) a, h1", in: document).count == 2)
        #expect(try texts("li:first-child a", in: document).count == 1)
        #expect(try texts("li:not(.last) > a", in: document).count == 2)
        #expect(try texts("h1 + p", in: document) == ["Kettle: 19.99 EUR"])
        #expect(try texts("h1 ~ p", in: document).count == 2)
        #expect(try texts("P.PRICE", in: document).isEmpty, "class names match exactly")
        #expect(try texts("MAIN H1", in: document) == ["Offers today"], "element names match in any case")
    }

    @Test func badSelectorsSayWhere() {
        for (text, column, words) in [
            ("", 1, "a selector"), ("div >", 6, "a selector"), ("[x", 3, "'=', '~=', '|=', '^=', '$=', '*=' or ']'"),
            ("a[href='x]", 11, "closing"), ("li:hover", 4, "unknown pseudo-class"), ("li:nth-child(2n+x)", 18, "an+b"),
            ("li:nth-child(9999999n)", 22, "an+b"), ("a, ", 4, "a selector"), ("a)", 2, "unexpected"),
            (String(repeating: "a ", count: 40) + ", " + String(repeating: "b ", count: 30), 83, "more than 64 compound selectors"),
        ] {
            do {
                _ = try CSSSelector(text)
                Issue.record("'\(text)' was accepted")
            } catch {
                #expect(error.column == column && error.message.contains(words), "'\(text)': \(error)")
            }
        }
    }

    @Test func textIsWhatAReaderSees() throws {
        let document = try document()
        let main = try #require(try CSSSelector("main").select(in: document).first)
        let ad = try CSSSelector(".ad").select(in: document)
        #expect(document.text(of: main, excluding: Set(ad)) == """
            Offers today
            Kettle: 19.99 EUR
            Toaster: 24.99 EUR
            was 29.99
            First story <https://shop.example/catalog/items/1> Nov 20
            Second story <https://shop.example/catalog/items/2> Nov 21
            Third story <https://other.example/3>
            """)
        let price = try #require(try CSSSelector(".sale").select(in: document).first)
        #expect(document.html(of: price) == #"<p class="price sale" data-sku="A-1">Kettle: <b>19.99</b> EUR</p>"#)
    }

    @Test func xpathSelectsElementsAttributesAndValues() throws {
        func select(_ expression: String) throws -> [String] {
            let (document, selected) = try HTMLDocument.parse(Data(Self.page.utf8), url: nil, xpath: try XPathQuery(expression))
            return (selected ?? []).map { part in
                switch part {
                case .element(let index): document.line(of: index)
                case .text(let text): text
                }
            }
        }
        #expect(try select("//p[@data-sku='A-1']") == ["Kettle: 19.99 EUR"])
        #expect(try select("//li/a/@href") == ["items/1", "items/2", "https://other.example/3"])
        #expect(try select("count(//li)") == ["3"])
        #expect(try select("string(//h1)") == ["Offers\u{00A0}today"])
        #expect(throws: ValueError.self) { try XPathQuery("//p[") }
        #expect(throws: ValueError.self) { try XPathQuery("") }
    }

    @Test func hostilePagesAreBounded() throws {
        // 100,000 nested elements: kept to the depth limit, the rest left out and counted.
        let deep = String(repeating: "<div>", count: 100_000) + "x" + String(repeating: "</div>", count: 100_000)
        let nested = try document(deep)
        #expect(nested.cutDepth > 0)
        #expect(nested.nodes.count < 300)
        // An internal entity declared in a doctype is not expanded (no billion laughs).
        let laughs = """
            <!DOCTYPE html [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
            <html><body><p>&c;&c;&c;&c;</p></body></html>
            """
        let text = try document(laughs).text(of: 0)
        #expect(text.utf8.count < 1_000, "\(text.prefix(200))")
        #expect(throws: HTMLDocument.ParseError.self) { try HTMLDocument.parse(Data(), url: nil) }
    }

    /// Matching agrees with the definition of each combinator, taken literally (every ancestor,
    /// every earlier sibling tried in turn), on random trees and selectors where the nearest
    /// candidate is often the wrong one.
    @Test func matchingAgreesWithTheCombinatorsDefinitions() throws {
        var random = SplitMix64(state: 20261127)
        let names = ["a", "b", "c"], combinators = [" ", " > ", " + ", " ~ "]
        var combinedAndMatched = 0
        for _ in 0..<300 {
            // A random tree of up to 40 elements, as nested tags.
            func element(_ budget: inout Int, depth: Int) -> String {
                budget -= 1
                let name = names[Int(random.next() % 3)]
                var children = ""
                while budget > 0, depth < 6, random.next() % 3 != 0 { children += element(&budget, depth: depth + 1) }
                return "<\(name)>\(children)</\(name)>"
            }
            var budget = 40
            var body = ""
            while budget > 0 { body += element(&budget, depth: 0) }
            let page = try document("<html><body>" + body + "</body></html>")
            // Right to left, as written: compounds[0] is the rightmost.
            var compounds = [names[Int(random.next() % 3)]], joins: [String] = []
            for _ in 0..<Int(random.next() % 4) {
                compounds.append(names[Int(random.next() % 3)])
                joins.append(combinators[Int(random.next() % 4)])
            }
            let text = zip(compounds.reversed(), [""] + joins.reversed()).map { $1 + $0 }.joined()
            func previousSibling(_ index: Int) -> Int? {
                page.nodes[..<index].indices.last { page.nodes[$0].isElement && page.nodes[$0].parent == page.nodes[index].parent }
            }
            func matches(_ index: Int, _ position: Int) -> Bool {
                guard page.nodes[index].name == compounds[position] else { return false }
                guard position + 1 < compounds.count else { return true }
                var candidates: [Int] = []
                switch joins[position] {
                case " > ": candidates = page.parentElement(of: index).map { [$0] } ?? []
                case " ": candidates = Array(sequence(first: index) { page.parentElement(of: $0) }.dropFirst())
                case " + ": candidates = previousSibling(index).map { [$0] } ?? []
                default: candidates = Array(sequence(first: index) { previousSibling($0) }.dropFirst())
                }
                return candidates.contains { matches($0, position + 1) }
            }
            let expected = page.nodes.indices.filter { $0 > 0 && page.nodes[$0].isElement && matches($0, 0) }
            #expect(try CSSSelector(text).select(in: page) == expected, "\(text) on \(body)")
            if !joins.isEmpty, !expected.isEmpty { combinedAndMatched += 1 }
        }
        #expect(combinedAndMatched > 100)
    }

    /// Page shapes that made matching element by element take half a minute or more. Not
    /// timed: what they match is checked.
    @Test func longSiblingListsAndDeepNestingAreMatchedInOnePass() throws {
        let flat = try document("<html><body><div><h2>t</h2>" + String(repeating: "<p>x</p>", count: 20_000) + "</div></body></html>")
        #expect(try CSSSelector("h2 ~ p + p").select(in: flat).count == 19_999)
        #expect(try CSSSelector("h2 + p").select(in: flat).count == 1)
        let nested = String(repeating: #"<div class="story">"#, count: 200) + String(repeating: "<a href='x'>a</a>", count: 200) + String(repeating: "</div>", count: 200)
        let deep = try document("<html><body>" + nested + "</body></html>")
        #expect(try CSSSelector("#news .story .story a").select(in: deep).isEmpty)
        #expect(try CSSSelector("body .story .story a").select(in: deep).count == 200)
        // The first match below an element, found without walking what it holds.
        let stories = try CSSSelector(".story").select(in: deep)
        let links = try CSSSelector("a").matches(in: deep)
        #expect(stories.allSatisfy { links.first(below: $0, in: deep) == links.elements(below: 0, in: deep).first })
        #expect(links.first(below: links.elements(below: 0, in: deep).first!, in: deep) == nil)
    }

    /// An XPath expression whose work grows with a power of the page is stopped by libxml2's
    /// count of operations, with a message that says so; an ordinary one over the same page is not.
    @Test func anXPathExpressionIsStoppedAtItsOperationLimit() throws {
        let flat = Data(("<html><body><div><h2>t</h2>" + String(repeating: "<p>x</p>", count: 20_000) + "</div></body></html>").utf8)
        let quadratic = try XPathQuery("//p[count(following-sibling::p) = count(preceding-sibling::p)]")
        #expect { try HTMLDocument.parse(flat, url: nil, xpath: quadratic) } throws: { error in
            "\(error)".hasSuffix("takes more than libxml2's 50000000 operations on this page; stopped")
        }
        #expect(try HTMLDocument.parse(flat, url: nil, xpath: XPathQuery("//h2/following-sibling::p")).xpathResult?.count == 20_000)
    }

    /// Nested entries that each take the same large element as their summary: the items stop
    /// at four times the page's size of text (at least 1 MiB), and a note says how many were left out.
    @Test func nestedEntriesCannotMultiplyThePagesText() throws {
        let chain = String(repeating: "<div>", count: 250) + "<p>" + String(repeating: "x", count: 60_000) + "</p>" + String(repeating: "</div>", count: 250)
        let html = "<html><body>" + String(repeating: chain, count: 4) + "</body></html>"
        let page = try document(html)
        let selectors = PageAdapter.ItemSelectors(each: try CSSSelector("div"), summary: try .init("p"))
        let listed = try PageAdapter.items(in: page, selectors: selectors, excluded: [], pageBytes: html.utf8.count, from: "page", cancellation: CancellationFlag())
        // 1,000 entries of ~68 KB each (the 60 KB summary, and the entry's text read to 4 KiB as
        // its title and its id): 1 MiB holds 15 of them.
        #expect(listed.items.count == 15)
        #expect(listed.note == "985 entries left out past 1024 KiB of item text (four times the document's size, at least 1 MiB)")
        #expect(listed.items.allSatisfy { $0.summary?.utf8.count == 60_000 })
        // A page's own text is always listed whole.
        let flat = "<html><body>" + String(repeating: "<div><p>" + String(repeating: "y", count: 60_000) + "</p></div>", count: 40) + "</body></html>"
        let all = try PageAdapter.items(in: try document(flat), selectors: selectors, excluded: [], pageBytes: flat.utf8.count, from: "page", cancellation: CancellationFlag())
        #expect(all.items.count == 40 && all.note == nil)
    }

    /// A budget stops the text of an element however it is written: on one long line of inline
    /// elements as well as over many block lines, and over elements that hold no text at all.
    @Test func textStopsAtItsBudgetWithinALine() throws {
        let inline = try document("<html><body><p>" + String(repeating: "<b>word</b> ", count: 50_000) + "</p></body></html>")
        let text = inline.text(of: 0, maximumBytes: 1_000)
        #expect((950..<1_050).contains(text.utf8.count), "\(text.utf8.count)")
        #expect(inline.text(of: 0).utf8.count == 50_000 * 5 - 1)
        let oneText = try document("<html><body><p>" + String(repeating: "x", count: 1_000_000) + "</p></body></html>")
        #expect((90..<100).contains(oneText.text(of: 0, maximumBytes: 100).utf8.count), "a text node is cut too")
        let empty = try document("<html><body><p>" + String(repeating: "<b></b>", count: 100_000) + "tail</p></body></html>")
        #expect(empty.text(of: 0, maximumBytes: 100).isEmpty, "64 × 100 nodes visited at most, all without text")
        #expect(empty.text(of: 0) == "tail")
    }

    /// The node limit holds whether libxml2 is stopped as it makes the nodes or the copy counts
    /// them, and text that reaches the parser in pieces (around entities) is one node, not one
    /// per piece, so a page within the limit is not refused for how its text was written.
    @Test func theNodeLimitCountsElementsAndTextsOnce() throws {
        // html, body, p, text, p, text: six nodes below the document.
        let pieces = Data("<html><body><p>a&amp;b&lt;c&gt;d&#65;e</p><p>f&amp;g</p></body></html>".utf8)
        let parsed = try HTMLDocument.parse(pieces, url: nil, nodeLimit: 7).document
        #expect(parsed.nodes.count == 7)
        #expect(parsed.nodes.filter { !$0.isElement }.map(\.text) == ["a&b<c>dAe", "f&g"])
        #expect(throws: HTMLDocument.ParseError.self) { try HTMLDocument.parse(pieces, url: nil, nodeLimit: 6) }
        // Far past the limit: refused, with the limit in the reason.
        let many = Data(("<html><body>" + String(repeating: "<p>x</p>", count: 10_000) + "</body></html>").utf8)
        #expect { try HTMLDocument.parse(many, url: nil, nodeLimit: 1_000) } throws: { error in
            "\(error)" == "more than 1000 elements and texts"
        }
    }
}
