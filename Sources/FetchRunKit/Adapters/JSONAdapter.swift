import Foundation

/// `type: json` — a JSON API over HTTP(S), or a local file, read with JSONPath (RFC 9535).
///
/// Two ways to watch it, one per source:
/// - `select: $.path` watches one value. Its pretty-printed JSON (object members sorted) is the
///   source's one item; when it changes, that is new data, with a unified diff of the change
///   (``ChangeTracker``: `ignore:`, `sort:` and `report: added` apply).
/// - `items:` turns an array into items: `each:` selects the entries, and `id:`, `title:`,
///   `link:`, `summary:`, `published:` are paths within each entry (`$` or `@` is the entry;
///   a bare `name` means `$.name`). The id defaults to the link, else the title.
///
/// Fetching is the `rss` adapter's: every HTTP option, conditional GET, the same-body check.
/// A body that is not JSON fails with `parse`; a path that matches nothing, or a value of the
/// wrong kind, with `selector`. Parsing and selecting run off the cooperative pool.
package struct JSONAdapter: ConfigurableAdapter, SelectionWatching {
    package static let type = "json"
    package static let summary = "a JSON API over http(s), or a local file: one value watched with select:, or an array as items:"
    package static let options = SourceFetcher.adapterOptions(url: "http:// or https:// URL; or file:path (relative to the config file) or file:///absolute/path")
        + [
            AdapterOption("select", kind: "JSONPath", default: "none", "the value to watch, e.g. $.status; a change is new data, shown as a diff (this or items:)"),
            AdapterOption("items", kind: "map", default: "none", "each: path of the entries, and id:, title:, link:, summary:, published: paths within an entry (this or select:)"),
        ] + Self.changeOptions

    /// The options of a watched selection, shared with `page` sources.
    static let changeOptions = [
        AdapterOption("ignore", kind: "list", default: "none", "regular expressions (or presets: dates, times, numbers) whose matches are left out of the comparison"),
        AdapterOption("sort", kind: "true or false", default: "false", "compare the lines in sorted order (for lists whose order changes)"),
        AdapterOption("report", kind: "changes or added", default: "changes", "added: report a change only when lines were added"),
    ]

    /// What the source watches.
    package enum Selection: Sendable {
        case value(JSONPath, ChangeTracker)
        case items(ItemPaths)
    }

    /// The paths that make an entry an item; each is evaluated with the entry as its root.
    package struct ItemPaths: Sendable {
        package var each: JSONPath
        package var id, title, link, summary, published: JSONPath?
    }

    package var fetcher: SourceFetcher
    package var selection: Selection

    /// What a json source asks a server for (also `fetchrun add --type json`).
    package static let accept = "application/json, */*;q=0.5"

    package init(options: AdapterOptions) throws {
        fetcher = SourceFetcher(options: options, what: "the API's", accept: Self.accept)
        var tracker = Self.changeTracker(options)
        tracker.keepsIndentation = true
        switch (options.contains("select"), options.contains("items")) {
        case (true, false):
            selection = .value(Self.path(options, key: "select") ?? JSONPath.root, tracker)
        case (false, true):
            selection = .items(Self.itemPaths(options))
        case (true, true):
            options.report("'select' and 'items' both given: a json source watches one value (select:) or turns an array into items (items:)")
            selection = .items(ItemPaths(each: .root))
        case (false, false):
            options.report("missing 'select' (a JSONPath to watch, such as $.status) or 'items' (with each:, title:, link:…)")
            selection = .items(ItemPaths(each: .root))
        }
        if case .items = selection, options.contains("select") == false, ["ignore", "sort", "report"].contains(where: options.contains) {
            options.report("'ignore', 'sort' and 'report' apply to select:, not to items:")
        }
    }

    /// `ignore:`, `sort:` and `report:` as a ``ChangeTracker``; problems reported with their place.
    static func changeTracker(_ options: AdapterOptions) -> ChangeTracker {
        var tracker = ChangeTracker()
        for pattern in options.stringList("ignore") ?? [] {
            do {
                tracker.ignore.append(try ChangeTracker.ignorePattern(pattern))
            } catch {
                options.report("'ignore': '\(TerminalText.safe(pattern))': \(error)", key: "ignore")
            }
        }
        tracker.sorted = options.boolean("sort") ?? false
        if let report = options.value("report", what: "report", parse: { text in
            guard ["changes", "added"].contains(text) else { throw ValueError("use changes or added") }
            return text
        }) {
            tracker.reportsOnlyAdditions = report == "added"
        }
        return tracker
    }

    private static func path(_ options: AdapterOptions, key: String) -> JSONPath? {
        guard let text = options.string(key) else { return nil }
        do {
            return try JSONPath(text)
        } catch {
            options.report("'\(key)': not a JSONPath: \(error)", key: key)
            return nil
        }
    }

    private static let itemKeys = ["each", "id", "title", "link", "summary", "published"]

    private static func itemPaths(_ options: AdapterOptions) -> ItemPaths {
        var paths = ItemPaths(each: .root)
        guard let written = options.stringMap("items") else { return paths }
        for key in written.keys.sorted() where !itemKeys.contains(key) {
            options.report("'items': unknown key '\(TerminalText.safe(key))'; known: \(itemKeys.joined(separator: ", "))", key: "items", member: key)
        }
        func path(_ key: String) -> JSONPath? {
            guard let text = written[key] else { return nil }
            do {
                return try JSONPath(entryPath: text)
            } catch {
                options.report("'items.\(key)': not a JSONPath: \(error)", key: "items", member: key)
                return nil
            }
        }
        if written["each"] == nil { options.report("'items' needs 'each' (the path of the entries, such as $.releases[*])", key: "items") }
        if written["id"] == nil, written["link"] == nil, written["title"] == nil {
            options.report("'items' needs 'id', 'link' or 'title': what tells one entry from another", key: "items")
        }
        if let each = written["each"] {
            do {
                paths.each = try JSONPath(each)
            } catch {
                options.report("'items.each': not a JSONPath: \(error)", key: "items", member: "each")
            }
        }
        (paths.id, paths.title, paths.link, paths.summary, paths.published) = (path("id"), path("title"), path("link"), path("summary"), path("published"))
        for (key, value) in [("id", paths.id), ("title", paths.title), ("link", paths.link), ("summary", paths.summary), ("published", paths.published)] {
            if let value, !value.isSingular {
                options.report("'items.\(key)': '\(value)' can select more than one value; use a path without *, .., slices or filters", key: "items", member: key)
            }
        }
        return paths
    }

    /// It reads the watched value's previous text (adapter state) and item.
    package var readsPreviousSnapshot: Bool { watchesOneSelection }

    package var watchesOneSelection: Bool {
        if case .value = selection { true } else { false }
    }

    package func fetch(_ context: FetchContext) async throws -> FetchOutput {
        let selection = self.selection, displayURL = fetcher.displayURL, isFile = fetcher.isFileURL
        let previousState = context.previous?.adapterState, previousItems = context.previousItems, fetchedAt = context.date
        return try await fetcher.fetch(context) { response, cancellation in
            let document = try Self.read(response.body, from: displayURL)
            if cancellation.isCancelled { throw CancellationError() }
            switch selection {
            case .value(let path, let tracker):
                let text = try Self.watchedText(of: document, at: path, visitBudget: JSONPath.visitBudget(documentBytes: response.body.count), from: displayURL)
                let seen = try tracker.observe(text, previousState: previousState, previousItems: previousItems, link: displayURL, at: fetchedAt, budget: UserPattern.MatchBudget(cancellation: cancellation))
                return (seen.item.map { [$0] } ?? [], seen.state, seen.note.map { [$0] } ?? [])
            case .items(let paths):
                let base = isFile ? nil : response.effectiveURL
                let (items, notes) = try Self.items(in: document, paths: paths, base: base, documentBytes: response.body.count, from: displayURL, cancellation: cancellation)
                return (items, nil, notes)
            }
        }
    }

    /// The body as JSON, a UTF-8 byte-order mark allowed.
    /// - Throws: ``FetchFailure`` `.parse` naming what is wrong and where.
    static func read(_ body: Data, from displayURL: String) throws -> JSONValue {
        var document = body
        if document.starts(with: [0xEF, 0xBB, 0xBF]) { document = document.dropFirst(3) }
        do {
            return try JSONReader.value(of: Data(document))
        } catch {
            throw FetchFailure(.parse, "\(displayURL): not JSON: \(error.description)")
        }
    }

    /// The selected value as pretty-printed JSON; several nodes as an array of them.
    static func watchedText(of document: JSONValue, at path: JSONPath, visitBudget: Int, from displayURL: String) throws -> String {
        guard let nodes = path.select(in: document, maximumVisits: visitBudget) else {
            throw FetchFailure(.selector, "\(displayURL): '\(path)' selects more than \(JSONPath.maximumNodes) values at a step, or looks at more than \(visitBudget) in all")
        }
        guard !nodes.isEmpty else { throw FetchFailure(.selector, "\(displayURL): '\(path)' matches nothing in the document") }
        return (path.isSingular ? nodes[0] : .array(nodes)).prettyPrinted(maximumBytes: ChangeTracker.maximumRenderedBytes)
    }

    /// Each entry `paths.each` selects, as an item, within an ``ItemTextBudget`` for the
    /// document; a note says how many entries were left out past it.
    /// - Throws: ``FetchFailure`` `.selector` when `each` matches nothing, or an entry's field is
    ///   an object or array, or an entry has nothing to tell it apart.
    static func items(in document: JSONValue, paths: ItemPaths, base: String?, documentBytes: Int, from displayURL: String, cancellation: CancellationFlag) throws -> (items: [Item], notes: [String]) {
        let visits = JSONPath.visitBudget(documentBytes: documentBytes)
        guard let selected = paths.each.select(in: document, maximumVisits: visits) else {
            throw FetchFailure(.selector, "\(displayURL): 'each' (\(paths.each)) selects more than \(JSONPath.maximumNodes) values at a step, or looks at more than \(visits) values in all")
        }
        // The first entries in document order, as a feed keeps its first items: a long list is
        // still a list, not a broken selector.
        let limit = ItemLimits.standard.itemsPerFetch
        let entries = selected.prefix(limit)
        guard !entries.isEmpty else { throw FetchFailure(.selector, "\(displayURL): 'each' (\(paths.each)) matches nothing in the document") }
        var items: [Item] = []
        var undated = 0
        var budget = ItemTextBudget(documentBytes: documentBytes)
        var leftOut = 0
        for (index, entry) in zip(entries.indices, entries) {
            if cancellation.isCancelled { throw CancellationError() }
            func text(_ key: String, _ path: JSONPath?) throws -> String? {
                guard let path, let node = path.select(in: entry)?.first else { return nil }
                switch node {
                case .null: return nil
                case .string(let text): return text
                case .bool(let flag): return flag ? "true" : "false"
                case .number: return node.scalarText
                case .array, .object:
                    throw FetchFailure(.selector, "\(displayURL): entry \(index + 1): '\(key)' (\(path)) is \(node.kindDescription), not a text, number or true/false")
                }
            }
            let title = try text("title", paths.title).map(ItemDraft.clean)
            let link = try text("link", paths.link).map { ItemDraft.resolve($0, against: base) }
            guard let id = try text("id", paths.id) ?? link ?? title else {
                throw FetchFailure(.selector, "\(displayURL): entry \(index + 1) has no id, link or title (\(paths.each))")
            }
            var published: Date?
            if let path = paths.published, let node = path.select(in: entry)?.first {
                published = Self.date(node)
                if published == nil, node != .null { undated += 1 }
            }
            let item = Item(id: id, title: title ?? link ?? id, link: link, published: published, summary: try text("summary", paths.summary))
            guard budget.admits(item) else {
                leftOut = entries.count - index
                break
            }
            items.append(item)
        }
        var notes = undated > 0 ? ["\(undated) entr\(undated == 1 ? "y's" : "ies'") 'published' could not be read as a date; left undated"] : []
        if selected.count > limit { notes.append("\(selected.count - limit) entries past the first \(limit) dropped") }
        if leftOut > 0 { notes.append(budget.note(leftOut: leftOut)) }
        return (items, notes)
    }

    /// A date as APIs write them: text in RFC 3339 or RFC 822 form, or a Unix time in seconds
    /// (in milliseconds when it is too large for seconds).
    static func date(_ node: JSONValue) -> Date? {
        switch node {
        case .string(let text): return DateParser.parse(text)
        case .number(let exact) where exact.value.isFinite && exact.value >= 0:
            let number = exact.value
            let seconds = number > 1e11 ? number / 1000 : number
            return seconds < 1e11 ? Date(timeIntervalSince1970: seconds) : nil
        default: return nil
        }
    }
}

