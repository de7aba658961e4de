import Foundation
import HTTPTypes
import Testing
@testable import FetchRunKit
@testable import FetchRunMonitor

/// The dashboard's pages as data and as HTML: the table's sorting, filters and pages, the diff
/// views, and what a hostile value becomes in each place it is shown.
@Suite struct DashboardTests {
    static let now = Date(timeIntervalSince1970: 1_795_950_000)

    static func source(_ name: String, tags: [String] = [], url: String? = nil) -> SourceConfig {
        var source = SourceConfig(name: name, adapter: ScriptedAdapter { _ in FetchOutput(items: []) }, type: "rss")
        source.tags = tags
        source.shownURL = url
        return source
    }

    static func state(_ name: String, checked: TimeInterval?, failures: Int = 0, error: String? = nil, changed: TimeInterval? = nil) -> SourceState {
        var state = SourceState(name: name)
        state.lastFetch = checked.map { now.addingTimeInterval(-$0) }
        state.lastChange = changed.map { now.addingTimeInterval(-$0) }
        state.consecutiveFailures = failures
        if let error { state.lastError = .init(kind: .network, message: error, at: now) }
        state.nextDue = now.addingTimeInterval(60)
        return state
    }

    static let frame = DashboardPages.Frame(title: "Sources", now: now, notice: nil, csrf: "token")

    @Test func tableSortsFiltersAndPages() {
        let sources = [Self.source("beta", tags: ["news"]), Self.source("alpha", tags: ["news", "тест"], url: "https://a.example/feed"), Self.source("gamma")]
        let states = [
            "alpha": Self.state("alpha", checked: 30, changed: 300),
            "beta": Self.state("beta", checked: 10, failures: 3, error: "HTTP 500"),
        ]
        let document = StatusDocument(sources: sources, states: states)
        var query = SourceTable.Query()
        var table = SourceTable(document, query: query)
        #expect(table.rows.map(\.name) == ["alpha", "beta", "gamma"])
        #expect(table.totals == SourceTable.Totals(sources: 3, ok: 1, failing: 1, neverFetched: 1))
        #expect(table.tags == ["news", "тест"])

        query.sort = .checked
        query.descending = true
        #expect(SourceTable(document, query: query).rows.map(\.name) == ["beta", "alpha", "gamma"])
        query.sort = .health
        query.descending = false
        #expect(SourceTable(document, query: query).rows.map(\.name) == ["beta", "gamma", "alpha"])

        query = SourceTable.Query(parameters: ["failing": "1"])
        #expect(SourceTable(document, query: query).rows.map(\.name) == ["beta"])
        query = SourceTable.Query(parameters: ["tag": "тест"])
        #expect(SourceTable(document, query: query).rows.map(\.name) == ["alpha"])
        query = SourceTable.Query(parameters: ["q": "A.EXAMPLE"])
        #expect(SourceTable(document, query: query).rows.map(\.name) == ["alpha"])

        // Pages: 25 sources, 10 a page; a page past the last shows the last.
        let many = StatusDocument(sources: (1...25).map { Self.source(String(format: "s%02d", $0)) }, states: [:])
        table = SourceTable(many, query: SourceTable.Query(parameters: ["per_page": "10", "page": "9"]))
        #expect(table.pages == 3 && table.page == 3)
        #expect(table.rows.map(\.name) == ["s21", "s22", "s23", "s24", "s25"])
        #expect(table.matching == 25)
    }

    /// Tags in any script — right-to-left, emoji with modifiers and joiners, combining marks —
    /// show as written and link to their filter, which reads them back.
    @Test func tagsInAnyScriptShowAndFilter() throws {
        let tag = "עברית 👩🏽‍💻 Cafe\u{301} 東京"
        let document = StatusDocument(sources: [Self.source("one", tags: [tag])], states: [:])
        let html = try DashboardPages(readOnly: false).sources(document, query: .init(), frame: Self.frame)
        let href = DashboardText.href("/", [("tag", tag)])
        #expect(html.contains(">\(tag)</a>") && html.contains("href=\"\(href)\""))
        #expect(href.unicodeScalars.allSatisfy { $0.isASCII })
        let query = SourceTable.Query(parameters: DashboardText.formFields(String(href.dropFirst(2))))
        #expect(query.tag == tag && SourceTable(document, query: query).rows.map(\.name) == ["one"])
    }

