import FetchRunKit
import Foundation

/// The dashboard's table of sources: every source's row, sorted, filtered and cut into pages
/// as a request's query asks (`?sort=changed&order=desc&failing=1&tag=news&q=text&page=2`), and
/// the totals over all of them. Plain data: the page renders it, the tests read it.
struct SourceTable: Sendable {
    /// One source as the table shows it.
    struct Row: Sendable, Equatable {
        var name: String
        var type: String
        var tags: [String]
        var health: Health
        var lastChecked: Date?
        var lastChange: Date?
        var nextCheck: Date?
        var failures: Int
        var lastError: String?
        /// The `url:` as the config writes it (``SourceConfig/shownURL``).
        var url: String?
    }

    enum Health: String, Sendable, Comparable {
        case failing, neverFetched = "never fetched", ok

        /// Failing first when sorted by health: what needs looking at.
        static func < (left: Self, right: Self) -> Bool { left.order < right.order }
        private var order: Int {
            switch self {
            case .failing: 0
            case .neverFetched: 1
            case .ok: 2
            }
        }
    }

    /// The columns a table sorts by, as `?sort=` names them.
    enum Column: String, Sendable, CaseIterable {
        case name, type, health, checked, changed, next, failures
    }

    /// What a request asks of the table.
    struct Query: Sendable, Equatable {
        var sort: Column = .name
        var descending = false
        var failingOnly = false
        var tag: String?
        /// Matched case-insensitively against the name, the type, the URL and the tags.
        var text = ""
        /// From 1.
        var page = 1
        var perPage = Self.defaultPerPage

        static let defaultPerPage = 100
        static let perPageRange = 10...1_000

        init() {}

        /// From a request's query parameters; what cannot be read keeps its default.
        init(parameters: [String: String]) {
            if let sort = parameters["sort"].flatMap(Column.init(rawValue:)) { self.sort = sort }
            descending = parameters["order"] == "desc"
            failingOnly = parameters["failing"] == "1"
            if let tag = parameters["tag"], !tag.isEmpty { self.tag = tag }
            text = String((parameters["q"] ?? "").prefix(200)).trimmingCharacters(in: .whitespaces)
            if let page = parameters["page"].flatMap(Int.init), page >= 1 { self.page = page }
            if let size = parameters["per_page"].flatMap(Int.init) { perPage = min(max(size, Self.perPageRange.lowerBound), Self.perPageRange.upperBound) }
        }

        /// The query parameters that give this query, defaults left out.
        var parameters: [(String, String)] {
            var parameters: [(String, String)] = []
            if sort != .name { parameters.append(("sort", sort.rawValue)) }
            if descending { parameters.append(("order", "desc")) }
            if failingOnly { parameters.append(("failing", "1")) }
            if let tag { parameters.append(("tag", tag)) }
            if !text.isEmpty { parameters.append(("q", text)) }
            if perPage != Self.defaultPerPage { parameters.append(("per_page", String(perPage))) }
            if page != 1 { parameters.append(("page", String(page))) }
            return parameters
        }
    }

    /// Counts over every source, whatever the filter.
    struct Totals: Sendable, Equatable {
        var sources = 0
        var ok = 0
        var failing = 0
        var neverFetched = 0
    }

    /// The rows of the page asked for.
    var rows: [Row]
    var totals: Totals
    /// Rows the filter kept, on all pages.
    var matching: Int
    /// The page shown, from 1 (the last one when more was asked), and how many there are.
    var page: Int
    var pages: Int
    /// Every tag of every source, sorted: the tag filter's choices.
    var tags: [String]

    /// The table of `sources` with their recorded states, as `query` asks.
    init(_ document: StatusDocument, query: Query) {
        var totals = Totals()
        var tags = Set<String>()
        var kept: [Row] = []
        kept.reserveCapacity(document.sources.count)
        let needle = query.text.lowercased()
        for source in document.sources {
            let row = Self.row(source, document.state(of: source))
            totals.sources += 1
            switch row.health {
            case .ok: totals.ok += 1
            case .failing: totals.failing += 1
            case .neverFetched: totals.neverFetched += 1
            }
            tags.formUnion(row.tags)
            if query.failingOnly, row.health != .failing { continue }
            if let tag = query.tag, !row.tags.contains(tag) { continue }
            if !needle.isEmpty, !Self.row(row, mentions: needle) { continue }
            kept.append(row)
        }
        kept.sort(by: Self.order(query.sort, descending: query.descending))
        self.totals = totals
        self.tags = tags.sorted()
        matching = kept.count
        pages = max(1, (kept.count + query.perPage - 1) / query.perPage)
        page = min(query.page, pages)
        let start = (page - 1) * query.perPage
        rows = Array(kept[min(start, kept.count)..<min(start + query.perPage, kept.count)])
    }

    static func row(_ source: SourceConfig, _ state: SourceState) -> Row {
        let health: Health
        switch state.health {
        case .ok: health = .ok
        case .failing: health = .failing
        case .neverFetched: health = .neverFetched
        }
        return Row(
            name: source.name, type: source.type, tags: source.tags, health: health, lastChecked: state.lastFetch,
            lastChange: state.lastChange, nextCheck: state.nextDue, failures: state.consecutiveFailures,
            lastError: health == .failing ? state.lastError?.message : nil, url: source.shownURL
        )
    }

    private static func row(_ row: Row, mentions needle: String) -> Bool {
        row.name.lowercased().contains(needle) || row.type.lowercased().contains(needle)
            || (row.url?.lowercased().contains(needle) ?? false) || row.tags.contains { $0.lowercased().contains(needle) }
    }

    /// The order of `column`, ties broken by name so that pages do not shuffle; a missing date
    /// sorts before every date.
    static func order(_ column: Column, descending: Bool) -> (Row, Row) -> Bool {
        func by<Key: Comparable>(_ key: @escaping (Row) -> Key) -> (Row, Row) -> Bool {
            { left, right in
                let (a, b) = (key(left), key(right))
                if a != b { return descending ? b < a : a < b }
                return left.name < right.name
            }
        }
        let never = Date.distantPast
        switch column {
        case .name: return { descending ? $1.name < $0.name : $0.name < $1.name }
        case .type: return by(\.type)
        case .health: return by(\.health)
        case .checked: return by { $0.lastChecked ?? never }
        case .changed: return by { $0.lastChange ?? never }
        case .next: return by { $0.nextCheck ?? never }
        case .failures: return by(\.failures)
        }
    }
}
