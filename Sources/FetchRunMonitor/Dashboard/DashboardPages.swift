import FetchRunKit
import Foundation
import Mustache

/// The dashboard's three pages — the sources, one source, the outputs — rendered from what
/// the store recorded into HTML through ``DashboardTemplates``. Every value from outside goes
/// into the templates as plain text, escaped there; links only as ``DashboardText/link(_:)``
/// lets them through.
struct DashboardPages: Sendable {
    let library: MustacheLibrary
    /// `true` with `dashboard: read_only`: no forms.
    let readOnly: Bool

    init(readOnly: Bool) throws {
        library = try DashboardTemplates.library()
        self.readOnly = readOnly
    }

    /// What every page shows around its content.
    struct Frame {
        var title: String
        var now: Date
        var notice: String?
        /// The form token for the actions (``DashboardRoutes``).
        var csrf: String
    }

    // MARK: Sources

    func sources(_ document: StatusDocument, query: SourceTable.Query, frame: Frame) -> String {
        let table = SourceTable(document, query: query)
        let columns: [(SourceTable.Column, String)] = [
            (.name, "Source"), (.type, "Type"), (.health, "Health"), (.checked, "Last checked"), (.changed, "Last change"),
            (.next, "Next check"), (.failures, "Failures"),
        ]
        var context = common(frame, page: "sources")
        context["totals"] = ["sources": table.totals.sources, "ok": table.totals.ok, "failing": table.totals.failing, "neverFetched": table.totals.neverFetched]
        context["query"] = [
            "text": query.text, "failingOnly": query.failingOnly, "sorted": query.sort != .name, "sort": query.sort.rawValue,
            "descending": query.descending, "sortTitle": columns.first { $0.0 == query.sort }?.1 ?? "name",
        ] as [String: Any]
        context["tags"] = table.tags.map { ["name": $0, "selected": $0 == query.tag] as [String: Any] }
        context["columns"] = columns.map { column, title -> [String: Any] in
            var sorted = query
            sorted.page = 1
            // A second click on the sorted column turns its order round.
            sorted.descending = column == query.sort ? !query.descending : Self.startsDescending(column)
            sorted.sort = column
            var entry: [String: Any] = ["title": title, "href": DashboardText.href("/", sorted.parameters)]
            if column == query.sort { entry["sorted"] = query.descending ? "descending" : "ascending" }
            return entry
        }
        context["rows"] = table.rows.map { row(of: $0, now: frame.now) }
        context["matching"] = table.matching
        if table.pages > 1 {
            var paging: [String: Any] = ["page": table.page, "pages": table.pages]
            var other = query
            if table.page > 1 {
                other.page = table.page - 1
                paging["previous"] = DashboardText.href("/", other.parameters)
            }
            if table.page < table.pages {
                other.page = table.page + 1
                paging["next"] = DashboardText.href("/", other.parameters)
            }
            context["paged"] = paging
        }
        return render("sources", context)
    }

    /// Dates read newest first, failures most first.
    private static func startsDescending(_ column: SourceTable.Column) -> Bool {
        [.checked, .changed, .failures].contains(column)
    }

    private func row(of row: SourceTable.Row, now: Date) -> [String: Any] {
        var entry: [String: Any] = [
            "name": row.name, "href": DashboardText.sourcePath(row.name), "type": row.type, "health": Self.health(row.health),
            "failures": row.failures, "hasTags": !row.tags.isEmpty, "tags": tagLinks(row.tags),
            // Mustache looks a missing name up in the enclosing context: every name is set.
            "url": false, "checked": false, "changed": false, "next": false, "error": "",
        ]
        if let url = row.url { entry["url"] = url }
        if let checked = DashboardText.time(row.lastChecked, now: now) { entry["checked"] = checked }
        if let changed = DashboardText.time(row.lastChange, now: now) { entry["changed"] = changed }
        if let next = DashboardText.time(row.nextCheck, now: now) { entry["next"] = next }
        if let error = row.lastError { entry["error"] = TerminalText.safe(error, maximumLength: 300) }
        return entry
    }

    private func tagLinks(_ tags: [String]) -> [[String: Any]] {
        tags.map { ["name": $0, "href": DashboardText.href("/", [("tag", $0)])] }
    }

    static func health(_ health: SourceTable.Health) -> [String: String] {
        switch health {
        case .ok: ["class": "ok", "text": "ok"]
        case .failing: ["class": "failing", "text": "failing"]
        case .neverFetched: ["class": "never", "text": "never fetched"]
        }
    }

    // MARK: One source

    /// How many of a source's newest records its page shows.
    static let records = 50