    @Test func queryReadsWhatItCanAndWritesItBack() {
        let query = SourceTable.Query(parameters: ["sort": "changed", "order": "desc", "page": "-4", "per_page": "999999", "q": "  x y "])
        #expect(query.sort == .changed && query.descending && query.page == 1 && query.perPage == 1_000 && query.text == "x y")
        #expect(SourceTable.Query(parameters: ["sort": "<script>"]).sort == .name)
        #expect(DashboardText.href("/", query.parameters) == "/?sort=changed&order=desc&q=x%20y&per_page=1000")
        #expect(DashboardText.formFields("q=caf%C3%A9+bar&tag=%D1%82") == ["q": "café bar", "tag": "т"])
    }

    @Test func diffViewsMarkAdditionsAndRemovals() {
        let diff = "--- before\n+++ after\n@@ -1,3 +1,3 @@\n keep\n-old one\n-old two\n+new one\n tail\n"
        let view = DiffView(diff)
        #expect(view.lines.map(\.kind) == [.header, .header, .hunk, .context, .removed, .removed, .added, .context])
        let pairs = view.pairs
        #expect(pairs.count == 5)
        #expect(pairs[0].hunk == "@@ -1,3 +1,3 @@")
        #expect(pairs[2].before?.text == "old one" && pairs[2].after?.text == "new one")
        #expect(pairs[3].before?.text == "old two" && pairs[3].after == nil)
    }

    @Test func linksAreOnlyHTTP() {
        #expect(DashboardText.link("https://example.org/a?b=1") == "https://example.org/a?b=1")
        #expect(DashboardText.link("HTTP://EXAMPLE.ORG") != nil)
        for hostile in ["javascript:alert(1)", " javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,<script>", "//evil.example", "/local", "http://a b", "http://a\u{0}b", "vbscript:x"] {
            #expect(DashboardText.link(hostile) == nil, "\(hostile)")
        }
    }

    @Test func noTemplateWritesAValueUnescaped() {
        for (name, text) in DashboardTemplates.all {
            #expect(!text.contains("{{{") && !text.contains("{{&"), "\(name)")
            // Nothing inline that default-src 'self' would block.
            #expect(!text.contains("style=") && !text.contains("<style"), "\(name)")
            #expect(text.firstMatch(of: /\son[a-z]+\s*=/) == nil, "\(name): an event handler attribute")
            #expect(!text.contains("<script>"), "\(name)")
        }
    }

    @Test func theAssetsLoadNothingFromElsewhere() {
        for asset in [DashboardAssets.css, DashboardAssets.javascript] {
            #expect(!asset.contains("http:") && !asset.contains("https:") && !asset.contains("//cdn") && !asset.contains("@import"))
            #expect(!asset.contains("eval(") && !asset.contains("innerHTML") && !asset.contains("new Function"))
        }
        // The icon names SVG's namespace, which is not a request.
        #expect(DashboardAssets.icon.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "").contains("http") == false)
    }

