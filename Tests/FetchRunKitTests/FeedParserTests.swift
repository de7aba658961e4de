import Foundation
import Testing
@testable import FetchRunKit

func parse(_ xml: String, baseURL: String? = nil, charset: String? = nil) throws -> Feed {
    try FeedParser(baseURL: baseURL).parse(Data(xml.utf8), charset: charset)
}

@Suite struct FeedParserTests {
    @Test func rss20WithExtensions() throws {
        let feed = try parse("""
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:content="http://purl.org/rss/1.0/modules/content/"
                 xmlns:media="http://search.yahoo.com/mrss/" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
            <channel><title>News</title><link>https://example.org/</link>
            <item>
              <title>  First
                story </title>
              <link>https://example.org/1</link>
              <guid isPermaLink="false">id-1</guid>
              <pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate>
              <dc:creator>Jane Doe</dc:creator>
              <category>Tech</category><category>Chips</category>
              <description><![CDATA[<p>Summary <b>one</b></p>]]></description>
              <content:encoded><![CDATA[<p>Full text</p>]]></content:encoded>
              <enclosure url="https://example.org/1.mp3" type="audio/mpeg" length="12345"/>
              <media:content url="https://example.org/1.jpg" type="image/jpeg" fileSize="99"/>
              <itunes:duration>12:34</itunes:duration>
            </item>
            </channel></rss>
            """)
        #expect(feed.format == .rss20)
        #expect(feed.title == "News")
        #expect(feed.link == "https://example.org/")
        let item = try #require(feed.items.first)
        #expect(item.id == "id-1")
        #expect(item.title == "First story")
        #expect(item.link == "https://example.org/1")
        #expect(item.published == Date(timeIntervalSince1970: 1_055_217_600))
        #expect(item.author == "Jane Doe")
        #expect(item.summary == "<p>Summary <b>one</b></p>")
        #expect(item.enclosures == [Enclosure(url: "https://example.org/1.mp3", type: "audio/mpeg", length: 12345),
                                    Enclosure(url: "https://example.org/1.jpg", type: "image/jpeg", length: 99)])
        #expect(item.tags == ["Tech", "Chips"])
        #expect(item.extra["duration"] == "12:34")
    }

    @Test func namespacesAreMatchedByURINotPrefix() throws {
        let feed = try parse("""
            <rss version="2.0" xmlns:dublin="http://purl.org/dc/elements/1.1/" xmlns:dc="http://example.org/not-dublin-core">
            <channel><title>T</title>
            <item><title>A</title><guid>a</guid><dc:creator>Wrong</dc:creator><dublin:creator>Right</dublin:creator><dublin:date>2003-06-10T04:00:00Z</dublin:date></item>
            </channel></rss>
            """)
        #expect(feed.items[0].author == "Right")
        #expect(feed.items[0].published == Date(timeIntervalSince1970: 1_055_217_600))
    }

    @Test func rss091AndRss092() throws {
        #expect(try parse("<rss version=\"0.91\"><channel><title>T</title><item><title>A</title><link>http://x/a</link></item></channel></rss>").format == .rss091)
        let feed = try parse("<rss version=\"0.92\"><channel><title>T</title><item><description>Only a description</description></item></channel></rss>")
        #expect(feed.format == .rss092)
        // No title: the description stands in; no guid or link: a stable hash is the id.
        #expect(feed.items[0].title == "Only a description")
        #expect(feed.items[0].id.hasPrefix("hash:"))
        let again = try parse("<rss version=\"0.92\"><channel><title>T</title><item><description>Only a description</description></item></channel></rss>")
        #expect(again.items[0].id == feed.items[0].id)
    }

    @Test func rss10RDF() throws {
        let feed = try parse("""
            <?xml version="1.0"?>
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
              <channel rdf:about="http://example.org/"><title>RDF site</title><link>http://example.org/</link></channel>
              <item rdf:about="http://example.org/item/1">
                <title>One</title><link>http://example.org/1</link><description>Desc</description>
                <dc:date>2003-06-10T06:00:00+02:00</dc:date>
              </item>
              <item rdf:about="http://example.org/item/2"><title>Two</title><link>http://example.org/2</link></item>
            </rdf:RDF>
            """)
        #expect(feed.format == .rss10)
        #expect(feed.title == "RDF site")
        #expect(feed.items.map(\.id) == ["http://example.org/item/1", "http://example.org/item/2"])
        #expect(feed.items[0].published == Date(timeIntervalSince1970: 1_055_217_600))
        #expect(feed.items[0].summary == "Desc")
    }

    @Test func rss090() throws {
        let feed = try parse("""
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://my.netscape.com/rdf/simple/0.9/">
              <channel><title>Old</title><link>http://old.example/</link></channel>
              <item><title>Ancient</title><link>http://old.example/1</link></item>
            </rdf:RDF>
            """)
        #expect(feed.format == .rss090)
        #expect(feed.items.map(\.title) == ["Ancient"])
        #expect(feed.items[0].id == "http://old.example/1")
    }

    @Test func atom10() throws {
        let feed = try parse("""
            <feed xmlns="http://www.w3.org/2005/Atom">
              <title type="text">Atom feed</title>
              <link rel="self" href="https://example.org/feed.atom"/>
              <link href="https://example.org/"/>
              <entry>
                <title type="html">Caf&amp;eacute; &amp;amp; more</title>
                <link rel="self" href="https://example.org/self/1"/>
                <link rel="enclosure" type="audio/mpeg" length="42" href="https://example.org/1.mp3"/>
                <link rel="alternate" type="text/html" href="https://example.org/posts/1"/>
                <link rel="alternate" type="text/html" hreflang="de" href="https://example.org/de/posts/1"/>
                <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
                <published>2003-06-10T04:00:00Z</published>
                <updated>2003-06-11T04:00:00Z</updated>
                <author><name>Ann Author</name><email>ann@example.org</email></author>
                <category term="swift"/>
                <summary>Short</summary>
                <content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>Long</p></div></content>
              </entry>
              <entry><title>Second</title><link href="/relative/2"/><id>tag:example.org,2003:2</id><updated>2003-06-12T04:00:00Z</updated></entry>
            </feed>
            """, baseURL: "https://example.org/feeds/main.atom")
        #expect(feed.format == .atom10)
        #expect(feed.title == "Atom feed")
        #expect(feed.link == "https://example.org/")
        let first = feed.items[0]
        #expect(first.title == "Café & more")
        #expect(first.link == "https://example.org/posts/1")
        #expect(first.id == "urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a")
        #expect(first.published == Date(timeIntervalSince1970: 1_055_217_600))
        #expect(first.updated == Date(timeIntervalSince1970: 1_055_304_000))
        #expect(first.author == "Ann Author")
        #expect(first.summary == "Short")
        #expect(first.enclosures == [Enclosure(url: "https://example.org/1.mp3", type: "audio/mpeg", length: 42)])
        #expect(first.tags == ["swift"])
        #expect(feed.items[1].link == "https://example.org/relative/2")
        #expect(feed.items[1].published == nil)
        #expect(feed.items[1].updated != nil)
    }

    @Test func atom03() throws {
        let feed = try parse("""
            <feed version="0.3" xmlns="http://purl.org/atom/ns#">
              <title>Old Atom</title>
              <entry><title>E</title><link rel="alternate" type="text/html" href="http://example.org/e"/>
                <id>tag:e</id><issued>2003-06-10T04:00:00Z</issued><modified>2003-06-10T05:00:00Z</modified>
                <content type="text/html" mode="escaped">&lt;p&gt;Hi&lt;/p&gt;</content></entry>
            </feed>
            """)
        #expect(feed.format == .atom03)
        #expect(feed.items[0].published == Date(timeIntervalSince1970: 1_055_217_600))
        #expect(feed.items[0].updated == Date(timeIntervalSince1970: 1_055_221_200))
        #expect(feed.items[0].summary == "<p>Hi</p>")
        #expect(feed.items[0].link == "http://example.org/e")
    }

    @Test func entitiesAndDoubleEscaping() throws {
        let feed = try parse("""
            <rss version="2.0"><channel><title>T</title>
            <item><title>It&amp;#8217;s &#x2014; a &quot;test&quot;&nbsp;&copy;</title><guid>e</guid></item>
            </channel></rss>
            """)
        // Titles are single-spaced: the no-break space becomes a space.
        #expect(feed.items[0].title == "It’s — a \"test\" ©")
    }

    @Test func aBadFieldDropsOnlyThatField() throws {
        let feed = try parse("""
            <rss version="2.0"><channel><title>T</title>
            <item><title>Bad date</title><guid>1</guid><pubDate>the day after tomorrow</pubDate><link>http://x/1</link></item>
            <item><title>Good</title><guid>2</guid><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>
            </channel></rss>
            """)
        #expect(feed.items.count == 2)
        #expect(feed.items[0].published == nil)
        #expect(feed.items[0].link == "http://x/1")
        #expect(feed.warnings.contains { $0.contains("the day after tomorrow") })
    }

    @Test func idFallsBackToLinkThenHash() throws {
        let feed = try parse("""
            <rss version="2.0"><channel><title>T</title>
            <item><title>Linked</title><link>http://x/linked</link></item>
            <item><title>Permalink guid</title><guid>http://x/permalink</guid></item>
            <item><title>Bare</title><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>
            </channel></rss>
            """)
        #expect(feed.items[0].id == "http://x/linked")
        #expect(feed.items[1].id == "http://x/permalink")
        #expect(feed.items[1].link == "http://x/permalink")
        #expect(feed.items[2].id == Item.fallbackID(title: "Bare", published: Date(timeIntervalSince1970: 1_055_217_600)))
    }

    @Test func encodingFromDeclarationBOMAndHTTP() throws {
        let latin1 = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss version=\"2.0\"><channel><title>T</title><item><title>Caf".utf8) + [0xE9] + Array("</title><guid>1</guid></item></channel></rss>".utf8)
        #expect(try FeedParser().parse(Data(latin1)).items[0].title == "Café")

        // No declaration: the HTTP charset says how to read the bytes.
        let undeclared = Array("<rss version=\"2.0\"><channel><title>T</title><item><title>Caf".utf8) + [0xE9] + Array("</title><guid>1</guid></item></channel></rss>".utf8)
        #expect(try FeedParser().parse(Data(undeclared), charset: "iso-8859-1").items[0].title == "Café")

        // The document's own declaration wins over a wrong HTTP charset.
        #expect(try FeedParser().parse(Data(latin1), charset: "utf-8").items[0].title == "Café")

        let bom: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("<rss version=\"2.0\"><channel><title>T</title><item><title>Ünïcode</title><guid>1</guid></item></channel></rss>".utf8)
        #expect(try FeedParser().parse(Data(bom), charset: "iso-8859-1").items[0].title == "Ünïcode")

        let utf16 = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><rss version=\"2.0\"><channel><title>T</title><item><title>Wide ✓</title><guid>1</guid></item></channel></rss>"
        #expect(try FeedParser().parse(utf16.data(using: .utf16)!).items[0].title == "Wide ✓")
    }

    @Test func documentsThatDeclareEntitiesAreRefusedAndNothingIsLoaded() throws {
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-secret-\(UUID().uuidString)")
        try Data("TOP-SECRET-CONTENT".utf8).write(to: secret)
        let xxe = """
            <?xml version="1.0"?>
            <!DOCTYPE rss [<!ENTITY secret SYSTEM "file://\(secret.path)">]>
            <rss version="2.0"><channel><title>XXE</title>
            <item><title>Leak: &secret;</title><guid>x</guid><description>&secret;</description></item>
            </channel></rss>
            """
        #expect {
            _ = try parse(xxe)
        } throws: { error in
            "\(error)".contains("declares an external entity 'secret'") && !"\(error)".contains("TOP-SECRET")
        }
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
            <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">]>
            <rss version="2.0"><channel><title>L</title><item><title>&lol2;</title><guid>l</guid></item></channel></rss>
            """
        // Three levels are 300 bytes: expanded, as libxml2 would within its own limits.
        #expect(try parse(laughs).items.first?.title == String(repeating: "lol", count: 100))
        func lolz(levels: Int) -> String {
            var document = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol0 \"lol\">"
            for level in 1...levels { document += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1);", count: 10) + "\">" }
            return document + "]>\n<rss version=\"2.0\"><channel><item><title>&lol\(levels);</title></item></channel></rss>"
        }
        // Seven levels would be 30 MB from a document of 700 bytes: refused at the size bound,
        // after a few kilobytes of work.
        let start = ContinuousClock.now
        #expect { _ = try parse(lolz(levels: 7)) } throws: { "\($0)".contains("expand to more than 10×") }
        #expect(ContinuousClock.now - start < .seconds(30))
        // Nesting deeper than 8 (or an entity that names itself) is refused outright.
        #expect { _ = try parse(lolz(levels: 9)) } throws: { "\($0)".contains("nest deeper than 8") }
        let loop = "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a \"&b;\"><!ENTITY b \"&a;\">]><rss version=\"2.0\"><channel><item><title>&a;</title></item></channel></rss>"
        #expect { _ = try parse(loop) } throws: { "\($0)".contains("nest deeper than 8") }
    }

    @Test func anExternalDTDIsNeitherLoadedNorNeeded() throws {
        // RSS 0.91 feeds name Netscape's DTD for the HTML entities; the entities still decode.
        let feed = try parse("""
            <?xml version="1.0"?>
            <!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">
            <rss version="0.91"><channel><title>Old</title><item><title>Caf&eacute;&nbsp;open</title><link>http://x/1</link></item></channel></rss>
            """)
        #expect(feed.items.map(\.title) == ["Café open"])
    }

    @Test func notAFeedAndNotXML() {
        #expect(throws: FeedParseError.self) { try parse("<html><body>hi</body></html>") }
        #expect(throws: FeedParseError.self) { try parse("this is not xml at all") }
        #expect(throws: FeedParseError.self) { try FeedParser().parse(Data()) }
        do {
            _ = try parse("<html><body>hi</body></html>")
        } catch {
            #expect("\(error)".contains("root element is <html>"))
        }
    }

    @Test func truncatedDocumentKeepsTheItemsBeforeTheBreak() throws {
        let feed = try parse("<rss version=\"2.0\"><channel><title>T</title><item><title>Whole</title><guid>1</guid></item><item><title>Cut off")
        #expect(feed.items.map(\.title).first == "Whole")
        #expect(!feed.warnings.isEmpty)
    }

    @Test func generatedFixtureFeedsParseCompletely() throws {
        for number in [1, 17, 333] {
            let generated = FeedGeneratorShim.feed(number)
            let feed = try FeedParser().parse(Data(generated.rss.utf8))
            #expect(feed.items.count == generated.count)
            #expect(feed.items.allSatisfy { $0.published != nil && $0.link != nil && $0.author != nil })
            let atom = try FeedParser().parse(Data(generated.atom.utf8))
            #expect(atom.format == .atom10)
            #expect(atom.items.map(\.id) == feed.items.map(\.id))
        }
    }
}

@Suite struct JSONFeedTests {
    /// JSON sets no limit on numbers: one past a double's range where fetchrun does not look
    /// is read past; where it looks, that field is dropped with a reason, never the feed.
    @Test func numbersBeyondADoubleLoseAFieldNeverTheFeed() throws {
        let huge = String(repeating: "9", count: 400)
        let feed = try parse("""
        {"version": "https://jsonfeed.org/version/1.1", "title": "t", "_ext": {"big": 1e999, "long": \(huge), "neg": -\(huge)},
         "items": [
           {"id": 1e999, "url": "https://x.example/a", "title": "A", "_n": -1e999},
           {"id": "b", "title": "B", "_m": \(huge), "attachments": [{"url": "https://x.example/b.mp3", "mime_type": "audio/mpeg", "size_in_bytes": \(huge)}]}
         ]}
        """)
        #expect(feed.items.map(\.title) == ["A", "B"])
        #expect(feed.items[0].id == "https://x.example/a")
        #expect(feed.warnings.contains { $0.contains("item 1: 'id' is a number beyond what a double holds; dropped") }, "\(feed.warnings)")
        #expect(feed.items[1].enclosures.first?.length == nil)
        // Such a number written back out is null, never "inf".
        var writer = JSONWriter()
        writer.value(Double.infinity)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "null")
        #expect(JSONValue.number(-.infinity).scalarText == nil)
    }

    @Test func jsonFeed11ItemsIdsDatesAuthorsTagsAndAttachments() throws {
        let feed = try parse("""
        \u{FEFF}  {
          "version": "https://jsonfeed.org/version/1.1",
          "title": "Pod &amp; News",
          "home_page_url": "/",
          "authors": [{ "name": "Feed Author" }],
          "items": [
            {
              "id": "https://example.org/1", "url": "/posts/1", "title": "First",
              "content_html": "<p>Hello</p>", "summary": "Short",
              "date_published": "2026-11-20T10:00:00+01:00", "date_modified": "2026-11-21T00:00:00Z",
              "authors": [{ "url": "https://x" }, { "name": "Ann" }],
              "tags": ["swift", 5, "feeds"],
              "image": "img/1.png",
              "attachments": [
                { "url": "/media/1.mp3", "mime_type": "audio/mpeg", "size_in_bytes": 12345, "duration_in_seconds": 60 },
                { "mime_type": "audio/mpeg" }
              ]
            },
            { "id": 42, "content_text": "No title here, only text", "date_published": "yesterday" },
            "not an item",
            { "id": true, "title": ["not", "a", "string"], "external_url": "https://elsewhere.example/a" }
          ]
        }
        """, baseURL: "https://example.org/feed.json")
        #expect(feed.format == .jsonFeed11)
        #expect(feed.title == "Pod & News")
        #expect(feed.link == "https://example.org/")
        #expect(feed.items.count == 3)
        let first = feed.items[0]
        #expect(first.id == "https://example.org/1")
        #expect(first.link == "https://example.org/posts/1")
        #expect(first.title == "First")
        #expect(first.summary == "Short")
        #expect(first.published == Date(timeIntervalSince1970: 1_795_165_200))
        #expect(first.updated == Date(timeIntervalSince1970: 1_795_219_200))
        #expect(first.author == "Ann")
        #expect(first.tags == ["swift", "feeds"])
        #expect(first.extra["image"] == "https://example.org/img/1.png")
        #expect(first.enclosures == [Enclosure(url: "https://example.org/media/1.mp3", type: "audio/mpeg", length: 12345)])
        // A number id is its text; no title: the text's start; an unreadable date is dropped.
        let second = feed.items[1]
        #expect(second.id == "42")
        #expect(second.title == "No title here, only text")
        #expect(second.published == nil)
        #expect(second.author == "Feed Author")
        // Bad fields are dropped, the item kept.
        let third = feed.items[2]
        #expect(third.id == "https://elsewhere.example/a")
        #expect(third.link == "https://elsewhere.example/a")
        #expect(third.title == "(untitled)")
        let warnings = feed.warnings.joined(separator: "\n")
        #expect(warnings.contains("unreadable date 'yesterday'"))
        #expect(warnings.contains("item 3 is not an object"))
        #expect(warnings.contains("item 4: 'title' is not a string"))
        #expect(warnings.contains("an attachment without a 'url'"))
    }

    @Test func jsonFeed10AuthorAndVersion() throws {
        let feed = try parse(#"{"version":"https://jsonfeed.org/version/1","title":"T","author":{"name":"Old Style"},"items":[{"id":"a","title":"A"}]}"#)
        #expect(feed.format == .jsonFeed10)
        #expect(feed.items.map(\.author) == ["Old Style"])
    }

    @Test func documentsThatAreNotJSONFeedsFailWithAReason() {
        let cases: [(String, String)] = [
            (#"{"title":"no version","items":[]}"#, "no 'version' naming jsonfeed.org"),
            (#"{"version":"https://jsonfeed.org/version/1.1","title":"T"}"#, "without an 'items' array"),
            (#"{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"a"}"#, "not a JSON Feed: not valid JSON"),
            (#"{"version":"https://jsonfeed.org/version/1.1","items":["# + String(repeating: "[", count: 10_000), "nested deeper than 512"),
        ]
        for (document, expected) in cases {
            #expect {
                _ = try parse(document)
            } throws: { error in
                "\(error)".contains(expected)
            }
        }
    }

    @Test func itemsPastTheLimitAreDroppedWithAWarning() throws {
        let items = (0..<30).map { #"{"id":"\#($0)","title":"t"}"# }.joined(separator: ",")
        let document = #"{"version":"https://jsonfeed.org/version/1.1","items":[\#(items)]}"#
        let feed = try FeedParser(limits: FeedParseLimits(items: 10)).parse(Data(document.utf8))
        #expect(feed.items.count == 10)
        #expect(feed.warnings.contains { $0.contains("20 more dropped") })
    }
}

/// The cases other parsers' conformance suites hold that fetchrun used to miss.
@Suite struct ParserConformanceTests {
    @Test func relativeLinksResolveAgainstXMLBaseOfTheElementAndItsAncestors() throws {
        let atom = try parse("""
            <feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://example.org/blog/">
              <title>T</title><link href="index.html"/>
              <entry xml:base="2026/">
                <id>e1</id><title>One</title><link href="one.html"/>
                <link rel="enclosure" type="audio/mpeg" href="/media/one.mp3"/>
              </entry>
              <entry><id>e2</id><title>Two</title><link href="two.html"/></entry>
            </feed>
            """, baseURL: "https://fetched.example/feed.xml")
        #expect(atom.link == "http://example.org/blog/index.html")
        #expect(atom.items.map(\.link) == ["http://example.org/blog/2026/one.html", "http://example.org/blog/two.html"])
        #expect(atom.items[0].enclosures.first?.url == "http://example.org/media/one.mp3")

        let rss = try parse("""
            <rss version="2.0"><channel><title>R</title>
              <item xml:base="http://other.example/a/"><title>x</title><link>b.html</link></item>
              <item><title>y</title><link>c.html</link></item>
            </channel></rss>
            """, baseURL: "https://fetched.example/feed.xml")
        // Without xml:base, the feed's own URL.
        #expect(rss.items.map(\.link) == ["http://other.example/a/b.html", "https://fetched.example/c.html"])
    }

    @Test func atom03Base64AndEscapedContent() throws {
        let feed = try parse("""
            <feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>Old</title>
              <entry>
                <id>tag:1</id>
                <title mode="escaped" type="text/html">A &lt;b&gt;bold&lt;/b&gt; title</title>
                <content mode="base64" type="text/html">PHA+SGVsbG8sIHfDtnJsZDwvcD4=</content>
                <issued>2003-12-13T18:30:02Z</issued>
              </entry>
              <entry><id>tag:2</id><title mode="base64">VGl0bGUgdHdv</title><summary mode="base64">!!! not base64 @@@ ===</summary></entry>
            </feed>
            """)
        #expect(feed.format == .atom03)
        #expect(feed.items[0].title == "A bold title")
        #expect(feed.items[0].summary == "<p>Hello, wörld</p>")
        #expect(feed.items[1].title == "Title two")
    }

    @Test func rss20InUserLandsNamespaceWithAPrefix() throws {
        let feed = try parse("""
            <r:rss version="2.0" xmlns:r="http://backend.userland.com/rss2"><r:channel><r:title>Prefixed</r:title>
              <r:item><r:title>One</r:title><r:link>http://example.org/1</r:link><r:guid>g1</r:guid>
                <r:pubDate>Sat, 13 Dec 2003 18:30:02 GMT</r:pubDate></r:item>
            </r:channel></r:rss>
            """)
        #expect(feed.format == .rss20)
        #expect(feed.title == "Prefixed")
        #expect(feed.items.map(\.id) == ["g1"])
        #expect(feed.items.first?.published != nil)
    }

    @Test func dublinCoreTitleAndIdentifierStandInAndAtomWithoutItsNamespaceIsAtom() throws {
        let rss = try parse("""
            <rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>D</title>
              <item><dc:title>From DC</dc:title><dc:identifier>urn:dc:1</dc:identifier><description>text</description></item>
              <item><title>Own</title><dc:title>Ignored</dc:title><guid>g</guid></item>
            </channel></rss>
            """)
        #expect(rss.items.map(\.title) == ["From DC", "Own"])
        #expect(rss.items.first?.id == "urn:dc:1")

        let atom = try parse("""
            <feed><title>No namespace</title><entry><id>n1</id><title>Entry</title><link href="http://example.org/n1"/>
              <updated>2026-01-02T03:04:05Z</updated></entry></feed>
            """)
        #expect(atom.format == .atom10)
        #expect(atom.title == "No namespace")
        #expect(atom.items.map(\.id) == ["n1"])
        #expect(atom.items.first?.link == "http://example.org/n1")
    }

    @Test func internalEntitiesAreExpandedInTextAndAttributes() throws {
        let feed = try parse("""
            <?xml version="1.0"?>
            <!-- a comment before the DOCTYPE -->
            <!DOCTYPE rss [
              <!ENTITY site "https://example.org">
              <!ENTITY copy "&#169;">
              <!ENTITY brand "Acme &copy; 2026">
              <!ELEMENT rss ANY>
            ]>
            <rss version="2.0"><channel><title>&brand;</title>
              <item><title>News from &brand;</title><link>&site;/news/1</link>
                <enclosure url="&site;/e.mp3" type="audio/mpeg"/>
                <description><![CDATA[literal &brand; stays]]></description></item>
            </channel></rss>
            """)
        #expect(feed.title == "Acme © 2026")
        #expect(feed.items.first?.title == "News from Acme © 2026")
        #expect(feed.items.first?.link == "https://example.org/news/1")
        #expect(feed.items.first?.enclosures.first?.url == "https://example.org/e.mp3")
        #expect(feed.items.first?.summary == "literal &brand; stays")
        #expect { _ = try parse("<!DOCTYPE rss [<!ENTITY % p \"x\">]><rss version=\"2.0\"><channel/></rss>") } throws: { "\($0)".contains("parameter entit") }
    }
}
