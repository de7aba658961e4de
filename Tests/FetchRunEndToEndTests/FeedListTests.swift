import FixtureServer
import Foundation
import Testing

/// `init`, `add`, `import` and `export`: getting feeds into a config and out again.
@Suite struct FeedListTests {
    @Test func initWritesAStarterThatLoadsAndAMissingConfigPointsAtIt() async throws {
        let fetchrun = try FetchRunBinary()
        let missing = try await fetchrun.run(["validate"])
        #expect(missing.status == 65)
        #expect(missing.stderr.contains("fetchrun init"), "\(missing.stderr)")

        let created = try await fetchrun.run(["init"])
        #expect(created.status == 0, "\(created.stderr)")
        let validated = try await fetchrun.run(["validate"])
        #expect(validated.status == 0, "\(validated.stderr)")
        for type in ["rss", "page", "json", "traffic", "random-news", "exec"] { #expect(validated.stdout.contains(type)) }
        // --type page or json leads with that kind, and still loads.
        for type in ["page", "json"] {
            let led = try await fetchrun.run(["init", "--type", type, "--config", "\(type).yaml"])
            #expect(led.status == 0, "\(led.stderr)")
            let listed = try await fetchrun.run(["validate", "--config", "\(type).yaml"])
            #expect(listed.status == 0 && listed.stdoutLines[1].contains(" \(type) "), "\(listed.stdout)")
        }
        // The offline sources run as they are.
        let ran = try await fetchrun.run(["run", "--list-all", "--source", "traffic", "--source", "coin-news", "--source", "hello-plugin"])
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(ran.stdout.contains("Hello from a plugin"), "\(ran.stdout)")

        let again = try await fetchrun.run(["init"])
        #expect(again.status == 64)
        #expect(again.stderr.contains("already exists"))
    }

    @Test func addFindsTheFeedOfAWebPageAndAppendsIt() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let page = """
        <!DOCTYPE html><html><head><title>Blog</title>
        <base href="\(server.url("/files/"))">
        <link rel="stylesheet" href="style.css">
        <link rel="alternate" type="application/atom+xml" title="Atom \u{1b}[31m" href="/atom/3.xml">
        <link rel="alternate" type="application/rss+xml" href="javascript:alert(1)">
        <link rel="Alternate feed" type="application/rss+xml; charset=utf-8" href="../feed/4.xml">
        \((100..<120).map { #"<link rel="alternate" type="application/rss+xml" href="/feed/\#($0).xml">"# }.joined())
        </head><body><p>Hello</p></body></html>
        """
        server.serve("index.html", body: Array(page.utf8), contentType: "text/html; charset=utf-8")
        try fetchrun.write("# my feeds\nsources:\n  - name: traffic\n    type: traffic\n", to: "sources.yaml")

        let added = try await fetchrun.run(["add", server.url("/files/index.html")])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("added fixture-technology-news-3  \(server.url("/atom/3.xml"))  (Atom 1.0"), "\(added.stdout)")
        #expect(added.stderr.contains("also offers \(server.url("/feed/4.xml"))"), "\(added.stderr)")
        // Of the 21 other feeds, ten are listed and the rest counted.
        #expect(added.stderr.contains("also offers \(server.url("/feed/108.xml"))") && !added.stderr.contains("/feed/109.xml"), "\(added.stderr)")
        #expect(added.stderr.contains("the page offers 11 more feeds, not listed"), "\(added.stderr)")
        #expect(!added.stderr.contains("javascript") && !added.stderr.contains("\u{1b}"))
        let text = try fetchrun.read("sources.yaml")
        #expect(text.hasPrefix("# my feeds\nsources:\n  - name: traffic\n    type: traffic\n  - name: fixture-technology-news-3\n"))

        // A feed's own URL, a chosen name; the same feed again is not added twice.
        let direct = try await fetchrun.run(["add", server.url("/feed/5.xml"), "--name", "five"])
        #expect(direct.status == 0, "\(direct.stderr)")
        let twice = try await fetchrun.run(["add", server.url("/feed/5.xml")])
        #expect(twice.stderr.contains("already in sources.yaml as 'five'"), "\(twice.stderr)")
        let ran = try await fetchrun.run([])
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(ran.stdout.split(separator: "\n").contains { $0.hasPrefix("five ") && $0.contains("newData") }, "\(ran.stdout)")

