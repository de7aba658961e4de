import FetchRunKit
import Foundation

/// One reader of outside input, as the fuzzer drives it.
///
/// `read` must not trap on any input: a trap ends the process, which leaves the input in
/// `current-<name>`. It returns `.wrong` when the reader read something but broke a promise
/// about it (what was read does not write and read back the same), which the fuzzer saves and
/// counts as a failure.
struct FuzzTarget: Sendable {
    enum Verdict {
        case read
        case rejected
        case wrong(String)
    }

    var name: String
    /// Each line of a seed file is one seed (for readers of one header, date or selector).
    var seedsAreLines = false
    var tokens: [String]
    var read: @Sendable (_ input: [UInt8], _ choice: Bool) -> Verdict

    static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }

    static let all: [FuzzTarget] = [feed, config, json, page, selector, header, message]
}

extension FuzzTarget {
    /// Feeds (RSS, Atom, RDF, JSON Feed) and subscription lists, as servers and `import` send them.
    static let feed = FuzzTarget(
        name: "feed",
        tokens: ["<", ">", "/>", "&", "&amp;", "&#x1F;", "&nbsp;", "<![CDATA[", "]]>", "<!--", "-->", "<!DOCTYPE x [<!ENTITY e \"x\">]>",
                 "<item>", "</item>", "<entry>", "<title>", "</title>", "xmlns=\"http://www.w3.org/2005/Atom\"", "xml:base=\"../\"",
                 " a=\"1\"", "\u{1B}[31m", "\u{9B}", "\r\n", "\0", "é", "\u{FEFF}", "<?xml version=\"1.0\" encoding=\"UTF-16\"?>",
                 "9223372036854775807", "-1", "Mon, 31 Feb 99999 25:61:61 +9999", "9999-99-99T99:99:99Z",
                 "<pubDate>", "</pubDate>", " -99999999999999999999", "<outline xmlUrl=\"", "\"/>"]
    ) { input, choice in
        let data = Data(input)
        _ = try? OPML.read(data)
        let parsed = try? FeedParser(baseURL: "https://user:pw@example.org/feed").parse(data, charset: choice ? "iso-8859-1" : nil)
        return parsed == nil ? .rejected : .read
    }

    /// Config files, with `${VAR}` expansion.
    static let config = FuzzTarget(
        name: "config",
        tokens: [":", ": ", "- ", "\n", "  ", "{", "}", "[", "]", "&a", "*a", "!!str", "${X}", "${X:-d}", "$$", "#", "'", "\"",
                 "name: ", "type: ", "deadline: ", "9223372036854775807", "-1", "1e308", "1h1h1h", "0.0000001ms", "\t", "\u{1B}",
                 "? ", "--- \n", "...", "%YAML 1.1\n", "url: file:", "headers: {A: \"\\r\\n\"}", "latency: 1ms..9999h",
                 "listen: ", "max_in_flight: ", "per_host: ", "retry: ", "select: ", "items: "]
    ) { input, _ in
        let text = String(decoding: input, as: UTF8.self)
        _ = try? EnvironmentExpansion(environment: ["X": "value"]).expand(text)
        do {
            _ = try ConfigLoader(environment: ["X": "value"]).load(text: text, file: "fuzz.yaml", directory: "/nonexistent")
            return .read
        } catch {
            _ = "\(error)"
            return .rejected
        }
    }