    /// A hostile title, link, summary, diff, error, tag and URL, in every place they are shown.
    @Test func hostileValuesAreInert() throws {
        let payload = #"<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>"' &amp;"#
        let source = Self.source("hostile", tags: [payload], url: "javascript:alert(1)//" + payload)
        var state = Self.state("hostile", checked: 5, failures: 1, error: payload + "\u{1B}[2J")
        state.recentFetches = [.init(at: Self.now, milliseconds: 12, outcome: 2)]
        var item = ChangeRecord(id: "hostile/item/1", source: "hostile", kind: .item, at: Self.now)
        item.title = payload
        item.link = "javascript:window.pwned=3"
        item.summary = payload
        var change = ChangeRecord(id: "hostile/change/2", source: "hostile", kind: .change, at: Self.now)
        change.diff = "@@ -1 +1 @@\n-" + payload + "\n+</pre></td></tr></table>" + payload + "\n"
        change.notes = [payload]
        let pages = try DashboardPages(readOnly: false)
        let document = StatusDocument(sources: [source], states: ["hostile": state])
        var rendered = [pages.sources(document, query: SourceTable.Query(parameters: ["q": payload]), frame: Self.frame)]
        rendered.append(pages.sources(document, query: SourceTable.Query(), frame: Self.frame))
        for sideBySide in [false, true] {
            rendered.append(pages.source(source, state: state, records: [change, item], sideBySide: sideBySide, frame: Self.frame))
        }
        let delivery = PendingDelivery(
            row: 1, output: payload, delivery: Delivery(id: "x", kind: .item, source: "hostile", payload: #"{"title": "\#(payload.replacingOccurrences(of: "\"", with: "\\\""))"}"#),
            attempts: 3, lastError: payload, createdAt: Self.now, nextAttemptAt: Self.now, givenUpAt: Self.now
        )
        rendered.append(pages.outputs(DashboardOutbox(outputs: [(payload, "webhook")], pending: [delivery], delivered: [:], holds: [payload: OutputHold(notBefore: Self.now, reason: payload)]), frame: Self.frame))
        for html in rendered {
            #expect(!html.contains("<img"))
            #expect(!html.contains("<script>"))
            #expect(!html.contains("onerror=\""))
            #expect(!html.contains("href=\"javascript:"))
            #expect(!html.contains("\u{1B}"))
            #expect(html.contains("&lt;img src=x onerror=&quot;window.pwned=1&quot;&gt;") || html.contains("&lt;script&gt;"))
        }
        // The diff's lines are there, marked.
        #expect(rendered[2].contains(#"<tr class="del">"#) && rendered[2].contains(#"<tr class="add">"#))
        #expect(rendered[3].contains(#"<td class="del">"#) && rendered[3].contains(#"<td class="add">"#))
        // The hostile link is shown as text, not followed.
        #expect(rendered[2].contains("<code>javascript:alert(1)//"))
    }

    /// A change's screenshot shows on its source's page, by a name the state folder could have
    /// written; any other name in a record (a state folder is anyone's to edit) shows nothing.
    @Test func aChangesScreenshotShowsOnlyByANameTheFolderWrites() throws {
        let source = Self.source("shop")
        let state = Self.state("shop", checked: 5)
        let names = [
            "shop/1795950000000-a1b2c3.png", "../etc/passwd", "shop/1-a.png\" onerror=\"window.pwned=1", "shop/1-ABC.png",
            ".hidden/1-a.png", "shop/x/1-a.png", "shop/1-a.svg", "shop/-a.png",
        ]
        let records = names.enumerated().map { index, name in
            var record = ChangeRecord(id: "shop/change/\(index)", source: "shop", kind: .change, at: Self.now)
            record.screenshot = name
            return record
        }
        let html = try DashboardPages(readOnly: false).source(source, state: state, records: records, sideBySide: false, frame: Self.frame)
        let shown = html.matches(of: /<img src="([^"]*)"/).map { String($0.1) }
        #expect(shown == ["/screenshots/shop/1795950000000-a1b2c3.png"], "\(shown)")
        #expect(!html.contains("onerror=\""))
    }

    @Test func readOnlyPagesHaveNoForms() throws {
        let source = Self.source("one")
        let document = StatusDocument(sources: [source], states: [:])
        let writable = try DashboardPages(readOnly: false), readOnly = try DashboardPages(readOnly: true)
        #expect(writable.source(source, state: SourceState(name: "one"), records: [], sideBySide: false, frame: Self.frame).contains("<form method=\"post\""))
        #expect(!readOnly.source(source, state: SourceState(name: "one"), records: [], sideBySide: false, frame: Self.frame).contains("<form method=\"post\""))
        let given = PendingDelivery(row: 1, output: "hook", delivery: Delivery(id: "x", kind: .failing, source: "one", payload: "{}"), attempts: 9, lastError: "no", createdAt: Self.now, nextAttemptAt: Self.now, givenUpAt: Self.now)
        let outbox = DashboardOutbox(outputs: [("hook", "webhook")], pending: [given], delivered: ["hook": 4], holds: [:])
        #expect(writable.outputs(outbox, frame: Self.frame).contains("/outputs/hook/retry"))
        #expect(!readOnly.outputs(outbox, frame: Self.frame).contains("/outputs/hook/retry"))
        #expect(!readOnly.sources(document, query: .init(), frame: Self.frame).contains("method=\"post\""))
    }