        server.serve("plain.html", body: Array("<html><head></head><body>no feeds</body></html>".utf8), contentType: "text/html")
        let none = try await fetchrun.run(["add", server.url("/files/plain.html")])
        #expect(none.status == 2)
        #expect(none.stderr.contains("no <link rel=\"alternate\">"), "\(none.stderr)")
    }

    @Test func titlesYAMLWouldReadAsSomethingElseAreWrittenQuotedAndRoundTrip() async throws {
        let fetchrun = try FetchRunBinary()
        let odd = ["Null", "~", "yes", "1e3", "0x10", "@home", "*star", "off", ".inf"]
        let outlines = odd.enumerated().map { #"<outline text="\#($0.element)" xmlUrl="https://odd.example/\#($0.offset)?q=*x"/>"# }.joined()
        try fetchrun.write(#"<?xml version="1.0"?><opml version="2.0"><body>"# + outlines + "</body></opml>", to: "odd.opml")
        let imported = try await fetchrun.run(["import", "odd.opml"])
        #expect(imported.status == 0, "\(imported.stderr)")
        let validated = try await fetchrun.run(["validate"])
        let text = try fetchrun.read("sources.yaml")
        #expect(validated.status == 0, "\(validated.stderr)\n\(text)")
        for name in ["null", "yes", "1e3", "0x10", "off"] {
            #expect(text.contains("- name: \"\(name)\""), "\(name): \(text)")
        }
        // What it loads is what the titles said, names and URLs alike, and back out again.
        let exported = try await fetchrun.run(["export", "--opml"])
        #expect(exported.status == 0, "\(exported.stderr)")
        for index in odd.indices { #expect(exported.stdout.contains("https://odd.example/\(index)?q=*x"), "\(exported.stdout)") }
        for name in ["null", "yes", "1e3", "0x10", "home", "star", "off", "inf"] {
            #expect(exported.stdout.contains(#"text="\#(name)""#), "\(name): \(exported.stdout)")
        }
        try fetchrun.write(exported.stdout, to: "out.opml")
        let again = try await fetchrun.run(["import", "out.opml", "--config", "copy.yaml"])
        #expect(again.status == 0 && again.stderr.contains("\(odd.count) sources added"), "\(again.stderr)")
        #expect(try await fetchrun.run(["validate", "--config", "copy.yaml"]).status == 0)
    }

    @Test func importSaysWhatThePathIsWhenItIsNotAFileItCanRead() async throws {
        let fetchrun = try FetchRunBinary()
        try FileManager.default.createDirectory(atPath: fetchrun.path("adir"), withIntermediateDirectories: true)
        #expect(mkfifo(fetchrun.path("fifo"), 0o644) == 0)
        try fetchrun.write("<opml/>", to: "locked.opml")
        chmod(fetchrun.path("locked.opml"), 0o000)
        // Root reads anything: the unreadable file is tried as another user then.
        let user: String? = getuid() == 0 ? "postgres" : nil
        chmod(fetchrun.folder.path, 0o755)
        for (path, says) in [("adir", "it is a directory, not a regular file"), ("fifo", "it is a FIFO (named pipe), not a regular file"),
                             ("locked.opml", "this user may not read it (Permission denied)"), ("missing.opml", "no such file")] {
            let result = try await fetchrun.run(["import", path], timeout: .seconds(10), as: path == "locked.opml" ? user : nil)
            #expect(result.status == 65, "\(path): \(result.stderr)")
            #expect(result.stderr.contains("\(path): cannot read the OPML file: \(says)"), "\(path): \(result.stderr)")
        }
    }

    @Test func importAppendsOPMLFeedsAndExportWritesThemBack() async throws {
        let fetchrun = try FetchRunBinary()
        let opml = """
        <?xml version="1.0"?>
        <opml version="2.0"><head><title>Subs</title></head><body>
          <outline text="News"><outline text="Example \u{9B}31m World" type="rss" xmlUrl="https://news.example/rss?k=${HOME}"/></outline>
          <outline text="Already" xmlUrl="https://known.example/feed"/>
          <outline text="Local" xmlUrl="file:///etc/passwd"/>
          <outline text="Tools" xmlUrl="https://tools.example/atom"/>
        </body></opml>
        """
        try fetchrun.write(opml, to: "subs.opml")
        let original = "# keep this comment\nsources:\n  - name: known\n    type: rss\n    url: https://known.example/feed\n\n# and this one\ndefaults:\n  keep: 10\n"
        try fetchrun.write(original, to: "sources.yaml")

        let dry = try await fetchrun.run(["import", "subs.opml", "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("would add example-31m-world"), "\(dry.stdout)")
        // A C1 control (CSI, allowed in XML) from the file never reaches the terminal.
        #expect(!dry.stdout.contains("\u{9B}") && !dry.stderr.contains("\u{9B}"))
        #expect(try fetchrun.read("sources.yaml") == original)
        // Nested past eight folders: its tags are the outermost eight, and the import says so.
        let deep = #"<opml version="2.0"><body>"# + (1...9).map { #"<outline text="F\#($0)">"# }.joined()
            + #"<outline text="Deep" xmlUrl="https://deep.example/rss"/>"# + String(repeating: "</outline>", count: 9) + "</body></opml>"
        try fetchrun.write(deep, to: "deep.opml")
        let nested = try await fetchrun.run(["import", "deep.opml", "--dry-run"])
        #expect(nested.status == 0 && nested.stderr.contains("1 feed sits in more than 8 folders"), "\(nested.stderr)")
        #expect(nested.stdout.contains("[F1, F2, F3, F4, F5, F6, F7, F8]"), "\(nested.stdout)")

        let imported = try await fetchrun.run(["import", "subs.opml"])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("2 sources added"), "\(imported.stderr)")
        #expect(imported.stderr.contains("already in the config as 'known'"))
        #expect(imported.stderr.contains("file:///etc/passwd: not an http(s) URL"))
        let text = try fetchrun.read("sources.yaml")
        #expect(text.hasPrefix("# keep this comment\nsources:\n  - name: known\n"))
        #expect(text.hasSuffix("\n# and this one\ndefaults:\n  keep: 10\n"))
        #expect(text.contains("tags: [\"News\"]"))

        // ${HOME} in a subscription list is text, not a variable: it is never expanded.
        let exported = try await fetchrun.run(["export", "--opml"], environment: ["HOME": "/secret-home"])
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout.contains(#"xmlUrl="https://news.example/rss?k=${HOME}""#), "\(exported.stdout)")
        #expect(!exported.stdout.contains("secret-home"))
        #expect(exported.stdout.contains(#"<outline text="News" title="News">"#))

        // What was exported imports into a new config as the same feeds.
        try fetchrun.write(exported.stdout, to: "out.opml")
        let reimported = try await fetchrun.run(["import", "out.opml", "--config", "copy.yaml"])
        #expect(reimported.status == 0, "\(reimported.stderr)")
        #expect(reimported.stderr.contains("3 sources added"), "\(reimported.stderr)")
        let again = try await fetchrun.run(["import", "subs.opml"])
        #expect(again.stderr.contains("nothing to add"), "\(again.stderr)")
    }
}