    /// JSON as APIs, plugins, snapshot files and state rows hold it.
    static let json = FuzzTarget(
        name: "json",
        tokens: ["{", "}", "[", "]", ",", ":", "\"", "\\u", "\\ud800", "\\udc00", "\\u0000", "null", "true", "1e", "1e309", "-", ".",
                 "\0", "\u{1B}[2J", "\"id\":", "\"items\":", "\"published\":", "\"failures\":", "\"failing_since\":",
                 "9223372036854775807", "-9223372036854775808", "18446744073709551616", "\n"]
    ) { input, _ in
        let data = Data(input)
        _ = try? Snapshot(json: data)
        _ = try? PluginProtocol.parse(data)
        _ = PluginDescription.parse(data)
        let text = String(decoding: input, as: UTF8.self)
        let state = SourceState(name: "fuzz", json: text, nextDue: nil)
        guard SourceState(name: "fuzz", json: state.json, nextDue: nil).json == state.json else {
            return .wrong("a stored source state did not read back as it was written")
        }
        guard let value = try? JSONReader.read(data, { reader throws(JSONReader.Failure) in try reader.readValue() }) else { return .rejected }
        // Written, read and written again: the same bytes (a number past a double's range reads
        // as infinite and is written as null, so the first write is the reference).
        var first = JSONWriter()
        first.value(value)
        var second = JSONWriter()
        if let reread = try? JSONReader.read(Data(first.string.utf8), { reader throws(JSONReader.Failure) in try reader.readValue() }) { second.value(reread) }
        return first.string == second.string ? .read : .wrong("what was read did not write and read back the same")
    }

    /// Web pages, with a selector, feed discovery and change tracking over their text.
    static let page = FuzzTarget(
        name: "page",
        tokens: ["<", ">", "</", "/>", "<!--", "-->", "<![CDATA[", "]]>", "&", "&amp;", "&#", "&#x", ";", "=", "\"", "'",
                 "<div class=\"item\">", "</div>", "<a href=\"", "<link rel=\"alternate\" type=\"application/rss+xml\" href=\"",
                 "<script>", "</script>", "<meta charset=\"", "\0", "\u{1B}]0;title\u{7}", "\r\n", "&#99999999;"]
    ) { input, choice in
        let data = Data(input)
        _ = FeedDiscovery.offers(inHTML: data, pageURL: "http://127.0.0.1/page")
        guard let document = try? HTMLDocument.parse(data, url: "http://127.0.0.1/page", charset: choice ? "windows-1252" : nil).document else { return .rejected }
        _ = FuzzDocuments.selector.select(in: document)
        let text = String(decoding: input, as: UTF8.self)
        let first = FuzzDocuments.tracker.observe(text, previousState: nil, previousItems: [], link: "http://127.0.0.1/page")
        _ = FuzzDocuments.tracker.observe(String(text.reversed()), previousState: first.state, previousItems: first.item.map { [$0] } ?? [], link: nil)
        return .read
    }

    /// Selectors and paths as a config writes them: CSS, JSONPath and XPath.
    static let selector = FuzzTarget(
        name: "selector",
        seedsAreLines: true,
        tokens: [">", "+", "~", " ", ".", "#", "[", "]", "(", ")", ":", "::", "=", "^=", "*=", "'", "\"", "\\", ",", "nth-child(",
                 "not(", "n", "-", "$", "@", "..", "*", "?(", "==", "&&", "//", "@href", "text()", "position()", "last()",
                 "9223372036854775807", "-9223372036854775808"]
    ) { input, _ in
        let text = String(decoding: input, as: UTF8.self)
        var readAny = false
        if let css = try? CSSSelector(text) {
            _ = css.select(in: FuzzDocuments.page)
            readAny = true
        }
        if let path = try? JSONPath(text) {
            _ = path.select(in: FuzzDocuments.api, maximumNodes: 1_000)
            readAny = true
        }
        if let query = try? XPathQuery(text) {
            _ = try? HTMLDocument.parse(FuzzDocuments.pageBytes, url: "http://127.0.0.1/", xpath: query)
            readAny = true
        }
        return readAny ? .read : .rejected
    }

