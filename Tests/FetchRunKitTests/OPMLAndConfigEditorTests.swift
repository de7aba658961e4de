import Foundation
import Testing
@testable import FetchRunKit

@Suite struct OPMLTests {
    @Test func feedsComeInOrderWithTheirFoldersAsTags() throws {
        let feeds = try OPML.read(Data("""
        <?xml version="1.0"?>
        <opml version="2.0"><head><title>t</title></head><body>
          <outline text="Tech"><outline text="Linux">
            <outline text="Kernel &amp; Co" type="rss" xmlUrl="https://k.example/rss"/>
          </outline>
          <outline title="Only a title" xmlUrl="https://t.example/atom"/></outline>
          <outline text="Empty folder"/>
          <outline text="Top" xmlUrl="https://top.example/feed"/>
        </body></opml>
        """.utf8))
        #expect(feeds == [
            OPML.Feed(title: "Kernel & Co", url: "https://k.example/rss", tags: ["Tech", "Linux"]),
            OPML.Feed(title: "Only a title", url: "https://t.example/atom", tags: ["Tech"]),
            OPML.Feed(title: "Top", url: "https://top.example/feed", tags: []),
        ])
    }

    /// Deeply nested folders with long titles: each feed takes the outermost eight as tags,
    /// each cut to an item tag's 256 bytes, so what an import writes stays near what it read.
    @Test func aFeedTakesItsOutermostFoldersAsTagsEachCutToSize() throws {
        let depth = 200, title = String(repeating: "é", count: 1_000)
        let opml = #"<opml version="2.0"><body>"# + (0..<depth).map { #"<outline text="\#(title)\#($0)">"# }.joined()
            + (0..<300).map { #"<outline text="f\#($0)" xmlUrl="https://f.example/\#($0)"/>"# }.joined()
            + String(repeating: "</outline>", count: depth) + "</body></opml>"
        let feeds = try OPML.read(Data(opml.utf8))
        #expect(feeds.count == 300)
        let cut = String(repeating: "é", count: 126) + "…"
        #expect(feeds.allSatisfy { $0.tags == Array(repeating: cut, count: OPML.maximumTags) && $0.tagsShortened })
        #expect(feeds.map { $0.tags.reduce(0) { $0 + $1.utf8.count } }.max() ?? 0 <= 8 * 256)
    }

    @Test func whatWeWriteReadsBack() throws {
        let feeds = [
            OPML.Feed(title: "A \"quoted\" <b>&</b>", url: "https://a.example/?x=1&y=2", tags: ["Folder"]),
            OPML.Feed(title: nil, url: "https://b.example/feed", tags: []),
            OPML.Feed(title: "C", url: "https://c.example/feed", tags: ["Folder", "Ignored"]),
        ]
        let written = OPML.write(feeds, title: "t\u{01}", created: Date(timeIntervalSince1970: 0))
        #expect(written.contains(#"<opml version="2.0">"#))
        let read = try OPML.read(Data(written.utf8))
        #expect(read == [
            OPML.Feed(title: "https://b.example/feed", url: "https://b.example/feed", tags: []),
            OPML.Feed(title: "A \"quoted\" <b>&</b>", url: "https://a.example/?x=1&y=2", tags: ["Folder"]),
            OPML.Feed(title: "C", url: "https://c.example/feed", tags: ["Folder"]),
        ])
    }

    @Test func notOPMLAndHostileDocumentsFailWithAReason() {
        let laughs = """
        <?xml version="1.0"?><!DOCTYPE opml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]>
        <opml><body><outline text="&h;" xmlUrl="https://x.example/"/></body></opml>
        """
        let cases: [(String, String)] = [
            ("<rss><channel/></rss>", "not OPML"),
            ("<opml><body><outline", "unreadable XML"),
            ("", "empty document"),
            ("<opml><body><outline " + (0..<2_000).map { "a\($0)=\"x\"" }.joined(separator: " ") + "/></body></opml>", "more than 1000 attributes"),
        ]
        for (document, expected) in cases {
            #expect { _ = try OPML.read(Data(document.utf8)) } throws: { "\($0)".contains(expected) }
        }
        // Entities are not expanded into a billion laughs: refused, or read without them.
        let start = ContinuousClock.now
        let read = try? OPML.read(Data(laughs.utf8))
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect((read?.first?.title?.count ?? 0) < 1_000_000)
    }
}

@Suite struct ConfigEditorTests {
    let feed = ConfigEditor.NewSource(name: "new-feed", type: "rss", fields: [("url", "https://n.example/?a=${HOME}&q=\"x\"\\")], tags: ["Tech $HOME", "Linux"])

    func load(_ text: String) throws -> FetchConfig {
        try ConfigLoader(environment: ["HOME": "/root"]).load(text: text, file: "s.yaml", directory: "/")
    }

