import Foundation

/// What `fetchrun probe` and `fetchrun add` make of a body that is not a feed: a source
/// definition a user can paste, and a preview of what it would watch.
///
/// For a web page, the feeds it links to come first (a feed is the better source); otherwise a
/// `page` source over the page's main content, found by the landmarks sites use (`<main>`,
/// `role="main"`, a single `<article>`, `#content`…). For a JSON document, the largest array of
/// objects near its root becomes `items:` with the members that look like a title, a link, an
/// id and a date; a document without one is watched whole with `select: $`.
///
/// Suggestions are guesses for a person to check with `fetchrun test-source`, never applied
/// silently; they read only the values given and cost one pass over them.
package enum SourceSuggestion {
    /// A web page, as a source could watch it.
    package struct Page: Sendable {
        /// The page's `<title>`, whitespace normalised.
        package var title: String?
        /// Feeds its `<link rel="alternate">` tags name, in page order.
        package var feeds: [FeedDiscovery.Offer]
        /// A CSS selector for the main content; `nil` when none stood out (the whole body).
        package var css: String?
        /// The text that selector yields, as `page` sources compare it.
        package var text: String
    }

    /// A JSON document, as a source could watch it.
    package struct JSONDocument: Sendable {
        /// `items:` keys and paths (`each` first) when an array of objects was found; else empty.
        package var items: [(key: String, value: String)]
        /// How many entries `each` selects.
        package var entries: Int
        /// `$`: the whole document, when there is no array of entries to take as items.
        package var select: String? { items.isEmpty ? "$" : nil }
        /// The first entries' titles (or ids), or the first lines of the document's JSON.
        package var preview: [String]
        /// The member `preview` shows of each entry; `nil` when it shows the document.
        package var previewKey: String?
    }

    /// What a fetched body is.
    package enum Reading: Sendable {
        case feed(Feed)
        case page(Page)
        case json(JSONDocument)
    }

    /// Reads a fetched body as a feed, else as JSON or a web page (by type, else by its start),
    /// off the cooperative pool.
    /// - Parameter base: the URL relative links resolve against; `nil` for a local file.
    /// - Throws: ``FetchFailure`` `.parse`: the feed parser's reason when the body is none of
    ///   the three, or why the JSON or the page could not be read.
    package static func read(_ response: HTTPResponse, base: String?, from displayURL: String) async throws -> Reading {
        let feedError: any Error
        do {
            return .feed(try await FeedParser(baseURL: base).parseOffPool(response.body, charset: response.charset))
        } catch {
            feedError = error
        }
        let contentType = response.headers["content-type"]
        if looksLikeJSON(response.body, contentType: contentType) {
            let body = response.body
            return .json(try await runOffPool(name: "fetchrun-parse") { _ in json(try JSONAdapter.read(body, from: displayURL)) })
        }
        if FeedDiscovery.looksLikeHTML(response.body, contentType: contentType) {
            let body = response.body, charset = response.charset
            var page = try await runOffPool(name: "fetchrun-parse") { cancellation in
                do {
                    return Self.page(try HTMLDocument.parse(body, url: base, charset: charset, cancellation: cancellation).document)
                } catch let error as HTMLDocument.ParseError {
                    throw FetchFailure(.parse, "\(displayURL): \(error)")
                }
            }
            page.feeds = FeedDiscovery.offers(inHTML: body, pageURL: base ?? displayURL)
            return .page(page)
        }
        throw FetchFailure(.parse, "\(displayURL): \((feedError as? FeedParseError).map { "\($0)" } ?? "\(feedError)") (not a feed, a JSON document or a web page)")
    }

    /// Landmarks for a page's main content, most specific first.
    static let mainContentSelectors = ["main", "[role=main]", "article", "#content", "#main", "#main-content", ".content", ".main"]

    /// Reads `page` and suggests how to watch it.
    /// - Parameter previewBytes: how much of the main content's text to render.
    package static func page(_ page: HTMLDocument, previewBytes: Int = 16 * 1024) -> Page {
        let title = page.nodes.firstIndex { $0.name == "title" }.map { page.line(of: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        var chosen: (css: String?, element: Int)?
        for text in mainContentSelectors {
            guard let selector = try? CSSSelector(text) else { continue }
            let matches = selector.select(in: page)
            // One match with something to read: a landmark used once is the page's own content.
            if matches.count == 1, !page.text(of: matches[0], maximumBytes: 256).isEmpty {
                chosen = (text, matches[0])
                break
            }
        }
        let element = chosen?.element ?? page.nodes.firstIndex { $0.name == "body" } ?? 0
        return Page(title: title, feeds: [], css: chosen?.css, text: page.text(of: element, maximumBytes: previewBytes))
    }

    /// Reads `document` and suggests how to watch it.
    package static func json(_ document: JSONValue) -> JSONDocument {
        guard let (path, entries) = entriesArray(in: document) else {
            return whole(document)
        }
        var keys: Set<String> = []
        for case .object(let members) in entries.prefix(20) { keys.formUnion(members.keys) }
        func first(_ candidates: [String]) -> String? { candidates.first(where: keys.contains) }
        var items = [(key: "each", value: path)]
        let title = first(["title", "name", "headline", "subject", "label", "summary"])
        let link = first(["url", "html_url", "link", "href", "permalink", "web_url", "homepage"])
        let id = first(["id", "guid", "uuid", "key", "slug", "version", "tag_name"])
        let published = first(["published_at", "published", "pubDate", "created_at", "date", "created", "updated_at", "timestamp", "time"])
        // The id only when it is not already the default (the link, else the title).
        if let id { items.append((key: "id", value: id)) }
        if let title { items.append((key: "title", value: title)) }
        if let link { items.append((key: "link", value: link)) }
        if let published { items.append((key: "published", value: published)) }
        if id == nil, title == nil, link == nil {
            // Nothing to tell entries apart by name: their first text member will.
            let fallback = keys.sorted().first { key in entries.prefix(20).contains { if case .string = $0[key] { true } else { false } } }
            guard let fallback else { return whole(document) }
            items.append((key: "id", value: fallback))
        }
        let shown = title ?? id ?? link ?? items.last!.value
        let preview = entries.prefix(20).map { entry in entry[shown]?.scalarText ?? "" }
        return JSONDocument(items: items, entries: entries.count, preview: preview, previewKey: shown)
    }

    /// The document watched whole: `select: $`, its first lines as the preview.
    private static func whole(_ document: JSONValue) -> JSONDocument {
        let lines = document.prettyPrinted(maximumLines: 20).split(separator: "\n", maxSplits: 20, omittingEmptySubsequences: false).prefix(20).map(String.init)
        return JSONDocument(items: [], entries: 0, preview: lines, previewKey: nil)
    }

    /// The largest array of objects at the root or one or two members down, with its path.
    static func entriesArray(in document: JSONValue) -> (path: String, entries: [JSONValue])? {
        func isEntries(_ value: JSONValue) -> [JSONValue]? {
            guard case .array(let values) = value, !values.isEmpty, values.allSatisfy({ if case .object = $0 { true } else { false } }) else { return nil }
            return values
        }
        if let entries = isEntries(document) { return ("$[*]", entries) }
        var best: (path: String, entries: [JSONValue])?
        func consider(_ value: JSONValue, path: String, depth: Int) {
            guard case .object(let members) = value else { return }
            for key in members.keys.sorted() {
                let member = path + memberPath(key)
                if let entries = isEntries(members[key]!) {
                    if entries.count > best?.entries.count ?? 0 { best = (member + "[*]", entries) }
                } else if depth < 2 {
                    consider(members[key]!, path: member, depth: depth + 1)
                }
            }
        }
        consider(document, path: "$", depth: 1)
        return best
    }

    /// `.name` when the name is a plain identifier, else `['name']` with quotes escaped.
    static func memberPath(_ name: String) -> String {
        let plain = name.unicodeScalars.first.map { $0 == "_" || ($0.isASCII && CharacterSet.letters.contains($0)) } == true
            && name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && CharacterSet.alphanumerics.contains($0)) }
        if plain { return "." + name }
        return "['" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "']"
    }

    /// Whether a response is JSON rather than a feed or a page: by its type, else by its start.
    package static func looksLikeJSON(_ body: Data, contentType: String?) -> Bool {
        if let contentType = contentType?.lowercased(), contentType.contains("json") { return true }
        let start = body.drop { [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }.first
        return start == UInt8(ascii: "{") || start == UInt8(ascii: "[")
    }
}