    /// One header value, date, duration, size, URL or template, as servers and configs send them.
    static let header = FuzzTarget(
        name: "header",
        seedsAreLines: true,
        tokens: [" ", ",", ";", ":", "=", "+", "-", "T", "Z", ".", "GMT", "EST", "99", "999999999999999999999", "-9223372036854775808",
                 "Feb", "s", "ms", "h", "GiB", "e99", "@", "/", "//", "%", "%zz", "?", "#", "{", "}", "xn--", "ü", "\u{1B}[31m",
                 "max-age=", "charset=", "bytes ", "|"]
    ) { input, _ in
        let text = String(decoding: input, as: UTF8.self)
        _ = DateParser.parse(text)
        _ = try? DurationText.parse(text)
        _ = try? ByteSizeText.parse(text, rate: text.hasSuffix("/s"))
        _ = CacheControl(headers: ["cache-control": text, "expires": text, "date": text, "age": text])
        let response = HTTPResponse(status: 503, headers: ["content-type": text, "retry-after": text], body: Data(), effectiveURL: "http://127.0.0.1/")
        _ = response.charset
        _ = response.retryAfter(now: Date(timeIntervalSince1970: 1_700_000_000))
        _ = ContentRange(text)
        _ = InternationalHost.asciiURL(text)
        _ = HTTPText.hostKey(of: text)
        _ = HTTPText.origin(of: text)
        _ = HTTPText.removingCredentials(from: text)
        if let template = try? OutputTemplate(text) { _ = template.render(["title": text]) }
        // `identity|last fetch|earlier`, the seen ids as a state row stores them.
        let parts = text.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        if parts.count == 3, let seen = SeenItems(identity: parts[0], lastFetch: parts[1], earlier: parts[2]) {
            _ = seen.recording(fetched: ["a"], at: Date(timeIntervalSince1970: 1_700_000_000)).earlierText
        }
        return .read
    }
}

extension FuzzTarget {
    /// An item's text as chat and phone notifications carry it: escaped for each markup and
    /// kept within the target's limit, which every message must be.
    static let message = FuzzTarget(
        name: "message",
        tokens: ["<", ">", "&", "&amp;", "*", "_", "`", "~", "|", "\\", "[", "](", ")", "\n", "\r\n", "\t", "\u{1B}[31m", "\u{202E}",
                 "é", "👩‍👩‍👧", "\u{301}", "<b>", "</b>", "<a href=\"", "http://127.0.0.1/", "@everyone", "<!channel>", "{title}", "{link}"]
    ) { input, choice in
        let text = String(decoding: input, as: UTF8.self)
        let item = Item(id: text, title: text, link: choice ? text : "http://127.0.0.1/item", summary: text, author: text)
        let deliveries = [Delivery.item(item, source: "fuzz", sourceTitle: text), Delivery.item(Item(id: "2", title: "two"), source: "fuzz", sourceTitle: nil)]
        let template = try? OutputTemplate(String(text.prefix(200)))
        let targets: [(NotificationText.Markup, NotificationText.Limit)] = [(.plain, .bytes(4_096)), (.slack, .characters(3_000)), (.discord, .characters(2_000)), (.html, .characters(4_096))]
        for (markup, limit) in targets {
            for overflow in NotificationText.Overflow.allCases {
                let writer = NotificationText(markup: markup, limit: limit, overflow: overflow)
                let messages = writer.messages(for: deliveries[0], template: choice ? template : nil) + writer.digest(of: deliveries, template: nil)
                if let long = messages.first(where: { limit.length($0) > limit.maximum }) {
                    return .wrong("a \(markup) message of \(limit.length(long)) against a limit of \(limit.maximum) (\(overflow))")
                }
            }
        }
        return .read
    }
}

/// The documents selectors run against, and the page target's selector and change tracker.
enum FuzzDocuments {
    static let pageBytes = Data("""
        <!doctype html><html><head><title>T</title></head><body><div id="main"><div class="item"><a href="/a">A &amp; B</a></div>
        <ul><li>1</li><li class="x">2</li><li>3</li></ul><p title="t">text</p></div></body></html>
        """.utf8)
    // The fuzzer cannot start without them; they are constants that parse.
    static let page = try! HTMLDocument.parse(pageBytes, url: "http://127.0.0.1/").document
    static let api = try! JSONReader.read(Data(#"{"items":[{"id":1,"title":"a","tags":["x","y"]},{"id":"2","title":null,"n":-1.5}],"next":{"a":[[[]]]}}"#.utf8)) { reader throws(JSONReader.Failure) in try reader.readValue() }
    static let selector = try! CSSSelector("div.item > a[href], li:nth-child(2n+1)")
    static let tracker = ChangeTracker(ignore: [#"\d+"#], sorted: true)
}