    func source(_ source: SourceConfig, state: SourceState, records: [ChangeRecord], sideBySide: Bool, frame: Frame) -> String {
        let row = SourceTable.row(source, state)
        var context = common(frame, page: "source")
        let path = DashboardText.sourcePath(source.name)
        context["name"] = source.name
        context["type"] = source.type
        context["health"] = Self.health(row.health)
        if let url = source.shownURL {
            var shown: [String: Any] = ["text": url]
            // `${VAR}` stays as written: a link only when nothing is left to expand.
            if !url.contains("${"), let link = DashboardText.link(url) { shown["href"] = link }
            context["url"] = shown
        }
        context["interval"] = source.settings.interval.description
        context["deadline"] = DurationText.format(source.settings.deadline)
        context["hasTags"] = !source.tags.isEmpty
        context["tags"] = tagLinks(source.tags)
        context["enabled"] = source.enabled ? "yes" : "no"
        let history = source.settings.history
        context["history"] = history.isEnabled ? "the newest \(history.keep) changes, for \(DashboardText.duration(history.maxAge))" : "nothing (history: off)"
        context["historyOff"] = !history.isEnabled
        if let checked = DashboardText.time(state.lastFetch, now: frame.now) { context["checked"] = checked }
        if let changed = DashboardText.time(state.lastChange, now: frame.now) { context["changed"] = changed }
        if let next = DashboardText.time(state.nextDue, now: frame.now) { context["next"] = next }
        context["failures"] = state.consecutiveFailures
        if row.health == .failing, let error = state.lastError {
            context["error"] = "\(error.kind.rawValue): \(TerminalText.safe(error.message, maximumLength: 2_000))"
        }
        if let hint = state.movedHint { context["moved"] = hint }
        context["feed"] = "/feeds/sources/" + DashboardText.component(source.name)
        if !readOnly {
            context["actions"] = true
            context["checkAction"] = path + "/check"
        }
        if let chart = FetchChart(state.recentFetches) { context["chart"] = chart.context }
        let items = records.filter { $0.kind == .item }.prefix(10).map { record -> [String: Any] in
            var entry: [String: Any] = ["title": record.title ?? record.link ?? "(untitled)", "link": false, "published": false]
            if let link = DashboardText.link(record.link) { entry["link"] = link }
            if let published = DashboardText.time(record.published, now: frame.now) { entry["published"] = published }
            return entry
        }
        context["hasItems"] = !items.isEmpty
        context["items"] = items
        context["sideBySide"] = sideBySide
        context["inlineHref"] = path + "#history-title"
        context["splitHref"] = path + "?diff=split#history-title"
        context["records"] = records.map { record(of: $0, sideBySide: sideBySide, now: frame.now) }
        return render("source", context)
    }

    private func record(of record: ChangeRecord, sideBySide: Bool, now: Date) -> [String: Any] {
        var entry: [String: Any] = [
            "id": record.id, "kind": record.kind.rawValue, "kindText": Self.kindText(record.kind),
            "at": DashboardText.time(record.at, now: now) ?? [:], "notes": record.notes,
            // Mustache looks a missing name up in the enclosing context (the page's title): every name is set.
            "title": false, "link": false, "summary": false, "error": false, "movedTo": false, "hasInline": false, "hasSplit": false,
            "screenshot": false,
        ]
        if let name = record.screenshot, ScreenshotFolder.isName(name) {
            entry["screenshot"] = "/screenshots/" + name.split(separator: "/").map { DashboardText.component(String($0)) }.joined(separator: "/")
        }
        if let title = record.title ?? (record.kind == .item ? record.link : nil) { entry["title"] = title }
        if let link = DashboardText.link(record.link) { entry["link"] = link }
        if let summary = record.summary { entry["summary"] = summary }
        if let error = record.error { entry["error"] = (record.errorKind.map { "\($0): " } ?? "") + error }
        if let movedTo = record.movedTo { entry["movedTo"] = movedTo }
        if let diff = record.diff {
            let view = DiffView(diff)
            if sideBySide {
                let pairs = view.pairs.map { pair -> [String: Any] in
                    if let hunk = pair.hunk { return ["hunk": hunk] }
                    return [
                        "left": pair.before?.text ?? "", "leftClass": pair.before.map { Self.lineClass($0.kind) } ?? "empty",
                        "right": pair.after?.text ?? "", "rightClass": pair.after.map { Self.lineClass($0.kind) } ?? "empty",
                    ]
                }
                entry["hasSplit"] = !pairs.isEmpty
                entry["split"] = pairs
            } else {
                let lines = view.lines.filter { $0.kind != .header }.map { line -> [String: Any] in
                    let (sign, label): (String, String) = switch line.kind {
                    case .added: ("+", "added")
                    case .removed: ("−", "removed")
                    case .hunk: ("@", "position")
                    default: ("", "unchanged")
                    }
                    return ["class": Self.lineClass(line.kind), "sign": sign, "label": label, "text": line.text]
                }
                entry["hasInline"] = !lines.isEmpty
                entry["inline"] = lines
            }
        }
        return entry
    }

    private static func lineClass(_ kind: DiffView.Kind) -> String {
        switch kind {
        case .added: "add"
        case .removed: "del"
        case .hunk: "hunk"
        case .context, .header: "ctx"
        }
    }