extension JSONPath {
    /// `$`, the whole document: what a path that could not be read stands in for while the
    /// config's other errors are collected.
    static let root = try! JSONPath("$")

    /// A path within an entry: `$…` or `@…` (the entry), or a bare member name path such as
    /// `title` or `author.name`, read as `$.title`.
    init(entryPath text: String) throws(JSONPathError) {
        if text.hasPrefix("@") {
            try self.init("$" + text.dropFirst())
        } else if text.hasPrefix("$") {
            try self.init(text)
        } else {
            try self.init("$." + text)
        }
    }
}

extension JSONValue {
    /// The value as JSON for people: two-space indents, object members sorted, one scalar per
    /// line, so a line diff of two versions shows what changed.
    ///
    /// Lines stop once `maximumBytes` are written (the line that crosses it is the last), or
    /// at `maximumLines`: a value nested 500 deep indents every line by 1,000 spaces, so its
    /// text can be hundreds of times the document's size.
    func prettyPrinted(maximumBytes: Int = .max, maximumLines: Int = .max) -> String {
        var lines = PrettyLines(maximumBytes: maximumBytes, maximumLines: maximumLines)
        write(into: &lines, indent: "", prefix: "", suffix: "")
        return lines.lines.joined(separator: "\n")
    }

    private struct PrettyLines {
        var lines: [String] = []
        var bytes = 0
        let maximumBytes: Int
        let maximumLines: Int