    @Test func noticesComeFromAFixedList() {
        #expect(DashboardRoutes.notice(["done": "due"])?.hasPrefix("Checking now") == true)
        #expect(DashboardRoutes.notice(["done": "retried", "count": "2"]) == "2 given-up deliveries are due again.")
        #expect(DashboardRoutes.notice(["done": "<script>alert(1)</script>"]) == nil)
        #expect(DashboardRoutes.notice(["done": "retried", "count": "<b>"]) == "0 given-up deliveries are due again.")
    }

    @Test func actionsOnlyFromTheSameOrigin() {
        func head(_ fields: [(String, String)]) -> HTTPTypes.HTTPRequest {
            var head = HTTPTypes.HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:9464", path: "/sources/a/check")
            for (name, value) in fields { head.headerFields[HTTPField.Name(name)!] = value }
            return head
        }
        #expect(DashboardRoutes.isSameOrigin(head([("Origin", "http://127.0.0.1:9464")])))
        #expect(DashboardRoutes.isSameOrigin(head([("Referer", "http://127.0.0.1:9464/sources/a")])))
        #expect(!DashboardRoutes.isSameOrigin(head([("Origin", "http://evil.example")])))
        #expect(!DashboardRoutes.isSameOrigin(head([("Origin", "http://127.0.0.1:9464.evil.example")])))
        #expect(!DashboardRoutes.isSameOrigin(head([("Referer", "http://127.0.0.1:9464.evil.example/")])))
        #expect(!DashboardRoutes.isSameOrigin(head([("Origin", "http://127.0.0.1:9464"), ("Sec-Fetch-Site", "cross-site")])))
        #expect(!DashboardRoutes.isSameOrigin(head([])))
    }

    @Test func chartDrawsEachFetch() throws {
        let fetches = [(40, 0), (10, 1), (160, 2)].enumerated().map { index, fetch in
            SourceState.RecentFetch(at: Self.now.addingTimeInterval(Double(index)), milliseconds: fetch.0, outcome: fetch.1)
        }
        let chart = try #require(FetchChart(fetches))
        #expect(chart.bars.map(\.outcome) == ["newData", "noData", "failed"])
        #expect(chart.bars[2].height == FetchChart.height - 2)
        #expect(chart.bars[0].height == (FetchChart.height - 2) / 2)
        #expect(chart.summary.contains("3 fetches, 1 failed"))
        #expect(FetchChart([]) == nil)
    }

    @Test func recentFetchesAreKeptInTheStateDocument() {
        var state = SourceState(name: "s")
        for index in 0..<(SourceState.recentLimit + 5) {
            let report = SourceReport(name: "s", type: "rss", outcome: index % 2 == 0 ? .noData : .failed(FetchFailure(.network, "x")), totalItems: 0, duration: .milliseconds(index))
            _ = state.record(report, validators: nil, bodyHash: nil, type: "rss", settings: SourceSettings(), at: Self.now.addingTimeInterval(Double(index)), jitter: 0)
        }
        #expect(state.recentFetches.count == SourceState.recentLimit)
        #expect(state.recentFetches.last?.milliseconds == SourceState.recentLimit + 4)
        let read = SourceState(name: "s", json: state.json, nextDue: state.nextDue)
        #expect(read.recentFetches == state.recentFetches)
        // A hostile document: wrong shapes are dropped, the rest read.
        let hostile = SourceState(name: "s", json: #"{"recent": "1,2,9;x;;99999999999999999999,1,0;1,-5,0;1,2;5,0,0;1000,20,1,", "last_change": 1000}"#, nextDue: nil)
        #expect(hostile.recentFetches.map(\.outcome) == [0])
        #expect(hostile.recentFetches.first?.at == Date(timeIntervalSince1970: 0.005))
        #expect(hostile.lastChange == Date(timeIntervalSince1970: 1))
        #expect(SourceState(name: "s", json: #"{"recent": [[1, 2, 0]]}"#, nextDue: nil).recentFetches.isEmpty)
    }
}