    static func kindText(_ kind: ChangeRecord.Kind) -> String {
        switch kind {
        case .item: "New item"
        case .change: "Changed"
        case .failing: "Started failing"
        case .recovered: "Recovered"
        case .moved: "Moved"
        }
    }

    // MARK: Outputs

    /// The deliveries the page lists at most.
    static let deliveriesShown = 500

    func outputs(_ outbox: DashboardOutbox, frame: Frame) -> String {
        var context = common(frame, page: "outputs")
        var byOutput: [String: (pending: Int, failing: Int, givenUp: Int)] = [:]
        for delivery in outbox.pending {
            var counts = byOutput[delivery.output] ?? (0, 0, 0)
            if delivery.givenUpAt != nil {
                counts.givenUp += 1
            } else if delivery.attempts > 0 {
                counts.failing += 1
            } else {
                counts.pending += 1
            }
            byOutput[delivery.output] = counts
        }
        context["outputs"] = outbox.outputs.map { output -> [String: Any] in
            let counts = byOutput[output.name] ?? (0, 0, 0)
            var entry: [String: Any] = [
                "name": output.name, "type": output.type, "delivered": outbox.delivered[output.name] ?? 0,
                "pending": counts.pending, "failing": counts.failing, "givenUp": counts.givenUp, "anyGivenUp": counts.givenUp > 0,
                "retryAction": false,
                "held": outbox.holds[output.name].map { "until \(DashboardText.absolute($0.notBefore)): \(TerminalText.safe($0.reason, maximumLength: 300))" } ?? "—",
            ]
            if !readOnly, counts.givenUp > 0 { entry["retryAction"] = "/outputs/" + DashboardText.component(output.name) + "/retry" }
            return entry
        }
        // Those that need a look first: given up, then failing, then waiting.
        let listed = outbox.pending.sorted { rank($0) != rank($1) ? rank($0) < rank($1) : $0.row < $1.row }
        context["deliveries"] = listed.prefix(Self.deliveriesShown).map { delivery -> [String: Any] in
            let fields = delivery.delivery.fields
            let what = delivery.delivery.kind == .item ? (fields["title"] ?? fields["link"] ?? "an item") : delivery.delivery.kind.rawValue
            let state: String
            if let givenUp = delivery.givenUpAt {
                state = "given up \(DashboardText.relative(givenUp, now: frame.now))"
            } else if delivery.attempts > 0 {
                state = "next attempt \(DashboardText.relative(delivery.nextAttemptAt, now: frame.now))"
            } else {
                state = "waiting"
            }
            return [
                "output": delivery.output, "source": delivery.delivery.source, "sourceHref": DashboardText.sourcePath(delivery.delivery.source),
                "what": TerminalText.safe(what, maximumLength: 200), "attempts": delivery.attempts, "state": state,
                "error": delivery.lastError.map { TerminalText.safe($0, maximumLength: 300) } ?? "", "class": delivery.givenUpAt != nil ? "failing" : "",
            ]
        }
        context["hasDeliveries"] = !listed.isEmpty
        if listed.count > Self.deliveriesShown { context["more"] = listed.count - Self.deliveriesShown }
        return render("outputs", context)
    }

    private func rank(_ delivery: PendingDelivery) -> Int {
        delivery.givenUpAt != nil ? 0 : delivery.attempts > 0 ? 1 : 2
    }

    func login(failed: Bool, frame: Frame) -> String {
        var context = common(frame, page: "login")
        context["failed"] = failed
        return render("login", context)
    }

    func notFound(_ message: String, frame: Frame) -> String {
        var context = common(frame, page: "notFound")
        context["message"] = message
        return render("notFound", context)
    }

    // MARK: Rendering

    private func common(_ frame: Frame, page: String) -> [String: Any] {
        var context: [String: Any] = [
            "title": frame.title, "now": DashboardText.time(frame.now, now: frame.now) ?? [:], "version": FetchRunVersion.current,
            "csrf": frame.csrf, "onSources": page == "sources" || page == "source", "onOutputs": page == "outputs",
        ]
        if let notice = frame.notice { context["notice"] = notice }
        return context
    }

    private func render(_ template: String, _ context: [String: Any]) -> String {
        library.render(context, withTemplate: template) ?? ""
    }
}

/// What the outbox holds, for the dashboard's outputs page.
package struct DashboardOutbox: Sendable {
    /// Every configured output: name and type.
    package var outputs: [(name: String, type: String)]
    /// Deliveries not yet made, given-up ones among them.
    package var pending: [PendingDelivery]
    package var delivered: [String: Int]
    package var holds: [String: OutputHold]

    package init(outputs: [(name: String, type: String)], pending: [PendingDelivery], delivered: [String: Int], holds: [String: OutputHold]) {
        self.outputs = outputs
        self.pending = pending
        self.delivered = delivered
        self.holds = holds
    }
}
