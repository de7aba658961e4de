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
    /// Mutations per input, from one to this many (a reader that refuses most broken inputs
    /// is reached past its first check by fewer).
    var mutationsAtMost = 4
    /// Reads `input`; `random` picks among a target's variations (a charset, a markup).
    var read: @Sendable (_ input: [UInt8], _ random: inout SplitMix64) -> Verdict

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
    ) { input, random in
        let data = Data(input)
        _ = try? OPML.read(data)
        let parsed = try? FeedParser(baseURL: "https://user:pw@example.org/feed").parse(data, charset: random.below(2) == 0 ? "iso-8859-1" : nil)
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

    /// JSON as APIs, plugins, snapshot files and state rows hold it: the mutated text, and then,
    /// when it parses, the same document with values swapped for hostile ones (a huge number,
    /// a wrong type, a long or control-laden string, deep nesting), which reach past the syntax
    /// to what each reader does with the members it finds.
    static let json = FuzzTarget(
        name: "json",
        tokens: ["{", "}", "[", "]", ",", ":", "\"", "\\u", "\\ud800", "\\udc00", "\\u0000", "null", "true", "1e", "1e309", "-", ".",
                 "\0", "\u{1B}[2J", "\"id\":", "\"items\":", "\"published\":", "\"failures\":", "\"failing_since\":",
                 "9223372036854775807", "-9223372036854775808", "18446744073709551616", "\n"],
        mutationsAtMost: 2
    ) { input, random in
        if case .wrong(let what) = readJSON(Data(input)) { return .wrong(what) }
        guard let value = try? JSONReader.value(of: Data(input)) else { return .rejected }
        var hostile = value
        for _ in 0...random.below(3) { hostile = FuzzDocuments.replacingOneValue(of: hostile, random: &random) }
        var writer = JSONWriter()
        writer.value(hostile)
        return readJSON(Data(writer.string.utf8))
    }

    /// Every JSON reader on `data`, and the promises two of them make.
    private static func readJSON(_ data: Data) -> Verdict {
        _ = try? Snapshot(json: data)
        _ = try? PluginProtocol.parse(data)
        _ = PluginDescription.parse(data)
        let state = SourceState(name: "fuzz", json: String(decoding: data, as: UTF8.self), nextDue: nil)
        guard SourceState(name: "fuzz", json: state.json, nextDue: nil).json == state.json else {
            return .wrong("a stored source state did not read back as it was written")
        }
        if let record = try? ChangeRecord(json: String(decoding: data, as: UTF8.self)), (try? ChangeRecord(json: record.json))?.json != record.json {
            return .wrong("a stored history record did not read back as it was written")
        }
        guard let value = try? JSONReader.value(of: data) else { return .rejected }
        // Written, read and written again: the same text (a number past a double's range reads
        // as infinite and is written as null, so the first write is the reference).
        var first = JSONWriter()
        first.value(value)
        var second = JSONWriter()
        if let reread = try? JSONReader.value(of: Data(first.string.utf8)) { second.value(reread) }
        return first.string == second.string ? .read : .wrong("what was read did not write and read back the same")
    }

    /// Web pages, with a selector, feed discovery and change tracking over their text.
    static let page = FuzzTarget(
        name: "page",
        tokens: ["<", ">", "</", "/>", "<!--", "-->", "<![CDATA[", "]]>", "&", "&amp;", "&#", "&#x", ";", "=", "\"", "'",
                 "<div class=\"item\">", "</div>", "<a href=\"", "<link rel=\"alternate\" type=\"application/rss+xml\" href=\"",
                 "<script>", "</script>", "<meta charset=\"", "\0", "\u{1B}]0;title\u{7}", "\r\n", "&#99999999;"]
    ) { input, random in
        let data = Data(input)
        _ = FeedDiscovery.offers(inHTML: data, pageURL: "http://127.0.0.1/page")
        guard let document = try? HTMLDocument.parse(data, url: "http://127.0.0.1/page", charset: random.below(2) == 0 ? "windows-1252" : nil).document else { return .rejected }
        _ = FuzzDocuments.selector.select(in: document)
        _ = FuzzDocuments.chainedSelector.select(in: document)
        _ = try? PageAdapter.items(in: document, selectors: FuzzDocuments.itemSelectors, excluded: [], pageBytes: input.count, from: "http://127.0.0.1/page", cancellation: CancellationFlag())
        let text = String(decoding: input, as: UTF8.self)
        // Unbounded, these patterns always end: a stop here would be a finding.
        let first = try! FuzzDocuments.tracker.observe(text, previousState: nil, previousItems: [], link: "http://127.0.0.1/page", at: Date())
        _ = try! FuzzDocuments.tracker.observe(String(text.reversed()), previousState: first.state, previousItems: first.item.map { [$0] } ?? [], link: nil, at: Date())
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

    /// One header value, date, duration, size, URL, file name or template, as servers and
    /// configs send them. A download's file name must stay a plain name inside its folder.
    static let header = FuzzTarget(
        name: "header",
        seedsAreLines: true,
        tokens: [" ", ",", ";", ":", "=", "+", "-", "T", "Z", ".", "GMT", "EST", "99", "999999999999999999999", "-9223372036854775808",
                 "Feb", "s", "ms", "h", "GiB", "e99", "@", "/", "//", "%", "%zz", "?", "#", "{", "}", "xn--", "ü", "\u{1B}[31m",
                 "max-age=", "charset=", "bytes ", "|", "attachment; filename=", "filename*=UTF-8''", ".part", "..", "\\", "\"", "%2F"]
    ) { input, _ in
        let text = String(decoding: input, as: UTF8.self)
        for name in [FileNames.sanitised(text), FileNames.fromURL(text), FileNames.fromContentDisposition(text)].compactMap(\.self) {
            let plain = !name.isEmpty && !name.hasPrefix(".") && !name.hasSuffix(".part") && !name.contains("/") && !name.contains("\\")
                && name.utf8.count <= 205 && !name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
            if !plain { return .wrong("'\(name)' is not a plain file name for a download") }
        }
        _ = DateParser.parse(text)
        _ = try? DurationText.parse(text)
        _ = try? ByteSizeText.parse(text, rate: text.hasSuffix("/s"))
        _ = CacheControl(headers: ["cache-control": text, "expires": text, "date": text, "age": text], now: Date(timeIntervalSince1970: 1_700_000_000))
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
    ) { input, random in
        let choice = random.below(2) == 0
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
    static let api = try! JSONReader.value(of: Data(#"{"items":[{"id":1,"title":"a","tags":["x","y"]},{"id":"2","title":null,"n":-1.5}],"next":{"a":[[[]]]}}"#.utf8))
    static let selector = try! CSSSelector("div.item > a[href], li:nth-child(2n+1)")
    /// Every combinator, where matching element by element once backtracked.
    static let chainedSelector = try! CSSSelector("body div .item ~ div + p a, ul li li a")
    /// A list page's fields, with entries that may nest.
    static let itemSelectors = PageAdapter.ItemSelectors(
        each: try! CSSSelector("div, li"), title: try! .init("a"), link: try! .init("a@href"), summary: try! .init("p"), published: try! .init("time@datetime")
    )
    static let tracker = ChangeTracker(ignore: [try! UserPattern(#"\d+"#)], sorted: true)

    /// What a hostile writer of JSON puts where a reader expects something sensible.
    static let hostileValues: [JSONValue] = [
        .number(1e300), .number(-1e300), .number(-1), .number(9.3e18), .number(-9.3e18), .number(0.5), .number(0),
        .string(String(repeating: "x", count: 100_000)), .string("\u{1B}[2J\u{7}\u{9B}\u{202E}"), .string(""), .string("../../etc/passwd"),
        .string("1e999"), .string("-1"), .null, .bool(true), .array([]), .object([:]),
        .array(Array(repeating: .string("id"), count: 20_000)),
        (0..<300).reduce(JSONValue.null) { inner, _ in .array([inner]) },
    ]

    /// `value` with one of its values, chosen by `random` (the whole document included),
    /// replaced by a hostile one.
    static func replacingOneValue(of value: JSONValue, random: inout SplitMix64) -> JSONValue {
        var target = random.below(count(value))
        let replacement = hostileValues[random.below(hostileValues.count)]
        return replacing(value, at: &target, with: replacement)
    }

    private static func count(_ value: JSONValue) -> Int {
        switch value {
        case .array(let elements): 1 + elements.reduce(0) { $0 + count($1) }
        case .object(let members): 1 + members.values.reduce(0) { $0 + count($1) }
        default: 1
        }
    }

    /// Counts `target` down through the values in order; the one it reaches 0 at is replaced.
    private static func replacing(_ value: JSONValue, at target: inout Int, with replacement: JSONValue) -> JSONValue {
        if target == 0 {
            target = -1
            return replacement
        }
        target -= 1
        switch value {
        case .array(let elements):
            return .array(elements.map { target < 0 ? $0 : replacing($0, at: &target, with: replacement) })
        case .object(let members):
            var replaced = members
            for key in members.keys.sorted() where target >= 0 {
                replaced[key] = replacing(members[key]!, at: &target, with: replacement)
            }
            return .object(replaced)
        default:
            return value
        }
    }
}