    @Test func appendsToTheListKeepingEverythingElse() throws {
        let original = """
        # top comment
        sources:
            # first
            - name: a   # trailing
              type: traffic
              # inside a

        # before defaults
        defaults: { keep: 5 }
        """
        let edited = try ConfigEditor.appending([feed], to: original)
        let lines = edited.components(separatedBy: "\n")
        #expect(lines.prefix(6).joined(separator: "\n") == original.components(separatedBy: "\n").prefix(6).joined(separator: "\n"))
        #expect(lines[6] == "    - name: new-feed")
        #expect(edited.hasSuffix("\n# before defaults\ndefaults: { keep: 5 }\n"))
        let config = try load(edited)
        #expect(config.sources.map(\.name) == ["a", "new-feed"])
        let added = try #require(config.sources.last?.adapter as? RSSAdapter)
        // Text from outside is taken literally: no ${HOME} expansion, quotes and backslashes intact.
        #expect(added.fetcher.url == "https://n.example/?a=${HOME}&q=\"x\"\\")
        #expect(config.sources.last?.tags == ["Tech $HOME", "Linux"])
    }

    @Test func startsAListWhereThereIsNone() throws {
        #expect(try load(try ConfigEditor.appending([feed], to: "")).sources.map(\.name) == ["new-feed"])
        #expect(try load(try ConfigEditor.appending([feed], to: "state_dir: s\n")).sources.map(\.name) == ["new-feed"])
        #expect(try load(try ConfigEditor.appending([feed], to: "sources: []\nstate_dir: s\n")).sources.map(\.name) == ["new-feed"])
        // An indentless list at the margin.
        let margin = try ConfigEditor.appending([feed], to: "sources:\n- name: a\n  type: traffic\nstate_dir: s\n")
        #expect(try load(margin).sources.map(\.name) == ["a", "new-feed"])
        #expect(throws: ConfigEditor.EditError.self) { try ConfigEditor.appending([feed], to: "sources: [{ name: a, type: traffic }]\n") }
    }

    @Test func namesAreSlugsMadeUnique() {
        #expect(ConfigEditor.sourceName(title: "Café & Crème: News!", url: "https://x", taken: []) == "cafe-creme-news")
        #expect(ConfigEditor.sourceName(title: "LWN", url: "https://x", taken: ["lwn", "lwn-2"]) == "lwn-3")
        #expect(ConfigEditor.sourceName(title: "???", url: "https://Blog.Example.org/feed", taken: []) == "blog-example-org")
        #expect(ConfigEditor.sourceName(title: nil, url: "not a url", taken: []) == "feed")
        let long = ConfigEditor.sourceName(title: String(repeating: "a", count: 200), url: "", taken: [String(repeating: "a", count: 64)])
        #expect(long.count == 64 && long.hasSuffix("-2"))
        #expect(ConfigLoader.isValidName(long))
    }

    /// An import's names: what one call at a time would give, also for 20,000 feeds of one
    /// title around names the config already has (counting up from 2 each time took minutes).
    @Test func namesForAnImportCountOnFromTheLastOfTheirTitle() {
        var names = ConfigEditor.SourceNames(taken: ["news", "news-3", "other"])
        var taken: Set<String> = ["news", "news-3", "other"]
        for title in ["News", "news", "Other", "News", "News!", nil] {
            let one = ConfigEditor.sourceName(title: title, url: "https://o.example/", taken: taken)
            #expect(names.name(title: title, url: "https://o.example/") == one)
            taken.insert(one)
        }
        #expect(taken.isSuperset(of: ["news-2", "news-4", "news-5", "news-6", "other-2", "o-example"]))
        let many = (0..<20_000).map { _ in names.name(title: "Same", url: "https://s.example/") }
        #expect(many.first == "same" && many.last == "same-20000" && Set(many).count == 20_000)
    }

    @Test func writingKeepsPermissionsAndNeverGoesThroughALink() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("editor-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = folder + "/sources.yaml"
        try Data("sources:\n".utf8).write(to: URL(fileURLWithPath: config))
        chmod(config, 0o600)
        try ConfigEditor.write("sources: []\n", to: config)
        var info = stat()
        #expect(stat(config, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try String(contentsOfFile: config, encoding: .utf8) == "sources: []\n")

        // A link in the config's place: refused, and the file it points to untouched.
        let target = folder + "/elsewhere.yaml"
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: target))
        let link = folder + "/link.yaml"
        symlink(target, link)
        #expect { try ConfigEditor.write("sources: []\n", to: link) } throws: { "\($0)".contains("does not write through it") }
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "precious\n")
    }

    @Test func quotedTextReadsBackAsWrittenWhateverItHolds() throws {
        for text in ["plain", "$HOME ${HOME} $$", "$.items[?@.price == '$5'] $$$ ${", "end $", "quote \" backslash \\", "line\nbreak\ttab", "esc \u{1b}[31m bell \u{07} del \u{7F} c1 \u{85}", "emoji 🎉 ünï"] {
            let config = try load("sources:\n  - name: a\n    type: rss\n    url: https://x.example/\n    tags: [\(ConfigEditor.quoted(text))]\n")
            #expect(config.sources.first?.tags == [text.trimmingCharacters(in: .whitespaces)])
        }
    }
}
