import Foundation
import Testing
@testable import FetchRunKit

/// What `probe` and `add --type` suggest for a page or a JSON document.
@Suite struct SourceSuggestionTests {
    func page(_ html: String) throws -> SourceSuggestion.Page {
        SourceSuggestion.page(try HTMLDocument.parse(Data(html.utf8), url: "https://site.example/").document)
    }

    func json(_ text: String) throws -> SourceSuggestion.JSONDocument {
        SourceSuggestion.json(try JSONAdapter.read(Data(text.utf8), from: "test"))
    }

    @Test func aPageIsWatchedByItsMainLandmarkElseWhole() throws {
        let landmark = try page("<html><head><title> Kettle \n shop </title></head><body><nav>Menu</nav><main><h1>Kettle</h1><p>19.99</p></main></body></html>")
        #expect(landmark.title == "Kettle shop")
        #expect(landmark.css == "main")
        #expect(landmark.text == "Kettle\n19.99")
        // Two articles are a list, not the content: the next landmark is taken.
        let articles = try page("<body><div id=content><article>One</article><article>Two</article></div></body>")
        #expect(articles.css == "#content")
        // An empty <main> (filled by script) is passed over.
        let empty = try page("<body><main></main><div role=main>Text</div></body>")
        #expect(empty.css == "[role=main]")
        let none = try page("<body><div>Just <b>this</b></div></body>")
        #expect(none.css == nil)
        #expect(none.text == "Just this")
    }

    @Test func theLargestArrayOfObjectsNearTheRootBecomesItems() throws {
        let releases = try json(#"{"count": 3, "meta": {"tags": [{"x": 1}]}, "data": {"releases": [{"id": 7, "name": "v1", "html_url": "/r/1", "published_at": "2026-01-01T00:00:00Z"}, {"id": 8, "name": "v2"}]}}"#)
        // meta.tags has 1 entry, data.releases 2: the larger wins.
        #expect(releases.items.map(\.key) == ["each", "id", "title", "link", "published"])
        #expect(releases.items.map(\.value) == ["$.data.releases[*]", "id", "name", "html_url", "published_at"])
        #expect(releases.entries == 2)
        #expect(releases.preview == ["v1", "v2"])
        #expect(releases.select == nil)

        let root = try json(#"[{"title": "a", "url": "https://x/a"}, {"title": "b"}]"#)
        #expect(root.items.map(\.value) == ["$[*]", "title", "url"])

        // Names that are not identifiers are bracketed and escaped, and the path parses.
        let odd = try json(#"{"the list's": [{"label": "one"}]}"#)
        let each = try #require(odd.items.first?.value)
        #expect(each == #"$['the list\'s'][*]"#)
        #expect(try JSONPath(each).select(in: JSONAdapter.read(Data(#"{"the list's": [{"label": "one"}]}"#.utf8), from: "test"))?.count == 1)

        // Entries without a recognisable member are told apart by their first text member.
        let anonymous = try json(#"[{"zeta": "z1", "alpha": "a1"}, {"alpha": "a2"}]"#)
        #expect(anonymous.items.map(\.key) == ["each", "id"])
        #expect(anonymous.items.last?.value == "alpha")
    }

    @Test func aDocumentWithoutEntriesIsWatchedWhole() throws {
        let status = try json(#"{"status": "ok", "list": [1, 2]}"#)
        #expect(status.items.isEmpty)
        #expect(status.select == "$")
        #expect(status.preview.first == "{")
        #expect(status.previewKey == nil)
    }

    @Test func jsonIsRecognisedByTypeElseByItsFirstCharacter() {
        #expect(SourceSuggestion.looksLikeJSON(Data("x".utf8), contentType: "application/vnd.api+json"))
        #expect(SourceSuggestion.looksLikeJSON(Data("\u{FEFF} \n [1]".utf8), contentType: "text/plain"))
        #expect(!SourceSuggestion.looksLikeJSON(Data("<html>".utf8), contentType: nil))
    }
}
