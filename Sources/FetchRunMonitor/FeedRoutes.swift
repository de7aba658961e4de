import FetchRunKit
import Foundation
import Hummingbird
import HTTPTypes
import NIOCore

/// `/feeds/*` on the `--listen` endpoint: the history of changes as Atom or JSON Feed, for
/// every source, one source or one tag — with an ETag and Last-Modified, answered with 304 when
/// the reader has it already.
///
/// - `GET /feeds/all.atom`, `/feeds/all.json`
/// - `GET /feeds/sources/NAME.atom|json`: one source (404 when the config has none by that name)
/// - `GET /feeds/tags/TAG.atom|json`: the sources with that tag (404 when none has it)
///
/// Each lists the newest ``entries`` changes, or `?entries=N` of them (1–``maximumEntries``).
/// A store that does not answer costs a reader ``storeLimit`` and a 503, never a hang.
struct FeedRoutes: Sendable {
    /// The newest changes a feed lists.
    static let entries = 50
    static let maximumEntries = 1_000
    static let storeLimit: Duration = .seconds(10)

    let history: @Sendable (HistoryQuery) async throws -> [ChangeRecord]
    /// The sources `/feeds/sources/` and `/feeds/tags/` may name, with their tags.
    let config: ServedConfig
    /// The limit's clock.
    let clock: any FetchClock

    func add(to router: Router<MonitorRequestContext>) {
        router.get("/feeds/all.atom") { request, _ in await feed(request, scope: .all, format: .atom) }
        router.get("/feeds/all.json") { request, _ in await feed(request, scope: .all, format: .json) }
        router.get("/feeds/sources/{file}") { request, context in
            guard let (name, format) = Self.file(context.parameters.get("file")), config.snapshot.tags[name] != nil else { return Self.notFound() }
            return await feed(request, scope: .source(name), format: format)
        }
        router.get("/feeds/tags/{file}") { request, context in
            guard let (tag, format) = Self.file(context.parameters.get("file")), config.snapshot.tags.values.contains(where: { $0.contains(tag) }) else { return Self.notFound() }
            return await feed(request, scope: .tag(tag), format: format)
        }
    }

    enum Scope {
        case all, source(String), tag(String)
    }

    /// `NAME.atom` → (NAME, .atom); anything else is `nil`.
    static func file(_ text: String?) -> (String, ChangeFeed.Format)? {
        guard let text, let dot = text.lastIndex(of: ".") else { return nil }
        let name = String(text[..<dot])
        guard !name.isEmpty, let format = ChangeFeed.Format(rawValue: String(text[text.index(after: dot)...])) else { return nil }
        return (name, format)
    }

    private func feed(_ request: Request, scope: Scope, format: ChangeFeed.Format) async -> Response {
        let (query, feed): (HistoryQuery, ChangeFeed)
        let limit = request.uri.queryParameters["entries"].flatMap { Int($0) }.map { min(max($0, 1), Self.maximumEntries) } ?? Self.entries
        switch scope {
        case .all:
            (query, feed) = (HistoryQuery(limit: limit), ChangeFeed(title: "fetchrun: all changes", id: "urn:fetchrun:feed:all"))
        case .source(let name):
            (query, feed) = (HistoryQuery(sources: [name], limit: limit), ChangeFeed(title: "fetchrun: \(name)", id: "urn:fetchrun:feed:source:\(name)"))
        case .tag(let tag):
            let names = config.snapshot.tags.filter { $0.value.contains(tag) }.keys.sorted()
            (query, feed) = (HistoryQuery(sources: names, limit: limit), ChangeFeed(title: "fetchrun: #\(tag)", id: "urn:fetchrun:feed:tag:\(tag)"))
        }
        var served = feed
        // The address the reader used, for the feed's link to itself; only a plausible one.
        if let authority = request.head.authority, authority.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "<") }) {
            served.selfURL = "http://\(authority)\(request.uri.path)"
        }
        let records: [ChangeRecord]
        do {
            let history = self.history
            records = try await withDeadline(clock.now + Self.storeLimit, on: clock) { try await history(query) }
        } catch {
            return MonitorEndpoint.text("the history could not be read: \(TerminalText.safe("\(error)"))\n", status: .serviceUnavailable)
        }
        let body = served.render(records, as: format, fallback: Date(timeIntervalSince1970: 0))
        let tag = ChangeFeed.entityTag(of: body)
        var headers = HTTPFields()
        headers[.eTag] = tag
        headers[.cacheControl] = "no-cache"
        let newest = records.first?.at
        if let newest { headers[.lastModified] = Self.httpDate(newest) }
        if let asked = request.headers[.ifNoneMatch] {
            if asked.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "W/", with: "") == tag }) {
                return Response(status: .notModified, headers: headers)
            }
        } else if let since = request.headers[.ifModifiedSince].flatMap(DateParser.parse), let newest, Int(newest.timeIntervalSince1970) <= Int(since.timeIntervalSince1970) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = format.contentType
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// An HTTP date: `Sun, 29 Nov 2026 10:00:00 GMT`.
    static func httpDate(_ date: Date) -> String {
        CalendarText.rfc822String(from: date).replacingOccurrences(of: "+0000", with: "GMT")
    }

    static func notFound() -> Response {
        MonitorEndpoint.text("no such feed\n", status: .notFound)
    }
}
