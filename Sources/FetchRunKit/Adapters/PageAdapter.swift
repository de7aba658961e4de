import Foundation

/// `type: page` — a part of a web page, or a list on it, over HTTP(S) or from a local file.
///
/// - Watched: `css:` (a ``CSSSelector``) or `xpath:` (XPath 1.0, libxml2's) picks what to
///   watch — the whole `<body>` when neither is given — `remove:` (CSS selectors) takes parts
///   of it out first (not `exclude:`, every source's item filter), and `as: text` (the
///   default: readable text, block elements as lines, links as `text <url>`) or `as: html`
///   says how it is compared. The selection is the
///   source's one item, new with a unified diff each time it really changes
///   (``ChangeTracker``: `ignore:`, `sort:`, `report: added`).
/// - Listed: `items:` with `each:` (a CSS selector for the entries) and `title:`, `link:`,
///   `id:`, `summary:`, `published:` (CSS selectors within an entry, `sel@attr` for an
///   attribute, `@attr` for the entry's own) turns each entry into an item.
///
/// Fetching is the `rss` adapter's — or, with `render: browser`, the run's browser's
/// (``RenderSettings``), whose document, as its scripts built it, is read the same way. The
/// page is read with libxml2's HTML parser on a thread of its own (``HTMLDocument``);
/// selectors are checked when the config loads. A page that cannot be read fails with
/// `parse`; a selector that matches nothing with `selector`.
package struct PageAdapter: ConfigurableAdapter, SelectionWatching {
    package static let type = "page"
    package static let summary = "a part of a web page watched for changes (css: or xpath:), or a list on it as items:"
    package static let options = SourceFetcher.adapterOptions(url: "http:// or https:// URL; or file:path (relative to the config file) or file:///absolute/path")
        + [
            AdapterOption("css", kind: "CSS selector", default: "none", "what to watch, e.g. #price or main .notice (this, xpath: or items:; neither: the whole body)"),
            AdapterOption("xpath", kind: "XPath 1.0", default: "none", "what to watch, e.g. //table[@id='status']"),
            AdapterOption("extract", kind: "product", default: "none", "watch the page's schema.org Product data (JSON-LD or microdata): price, availability, name, SKU"),
            AdapterOption("remove", kind: "list", default: "none", "CSS selectors whose matches are taken out before comparing: ads, time stamps, counters"),
            AdapterOption("as", kind: "text or html", default: "text", "compare the selection as readable text, or as its HTML"),
            AdapterOption("items", kind: "map", default: "none", "each: CSS selector of the entries, and title:, link:, id:, summary:, published: within an entry (a@href takes an attribute)"),
        ] + RenderSettings.options + JSONAdapter.changeOptions

    package enum Format: String, Sendable { case text, html }

    /// What the source watches.
    package enum Selection: Sendable {
        case css(CSSSelector?)
        case xpath(XPathQuery)
        /// `extract: product`: the schema.org Product data the page publishes (``ProductData``).
        case product
    }

    /// Where an item's field is found in an entry: an element (the entry itself without a
    /// selector) and, with `@name`, one of its attributes.
    package struct FieldSelector: Sendable, CustomStringConvertible {
        package var selector: CSSSelector?
        package var attribute: String?
        package let description: String

        package init(_ text: String) throws {
            description = text
            var selectorText = text
            if let at = text.lastIndex(of: "@") {
                let name = text[text.index(after: at)...]
                if !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ":" }) {
                    attribute = name.lowercased()
                    selectorText = String(text[..<at])
                }
            }
            let trimmed = selectorText.trimmingCharacters(in: .whitespaces)
            if !trimmed.isEmpty {
                do {
                    selector = try CSSSelector(trimmed)
                } catch {
                    throw ValueError("not a CSS selector: \(error)")
                }
            }
            if selector == nil, attribute == nil { throw ValueError("an empty selector") }
        }

        /// The field's value in `entry`: `nil` when nothing matches or the text is empty. At most
        /// `maximumBytes` of an element's text are read (entries may nest, and each would
        /// otherwise read all the text of those inside it).
        /// - Parameter matches: what ``selector`` matches in `document`, found once per page;
        ///   `nil` without a selector.
        func value(in document: HTMLDocument, entry: Int, matches: CSSSelector.Matches?, excluded: Set<Int>, maximumBytes: Int) -> String? {
            guard let element = matches.map({ $0.first(below: entry, in: document) }) ?? entry else { return nil }
            let value = attribute.map { document.nodes[element].attribute($0)?.trimmingCharacters(in: .whitespacesAndNewlines) }
                ?? document.line(of: element, excluding: excluded, maximumBytes: maximumBytes)
            return value.flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    package struct ItemSelectors: Sendable {
        package var each: CSSSelector?
        package var title, link, id, summary, published: FieldSelector?

        package init(each: CSSSelector? = nil, title: FieldSelector? = nil, link: FieldSelector? = nil, id: FieldSelector? = nil, summary: FieldSelector? = nil, published: FieldSelector? = nil) {
            self.each = each
            self.title = title
            self.link = link
            self.id = id
            self.summary = summary
            self.published = published
        }
    }

    package enum Mode: Sendable {
        case watch(Selection, Format, ChangeTracker)
        case items(ItemSelectors)
    }

    package var fetcher: SourceFetcher
    package var mode: Mode
    /// `remove:`: what is taken out of the page before anything is selected or compared.
    package var remove: [CSSSelector]
    /// `render: browser`: the page is loaded in a browser, its scripts run, before it is read.
    package var render: RenderSettings?

    /// What a page source asks a server for (also `fetchrun add --type page`).
    package static let accept = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5"

    package init(options: AdapterOptions) throws {
        fetcher = SourceFetcher(options: options, what: "the page's", accept: Self.accept)
        remove = (options.stringList("remove") ?? []).compactMap { text in
            do {
                return try CSSSelector(text)
            } catch {
                options.report("'remove': '\(TerminalText.safe(text))' is not a CSS selector: \(error)", key: "remove")
                return nil
            }
        }
        render = RenderSettings(options: options, fetcher: fetcher)
        let given = ["css", "xpath", "items", "extract"].filter(options.contains)
        if given.count > 1 {
            options.report("\(given.map { "'\($0)'" }.joined(separator: " and ")) both given: a page source watches one selection (css:, xpath: or extract:) or lists items (items:)")
        }
        if options.contains("items") {
            mode = .items(Self.itemSelectors(options))
            if ["as", "ignore", "sort", "report"].contains(where: options.contains) {
                options.report("'as', 'ignore', 'sort' and 'report' apply to a watched selection (css:, xpath:), not to items:")
            }
            return
        }
        let selection: Selection
        if let text = options.string("extract") {
            if text != "product" { options.report("'extract' must be product (the page's schema.org Product data), not '\(TerminalText.safe(text, maximumLength: 40))'", key: "extract") }
            selection = .product
        } else if let text = options.string("xpath") {
            do {
                selection = .xpath(try XPathQuery(text))
            } catch {
                options.report("'xpath': not an XPath 1.0 expression: \(error)", key: "xpath")
                selection = .css(nil)
            }
        } else if let text = options.string("css") {
            do {
                selection = .css(try CSSSelector(text))
            } catch {
                options.report("'css': not a CSS selector: \(error)", key: "css")
                selection = .css(nil)
            }
        } else {
            selection = .css(nil)
        }
        let format = options.value("as", what: "as", parse: { text in
            guard let format = Format(rawValue: text) else { throw ValueError("use text or html") }
            return format
        }) ?? .text
        mode = .watch(selection, format, JSONAdapter.changeTracker(options))
        if case .css(let selector?) = selection, render?.screenshot != nil { render?.screenshot = .element(selector.description) }
    }

    private static let itemKeys = ["each", "id", "title", "link", "summary", "published"]

    private static func itemSelectors(_ options: AdapterOptions) -> ItemSelectors {
        var selectors = ItemSelectors()
        guard let written = options.stringMap("items") else { return selectors }
        for key in written.keys.sorted() where !itemKeys.contains(key) {
            options.report("'items': unknown key '\(TerminalText.safe(key))'; known: \(itemKeys.joined(separator: ", "))", key: "items", member: key)
        }
        if let each = written["each"] {
            do {
                selectors.each = try CSSSelector(each)
            } catch {
                options.report("'items.each': not a CSS selector: \(error)", key: "items", member: "each")
            }
        } else {
            options.report("'items' needs 'each' (a CSS selector for the entries, such as ul.news > li)", key: "items")
        }
        func field(_ key: String) -> FieldSelector? {
            guard let text = written[key] else { return nil }
            do {
                return try FieldSelector(text)
            } catch {
                options.report("'items.\(key)': \(error)", key: "items", member: key)
                return nil
            }
        }
        (selectors.title, selectors.link, selectors.id, selectors.summary, selectors.published) = (field("title"), field("link"), field("id"), field("summary"), field("published"))
        return selectors
    }

    /// A watched selection reads its previous text (adapter state) and item.
    package var readsPreviousSnapshot: Bool { watchesOneSelection }

    package var watchesOneSelection: Bool {
        if case .watch = mode { true } else { false }
    }

    package func fetch(_ context: FetchContext) async throws -> FetchOutput {
        if let render { return try await render.fetch(context, fetcher: fetcher, parse: parser(for: context)) }
        return try await fetcher.fetch(context, parse: parser(for: context))
    }

    /// What reads a page's body, fetched or rendered, into the fetch's items.
    private func parser(for context: FetchContext) -> @Sendable (HTTPResponse, CancellationFlag) throws -> SourceFetcher.Parsed {
        let mode = self.mode, remove = self.remove, displayURL = fetcher.displayURL, isFile = fetcher.isFileURL
        let previousState = context.previous?.adapterState, previousItems = context.previousItems, fetchedAt = context.date
        return { response, cancellation in
            let pageURL = isFile ? nil : response.effectiveURL
            var xpath: XPathQuery?
            if case .watch(.xpath(let query), _, _) = mode { xpath = query }
            let page: HTMLDocument, selectedByXPath: [HTMLDocument.Selected]?
            do {
                (page, selectedByXPath) = try HTMLDocument.parse(response.body, url: pageURL, charset: response.charset, xpath: xpath, cancellation: cancellation)
            } catch let error as HTMLDocument.ParseError {
                throw FetchFailure(.parse, "\(displayURL): \(error)")
            } catch let error as XPathQuery.EvaluationError {
                throw FetchFailure(.selector, "\(displayURL): \(error)")
            }
            var notes: [String] = []
            if page.cutDepth > 0 {
                notes.append("\(page.cutDepth) element\(page.cutDepth == 1 ? "" : "s") nested deeper than \(HTMLDocument.maximumDepth - 1) flattened into the element at that depth (their text kept)")
            }
            let removed = Set(remove.flatMap { $0.select(in: page) })
            if cancellation.isCancelled { throw CancellationError() }
            switch mode {
            case .watch(let selection, let format, let tracker):
                let text = try Self.watchedText(of: page, selection: selection, selectedByXPath: selectedByXPath, format: format, excluded: removed, from: displayURL)
                let seen = try tracker.observe(text, previousState: previousState, previousItems: previousItems, link: pageURL ?? displayURL, at: fetchedAt, budget: UserPattern.MatchBudget(cancellation: cancellation))
                if let note = seen.note { notes.append(note) }
                return (seen.item.map { [$0] } ?? [], seen.state, notes)
            case .items(let selectors):
                let listed = try Self.items(in: page, selectors: selectors, excluded: removed, pageBytes: response.body.count, from: displayURL, cancellation: cancellation)
                if let note = listed.note { notes.append(note) }
                return (listed.items, nil, notes)
            }
        }
    }

    /// The selection's text (or HTML); several matches one after another.
    static func watchedText(of page: HTMLDocument, selection: Selection, selectedByXPath: [HTMLDocument.Selected]?, format: Format, excluded: Set<Int>, from displayURL: String) throws -> String {
        let selected: [HTMLDocument.Selected]
        let described: String
        switch selection {
        case .xpath(let query):
            selected = selectedByXPath ?? []
            described = "'\(query)'"
        case .css(let selector?):
            selected = selector.select(in: page).map(HTMLDocument.Selected.element)
            described = "'\(selector)'"
        case .css(nil):
            selected = [.element(page.nodes.firstIndex { $0.name == "body" } ?? 0)]
            described = "the page"
        case .product:
            let products = ProductData.extract(from: page)
            guard !products.isEmpty else {
                throw FetchFailure(.selector, "\(displayURL): no schema.org Product data in the page (neither JSON-LD nor microdata)")
            }
            return products.map(\.text).joined(separator: "\n\n")
        }
        guard !selected.isEmpty else { throw FetchFailure(.selector, "\(displayURL): \(described) matches nothing in the page") }
        let budget = ChangeTracker.maximumRenderedBytes
        var parts: [String] = []
        var written = 0
        for part in selected where written < budget {
            let text = switch part {
            case .element(let index): format == .html ? page.html(of: index, excluding: excluded, maximumBytes: budget - written) : page.text(of: index, excluding: excluded, maximumBytes: budget - written)
            case .text(let text): text
            }
            written += text.utf8.count + 1
            parts.append(text)
        }
        return parts.joined(separator: "\n")
    }

    /// Each entry `each` matches, as an item, in page order, within an ``ItemTextBudget`` for
    /// the page; the note says how many entries were left out past it.
    package static func items(in page: HTMLDocument, selectors: ItemSelectors, excluded: Set<Int>, pageBytes: Int, from displayURL: String, cancellation: CancellationFlag) throws -> (items: [Item], note: String?) {
        guard let each = selectors.each else { return ([], nil) }
        var budget = ItemTextBudget(documentBytes: pageBytes)
        let entries = each.select(in: page).filter { !excluded.contains($0) }
        guard !entries.isEmpty else { throw FetchFailure(.selector, "\(displayURL): 'each' ('\(each)') matches nothing in the page") }
        let anyLink = try! CSSSelector("a[href]").matches(in: page)
        var fieldMatches: [String: CSSSelector.Matches] = [:]
        for case let selector? in [selectors.title, selectors.link, selectors.id, selectors.summary, selectors.published].map({ $0?.selector }) {
            if fieldMatches[selector.description] == nil { fieldMatches[selector.description] = selector.matches(in: page) }
        }
        let limits = ItemLimits.standard
        // The first entries in page order, as a feed keeps its first items; the rest is said.
        let dropped = entries.count > limits.itemsPerFetch ? "\(entries.count - limits.itemsPerFetch) entries past the first \(limits.itemsPerFetch) dropped" : nil
        var items: [Item] = []
        for (position, entry) in entries.prefix(limits.itemsPerFetch).enumerated() {
            if cancellation.isCancelled { throw CancellationError() }
            // Twice the field's limit is read, so that what is longer is still cut, and said
            // to be, by the limits.
            func value(_ field: FieldSelector?, limit: Int) -> String? {
                guard let field else { return nil }
                let matches = field.selector.flatMap { fieldMatches[$0.description] }
                return field.value(in: page, entry: entry, matches: matches, excluded: excluded, maximumBytes: 2 * limit)
            }
            let ownLink = page.nodes[entry].name == "a" ? page.nodes[entry].attribute("href") : anyLink.first(below: entry, in: page).flatMap { page.nodes[$0].attribute("href") }
            let link = (selectors.link == nil ? ownLink : value(selectors.link, limit: limits.link)).map { ItemDraft.resolve($0.trimmingCharacters(in: .whitespacesAndNewlines), against: page.baseURL) }
            // The title is also the id when nothing else is: read to the longer limit.
            let titleLimit = max(limits.title, limits.id)
            let title = value(selectors.title, limit: titleLimit) ?? page.line(of: entry, excluding: excluded, maximumBytes: 2 * titleLimit)
            guard let id = value(selectors.id, limit: limits.id) ?? link ?? (title.isEmpty ? nil : title) else { continue }
            let item = Item(
                id: id, title: title.isEmpty ? id : title, link: link,
                published: value(selectors.published, limit: limits.title).flatMap(DateParser.parse), summary: value(selectors.summary, limit: limits.summary)
            )
            guard budget.admits(item) else {
                let note = budget.note(leftOut: min(entries.count, limits.itemsPerFetch) - position)
                return (items, [dropped, note].compactMap { $0 }.joined(separator: "; "))
            }
            items.append(item)
        }
        return (items, dropped)
    }
}
