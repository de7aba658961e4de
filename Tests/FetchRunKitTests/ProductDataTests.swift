import Foundation
import Testing
@testable import FetchRunKit

/// `extract: product`: schema.org Product data from JSON-LD and microdata, as a shop publishes
/// it, and as a hostile page might.
@Suite struct ProductDataTests {
    func products(_ html: String) throws -> [ProductData] {
        ProductData.extract(from: try HTMLDocument.parse(Data(html.utf8), url: "https://shop.example/p").document)
    }

    @Test func aJSONLDProductWithOneOffer() throws {
        let found = try products("""
            <html><head><script type="application/ld+json">
            {"@context": "https://schema.org", "@type": "Product", "name": "Kaffeemühle «Brno» 2", "sku": "KM-2",
             "offers": {"@type": "Offer", "price": "1099.00", "priceCurrency": "EUR", "availability": "https://schema.org/InStock"}}
            </script></head><body><p>1.099,00 €</p></body></html>
            """)
        #expect(found.count == 1)
        #expect(found.first?.text == "price: 1099.00 EUR\navailability: InStock\nname: Kaffeemühle «Brno» 2\nsku: KM-2")
        // The price comes first: a condition's value is the price, not the 2 of the name.
        #expect(NumberText.firstNumber(in: found.first?.text ?? "") == 1099)
    }

    @Test func severalOffersAnAggregateOfferAndAGraph() throws {
        let several = try products("""
            <script type="application/ld+json">[{"@type": "WebPage"}, {"@type": ["Product", "Thing"], "name": "Mill",
             "offers": [{"@type": "Offer", "price": 120, "priceCurrency": "CHF", "availability": "OutOfStock", "sku": "A"},
                        {"@type": "Offer", "priceSpecification": {"price": "99.5", "priceCurrency": "CHF"}, "availability": "http://schema.org/InStock", "sku": "B"}]}]</script>
            """)
        #expect(several.first?.text == "price: 99.50 CHF (lowest of 2 offers)\navailability: InStock, OutOfStock\nname: Mill\nsku: A\noffer 1: 120.00 CHF, OutOfStock, A\noffer 2: 99.50 CHF, InStock, B")
        let aggregate = try products("""
            <script type="application/ld+json">{"@graph": [{"@type": "Organization", "name": "Shop"}, {"@type": "Product", "name": "東京 Grinder",
             "offers": {"@type": "AggregateOffer", "lowPrice": "2980", "highPrice": "4500", "offerCount": 5, "priceCurrency": "JPY"}}]}</script>
            """)
        #expect(aggregate.first?.text == "price: 2980.00 JPY (lowest of 5 offers, up to 4500.00)\nname: 東京 Grinder")
    }

    @Test func microdataWhenThereIsNoJSONLD() throws {
        let found = try products("""
            <div itemscope itemtype="https://schema.org/Product">
              <h1 itemprop="name">Grinder <b>Pro</b></h1><span itemprop="sku">G-9</span>
              <div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
                <span itemprop="price" content="89.90">89,90 €</span><meta itemprop="priceCurrency" content="EUR">
                <link itemprop="availability" href="https://schema.org/PreOrder">
              </div>
              <div itemprop="review" itemscope itemtype="https://schema.org/Review"><span itemprop="name">Not the product's name</span></div>
            </div>
            """)
        #expect(found.first?.text == "price: 89.90 EUR\navailability: PreOrder\nname: Grinder Pro\nsku: G-9")
    }

    @Test func aHostilePageGivesTextAndNothingElse() throws {
        let nested = String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)
        let found = try products("""
            <script type="application/ld+json">{"@type": "Product", "name": "\\u001b[2JEvil<\\/script><script>alert(1)<\\/script>", "offers": {"price": "NaN", "priceCurrency": "\\u0007X"}}</script>
            <script type="application/ld+json">\(nested)</script>
            <script type="application/ld+json">{not json</script>
            """)
        #expect(found.count == 1)
        let text = found.first?.text ?? ""
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(text)")
        #expect(text.contains("name: [2JEvil</script><script>alert(1)</script>") || text.contains("Evil</script>"), "\(text)")
        #expect(try products("<p>No product here</p>").isEmpty)
        // Counts and prices as large as a number can be written, or negative: no trap.
        let huge = try products("""
            <script type="application/ld+json">{"@type": "Product", "offers": {"@type": "AggregateOffer", "lowPrice": 1e308, "highPrice": -1e308, "offerCount": 1e300}}</script>
            <div itemscope itemtype="https://schema.org/Product"><div itemprop="offers" itemscope><span itemprop="offerCount">-99999999999999999999999</span></div></div>
            """)
        #expect(huge.first?.offers.first?.count == 1_000_000)
        // A product named in right-to-left script, with emoji and combining marks, reads back whole.
        let named = try products(#"<script type="application/ld+json">{"@type": "Product", "name": "מטחנה 👩🏽‍💻 Cafe\u0301", "offers": {"price": 5}}</script>"#)
        #expect(named.first?.text == "price: 5.00\nname: מטחנה 👩🏽‍💻 Café")
    }
}
