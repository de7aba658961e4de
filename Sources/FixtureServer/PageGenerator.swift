import Foundation

/// Web pages made up on demand, for `page` sources: the same number always gives the same page.
///
/// Page n is a shop page about 50 KB long by default: a head with a script and styles, a
/// navigation menu, a `#product` block (name, price, stock) — what a price watch selects —,
/// a list of stories made from feed n's items (links, times, paragraphs), and a footer.
public enum PageGenerator {
    /// Page `number`, padded towards `targetBytes` of HTML.
    public static func page(number: Int, targetBytes: Int = 50_000) -> String {
        // The feed generator sizes escaped RSS; the same items as HTML come out about a quarter smaller.
        let feed = FeedGenerator.feed(number: number, items: max(20, targetBytes / 2_500), targetBytes: max(2_000, (targetBytes - 2_000) * 4 / 3))
        let price = 10 + (number &* 37) % 90
        var html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>Fixture Shop \(number)</title>
            <link rel="stylesheet" href="/static/shop.css">
            <style>.menu a { margin: 0 1em } .price { font-weight: bold }</style>
            <script>window.dataLayer = window.dataLayer || []; window.dataLayer.push({page: \(number)});</script>
            </head><body>
            <header><nav class="menu"><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/news">News</a> <a href="/about">About us</a> <a href="/contact">Contact</a></nav>
            <div class="banner">Free delivery on orders over 50&nbsp;EUR</div></header>
            <main>
            <div id="product" class="product"><h1>Kettle model \(number)</h1>
            <p class="price">Price: \(price).99&nbsp;EUR</p>
            <p class="stock">In stock, ships in \(1 + number % 5) days</p>
            <span class="visitors">\(number % 17) people are looking at this</span></div>
            <section class="news"><h2>\(FeedGenerator.escape(feed.title))</h2>
            <ul class="stories">

            """
        for entry in feed.items {
            html += """
                <li class="story"><h3><a href="\(entry.link)">\(FeedGenerator.escape(entry.title))</a></h3>
                <time datetime="\(FeedGenerator.rfc3339(entry.published))">\(FeedGenerator.rfc822(entry.published))</time>
                <p class="by">by \(FeedGenerator.escape(entry.author))</p>\(entry.html)</li>

                """
        }
        return html + """
            </ul></section></main>
            <footer><p>Fixture Shop &copy; 2026 · <a href="/privacy">Privacy</a> · <a href="/terms">Terms</a></p></footer>
            </body></html>

            """
    }
}