        var isFull: Bool { bytes >= maximumBytes || lines.count >= maximumLines }

        mutating func append(_ line: String) {
            lines.append(line)
            bytes += line.utf8.count + 1
        }
    }

    private func write(into lines: inout PrettyLines, indent: String, prefix: String, suffix: String) {
        guard !lines.isFull else { return }
        switch self {
        case .array(let elements) where !elements.isEmpty:
            lines.append(indent + prefix + "[")
            for (index, element) in elements.enumerated() {
                element.write(into: &lines, indent: indent + "  ", prefix: "", suffix: index == elements.count - 1 ? "" : ",")
                if lines.isFull { return }
            }
            lines.append(indent + "]" + suffix)
        case .object(let members) where !members.isEmpty:
            lines.append(indent + prefix + "{")
            let names = members.keys.sorted()
            for (index, name) in names.enumerated() {
                members[name]!.write(into: &lines, indent: indent + "  ", prefix: JSONValue.string(name).compact + ": ", suffix: index == names.count - 1 ? "" : ",")
                if lines.isFull { return }
            }
            lines.append(indent + "}" + suffix)
        default:
            lines.append(indent + prefix + compact + suffix)
        }
    }

    /// The value as compact JSON.
    var compact: String {
        var writer = JSONWriter()
        writer.value(self)
        return writer.string
    }

    /// "an object", "an array"…, for messages.
    var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "true or false"
        case .number: "a number"
        case .string: "a text"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
