import Foundation
import Testing
import FixtureServer

/// `type: page` through the built binary against the fixture server: the selected part changes
/// (one diff, one delivery), other parts change (nothing), a list page becomes items, bad
/// selectors at load, hostile HTML bounded.
@Suite struct PageSourceTests {
    static func shop(price: String, visitors: Int, banner: String, spacing: String = " ") -> [UInt8] {
        Array("""
            <html><head><title>Shop</title><script>var t = \(visitors);</script></head><body>
            <div class="banner">\(banner)</div>
            <div id="product"><h2>Kettle</h2>\(spacing)<p class="price">Price:&nbsp;\(price)\(spacing)EUR</p>
            <p class="stock">In stock (updated 2026-11-\(10 + visitors % 10))</p><span class="visitors">\(visitors) people viewing</span></div>
            </body></html>
            """.utf8)
    }

    @Test func theSelectedPartChangingIsOneDiffAndOneDeliveryAndTheRestIsNothing() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))", template: "{title}\\n{diff}" }
            sources:
              - name: kettle
                type: page
                url: "\(server.url("/files/shop.html"))"
                css: "#product"
                remove: [.visitors]
                ignore: [dates]
            """, to: "sources.yaml")
        server.serve("shop.html", body: Self.shop(price: "19.99", visitors: 3, banner: "Sale!"), contentType: "text/html; charset=utf-8")
        #expect(try await fetchrun.run([]).status == 0)
        // Outside the selection, an excluded counter, a date, other whitespace: nothing.
        server.serve("shop.html", body: Self.shop(price: "19.99", visitors: 8, banner: "Winter sale!", spacing: "\n\t  "), contentType: "text/html")
        let quiet = try await fetchrun.run([])
        #expect(quiet.stdout.contains("noData"), "\(quiet.stdout)")

        server.serve("shop.html", body: Self.shop(price: "17.49", visitors: 9, banner: "Sale!"), contentType: "text/html")
        let changed = try await fetchrun.run(["--format", "json"])
        #expect(changed.status == 0, "\(changed.stderr)")
        let event = try #require(try events(changed.stdout).first { $0["event"] as? String == "changed" }, "\(changed.stdout)")
        #expect(event["diff"] as? String == "@@ -1,3 +1,3 @@\n Kettle\n-Price: 19.99 EUR\n+Price: 17.49 EUR\n In stock (updated )", "\(event)")
        #expect(event["title"] as? String == "Price: 17.49 EUR")
        let hooks = server.requests(to: "/hook").filter { $0.method == "POST" }
        #expect(hooks.count == 1)
        #expect(String(decoding: hooks.first?.body ?? [], as: UTF8.self) == "Price: 17.49 EUR\n@@ -1,3 +1,3 @@\n Kettle\n-Price: 19.99 EUR\n+Price: 17.49 EUR\n In stock (updated )")
        #expect(try await fetchrun.run([]).stdout.contains("noData"))
    }

    @Test func aListPageBecomesItemsAndOnlyNewEntriesAreNew() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: notices
                type: page
                url: "\(server.url("/files/notices.html"))"
                items:
                  each: ul.notices > li
                  title: h3
                  link: a@href
                  published: time@datetime
                  summary: p
            """, to: "sources.yaml")
        func notices(_ numbers: [Int]) -> [UInt8] {
            let entries = numbers.map { "<li><h3>Notice \($0)</h3><p>Text of notice \($0)</p><a href=\"notice/\($0)\">more</a><time datetime=\"2026-11-\(10 + $0)T09:00:00Z\">\($0)</time></li>" }
            return Array("<html><body><ul class=\"notices\">\(entries.joined())</ul><p>Visitors: \(Int.random(in: 0..<999))</p></body></html>".utf8)
        }
        server.serve("notices.html", body: notices([2, 1]), contentType: "text/html")
        #expect(try await fetchrun.run([]).stdout.contains("baseline: 2 items"))
        server.serve("notices.html", body: notices([3, 2, 1]), contentType: "text/html")
        let second = try await fetchrun.run(["--format", "json"])
        let items = try events(second.stdout).filter { $0["event"] as? String == "item" }
        #expect(items.count == 1, "\(second.stdout)")
        #expect(items.first?["title"] as? String == "Notice 3")
        #expect(items.first?["link"] as? String == server.url("/files/notice/3"))
        #expect(items.first?["summary"] as? String == "Text of notice 3")
        #expect(items.first?["published"] as? String == "2026-11-13T09:00:00Z")
        // Reordered, nothing new.
        server.serve("notices.html", body: notices([1, 3, 2]), contentType: "text/html")
        #expect(try await fetchrun.run([]).stdout.contains("noData"))
    }

    @Test func testSourcePreviewsWhatASelectionYieldsAndStoresNothing() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: kettle, type: page, url: "\(server.url("/files/shop.html"))", css: "#product", remove: [.visitors] }
              - { name: links, type: page, url: "\(server.url("/files/shop.html"))", items: { each: "#product p" } }
              - { name: api, type: json, url: "\(server.url("/files/api.json"))", select: "$.price" }
              - { name: missing, type: json, url: "\(server.url("/files/api.json"))", select: "$.nothing" }
              - { name: refused, type: json, url: "\(server.url("/files/api.json"))", items: { each: "$[*]", title: "$..t" } }
            """, to: "sources.yaml")
        server.serve("shop.html", body: Self.shop(price: "19.99", visitors: 3, banner: "Sale!"), contentType: "text/html")
        server.serve("api.json", body: Array(#"{"price": {"amount": 19.99, "currency": "EUR"}}"#.utf8), contentType: "application/json")

        let page = try await fetchrun.run(["test-source", "kettle"])
        #expect(page.status == 0, "\(page.stderr)")
        #expect(page.stdout == "kettle (page): the selection as it is compared\n  Kettle\n  Price: 19.99 EUR\n  In stock (updated 2026-11-13)\n", "\(page.stdout)")
        let list = try await fetchrun.run(["test-source", "links", "--format", "json"])
        #expect(try events(list.stdout).compactMap { $0["title"] as? String } == ["Price: 19.99 EUR", "In stock (updated 2026-11-13)"], "\(list.stdout)")
        let json = try await fetchrun.run(["test-source", "api"])
        #expect(json.stdout.contains("  {\n    \"amount\": 19.99,\n    \"currency\": \"EUR\"\n  }"), "\(json.stdout)")
        let missing = try await fetchrun.run(["test-source", "missing"])
        #expect(missing.status == 2 && missing.stderr.contains("missing: selector: ") && missing.stderr.contains("'$.nothing' matches nothing"), "\(missing.stderr)")
        #expect(try await fetchrun.run(["test-source", "nope"]).status == 64)
        // A source the config refuses is named with its problems, not as unknown.
        let refused = try await fetchrun.run(["test-source", "refused"])
        #expect(refused.status == 65 && refused.stderr.contains("source 'refused': 'items.title': '$..t' can select more than one value"), "\(refused.stderr)")
        // Nothing stored: no state folder was made.
        #expect(!FileManager.default.fileExists(atPath: fetchrun.path("state")))
    }

    @Test func probeSuggestsASourceForAPageOrAJSONAPIAndAddAppendsItOnlyWhenItYields() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        server.serve("shop.html", body: Self.shop(price: "19.99", visitors: 3, banner: "Sale!").map { $0 }, contentType: "text/html")
        server.serve("landmark.html", body: Array("<html><head><title>Kettle \u{1b}]0;owned\u{07}shop</title></head><body><nav>Menu</nav><main><h1>Kettle</h1><p>19.99 EUR</p></main></body></html>".utf8), contentType: "text/html")
        server.serve("blog.html", body: Array(#"<html><head><title>Blog</title><link rel="alternate" type="application/rss+xml" title="Posts" href="/feed/3.xml"></head><body>Hi</body></html>"#.utf8), contentType: "text/html")
        server.serve("releases.json", body: Array(#"{"count": 2, "data": {"releases": [{"id": 1, "name": "v1.0", "html_url": "/r/1"}, {"id": 2, "name": "v1.1", "html_url": "/r/2"}]}}"#.utf8), contentType: "application/json")

        let page = try await fetchrun.run(["probe", server.url("/files/landmark.html")])
        #expect(page.status == 0, "\(page.stderr)")
        // The title's controls never reach the terminal (libxml2 drops what XML cannot hold).
        #expect(page.stdoutLines[1].contains("a web page: Kettle ]0;ownedshop"), "\(page.stdout)")
        #expect(!page.stdout.contains("\u{1b}") && !page.stdout.contains("\u{07}"))
        #expect(page.stdout.contains("suggested source:\n  - name: kettle-0-ownedshop\n    type: page\n    url: \"\(server.url("/files/landmark.html"))\"\n    css: \"main\"\n"), "\(page.stdout)")
        #expect(page.stdout.hasSuffix("the text of its main content (main):\n  Kettle\n  19.99 EUR\n"), "\(page.stdout)")
        let blog = try await fetchrun.run(["probe", server.url("/files/blog.html")])
        #expect(blog.stdout.contains("it links to 1 feed"), "\(blog.stdout)")
        #expect(blog.stdout.contains("    type: rss\n    url: \"\(server.url("/feed/3.xml"))\""), "\(blog.stdout)")
        let api = try await fetchrun.run(["probe", "--format", "json", server.url("/files/releases.json")])
        let probe = try #require(try events(api.stdout).first)
        #expect(probe["kind"] as? String == "json" && probe["entries"] as? Int == 2, "\(api.stdout)")
        #expect((probe["suggested"] as? [String: Any])?["items"] as? [String: String] == ["each": "$.data.releases[*]", "id": "id", "title": "name", "link": "html_url"], "\(api.stdout)")

        // add --type page: the main content unless --css says; checked by fetching first.
        let added = try await fetchrun.run(["add", "--type", "page", server.url("/files/landmark.html"), "--name", "kettle"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("added kettle  \(server.url("/files/landmark.html"))  (page, css: main; 2 lines watched)"), "\(added.stdout)")
        let before = try String(contentsOfFile: fetchrun.path("sources.yaml"), encoding: .utf8)
        let nothing = try await fetchrun.run(["add", "--type", "page", server.url("/files/shop.html"), "--css", ".nothing-here"])
        #expect(nothing.status == 2 && nothing.stderr.contains("'.nothing-here' matches nothing in the page"), "\(nothing.stderr)")
        let bad = try await fetchrun.run(["add", "--type", "page", server.url("/files/shop.html"), "--css", "p[", "--name", "broken"])
        #expect(bad.status == 65 && bad.stderr.contains("broken"), "\(bad.stderr)")
        let wrongType = try await fetchrun.run(["add", "--type", "page", server.url("/files/releases.json")])
        #expect(wrongType.status == 2 && wrongType.stderr.contains("is a JSON document: add it with --type json"), "\(wrongType.stderr)")
        let again = try await fetchrun.run(["add", "--type", "page", server.url("/files/landmark.html")])
        #expect(again.stderr.contains("already in"), "\(again.stderr)")
        #expect(try String(contentsOfFile: fetchrun.path("sources.yaml"), encoding: .utf8) == before)
        #expect(try await fetchrun.run(["add", "--type", "rss", "--css", "p", server.url("/files/shop.html")]).status == 64)

        // add --type json: the entries as items, or --select one value.
        let json = try await fetchrun.run(["add", "--type", "json", server.url("/files/releases.json"), "--name", "releases"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.contains("(json, items: $.data.releases[*]; 2 items)"), "\(json.stdout)")
        let count = try await fetchrun.run(["add", "--type", "json", server.url("/files/releases.json"), "--select", "$.count", "--name", "release-count"])
        #expect(count.status == 0, "\(count.stderr)")

        // What was added runs as written.
        let run = try await fetchrun.run(["run", "--format", "json", "--list-all"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let titles = try events(run.stdout).filter { $0["event"] as? String == "item" && $0["source"] as? String == "releases" }.compactMap { $0["title"] as? String }
        #expect(titles.sorted() == ["v1.0", "v1.1"], "\(run.stdout)")
        let links = try events(run.stdout).filter { $0["source"] as? String == "releases" }.compactMap { $0["link"] as? String }
        #expect(links.sorted() == [server.url("/r/1"), server.url("/r/2")], "\(run.stdout)")
    }

    @Test func badSelectorsAreRefusedWhenTheConfigLoads() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            sources:
              - name: a
                type: page
                url: http://127.0.0.1:9/
                css: "div >"
              - name: b
                type: page
                url: http://127.0.0.1:9/
                xpath: "//p["
              - name: c
                type: page
                url: http://127.0.0.1:9/
                remove: ["li:hover"]
                items: { each: "li", title: "h3 >" }
              - name: d
                type: page
                url: http://127.0.0.1:9/
                css: p
                xpath: //p
                as: markdown
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["validate"])
        #expect(result.status == 65)
        let stderr = result.stderr
        #expect(stderr.contains("sources.yaml:5:10: source 'a': 'css': not a CSS selector: column 6: a selector"), "\(stderr)")
        #expect(stderr.contains("sources.yaml:9:12: source 'b': 'xpath': not an XPath 1.0 expression"), "\(stderr)")
        #expect(stderr.contains("sources.yaml:13:13: source 'c': 'remove': 'li:hover' is not a CSS selector: column 4: unknown pseudo-class"), "\(stderr)")
        #expect(stderr.contains("sources.yaml:14:33: source 'c': 'items.title': not a CSS selector"), "\(stderr)")
        #expect(stderr.contains("source 'd': 'css' and 'xpath' both given"), "\(stderr)")
        #expect(stderr.contains("sources.yaml:20:9: source 'd': 'as': invalid as 'markdown': use text or html"), "\(stderr)")
    }

    @Test func hostilePagesCostOnlyTheirOwnSource() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        func source(_ name: String, _ options: String) -> String {
            "  - { name: \(name), type: page, url: \"\(server.url("/files/\(name).html"))\", deadline: 20s, \(options) }\n"
        }
        try fetchrun.write("state_dir: state\nsources:\n"
            + source("deep", "css: b")
            + source("large", "css: p, max_bytes: 52428800")
            + source("oversize", "css: p, max_bytes: 1048576")
            + source("many", "css: p, max_bytes: 52428800")
            + source("laughs", "css: p")
            + source("nothing", "css: .missing")
            + source("siblings", #"css: "h2 ~ p + p""#)
            + source("nested", "items: { each: div }")
            + source("powers", #"xpath: "//p[count(following-sibling::p) = count(preceding-sibling::p)]""#)
            + source("good", "css: h1"), to: "sources.yaml")
        // Shapes that once took a minute and more to match, or to list: a long run of siblings,
        // entries nested 250 deep around 100,000 paragraphs, and an XPath expression whose work
        // grows with the square of the paragraphs.
        let siblings = "<html><body><div><h2>t</h2>" + String(repeating: "<p>x</p>", count: 20_000) + "</div></body></html>"
        server.serve("siblings.html", body: Array(siblings.utf8), contentType: "text/html")
        server.serve("powers.html", body: Array(siblings.utf8), contentType: "text/html")
        let nested = "<html><body>" + String(repeating: "<div>", count: 250) + String(repeating: "<p>x</p>", count: 100_000) + String(repeating: "</div>", count: 250) + "</body></html>"
        server.serve("nested.html", body: Array(nested.utf8), contentType: "text/html")
        server.serve("deep.html", body: Array((String(repeating: "<div>", count: 200_000) + "<b>deep</b>" + String(repeating: "</div>", count: 200_000)).utf8), contentType: "text/html")
        // 50 MB of paragraphs: read within the cap and the deadline, the selection cut to what
        // is compared; 50 MB of tiny ones: more nodes than a page may have.
        func page(_ paragraph: String) -> [UInt8] {
            let bytes = Array(paragraph.utf8)
            var page: [UInt8] = Array("<html><body>".utf8)
            page.reserveCapacity(50 << 20)
            while page.count < (50 << 20) - bytes.count { page += bytes }
            return page
        }
        let large = page("<p>" + String(repeating: "lorem ipsum dolor sit amet ", count: 38) + "</p>\n")
        server.serve("large.html", body: large, contentType: "text/html")
        server.serve("oversize.html", body: large, contentType: "text/html")
        server.serve("many.html", body: page("<p>lorem ipsum</p>\n"), contentType: "text/html")
        server.serve("laughs.html", body: Array("""
            <!DOCTYPE html [<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">]>
            <html><body><p>&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;</p></body></html>
            """.utf8), contentType: "text/html")
        server.serve("nothing.html", body: Array("<html><body><p>hello</p></body></html>".utf8), contentType: "text/html")
        server.serve("good.html", body: Array("<html><body><h1>Fine</h1></body></html>".utf8), contentType: "text/html")

        let result = try await fetchrun.run(["--format", "json"], timeout: .seconds(120))
        #expect(result.status == 2, "\(result.stderr)")
        let sources = Dictionary(try events(result.stdout).filter { $0["event"] as? String == "source" }.map { ($0["source"] as! String, $0) }, uniquingKeysWith: { a, _ in a })
        func failure(_ name: String) -> (kind: String?, message: String) {
            let failure = sources[name]?["failure"] as? [String: Any]
            return (failure?["kind"] as? String, failure?["message"] as? String ?? "")
        }
        // Past the depth limit the nested element is left out: nothing matches, and a note says why.
        #expect(failure("deep").kind == "selector", "\(sources["deep"] ?? [:])")
        #expect(sources["large"]?["outcome"] as? String == "newData", "\(sources["large"] ?? [:])")
        #expect((sources["large"]?["notes"] as? [String])?.contains { $0.contains("only its first") } == true, "\(sources["large"] ?? [:])")
        #expect(failure("oversize").message.contains("1 MiB limit (max_bytes)"), "\(sources["oversize"] ?? [:])")
        #expect(failure("many").kind == "parse" && failure("many").message.contains("more than 2000000 elements and texts"), "\(sources["many"] ?? [:])")
        #expect(sources["laughs"]?["outcome"] as? String == "newData", "\(sources["laughs"] ?? [:])")
        #expect(failure("nothing").kind == "selector" && failure("nothing").message.contains("'.missing' matches nothing"), "\(sources["nothing"] ?? [:])")
        #expect(sources["good"]?["outcome"] as? String == "newData")
        #expect(sources["siblings"]?["outcome"] as? String == "newData", "\(sources["siblings"] ?? [:])")
        #expect(sources["nested"]?["new"] as? Int == 250, "\(sources["nested"] ?? [:])")
        #expect((sources["nested"]?["notes"] as? [String])?.contains { $0.contains("250 titles cut to size") } == true, "\(sources["nested"] ?? [:])")
        #expect(failure("powers").kind == "selector" && failure("powers").message.contains("50000000 operations on this page; stopped"), "\(sources["powers"] ?? [:])")
        let shown = try await fetchrun.run(["show", "laughs", "--format", "json"])
        let summary = try events(shown.stdout).first { $0["event"] as? String == "item" }?["summary"] as? String
        #expect((summary?.utf8.count ?? 0) < 100_000, "\(summary?.prefix(100) ?? "none")")
    }
}
