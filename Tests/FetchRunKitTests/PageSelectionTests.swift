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
        try CSSSelector(selector).select(in: document).map { document.line(of: $0) }
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
