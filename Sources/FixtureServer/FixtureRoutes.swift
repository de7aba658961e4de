import Foundation

/// What the fixture server serves, by path. Every route also takes `?latency=100ms`.
///
/// | path | serves |
/// |---|---|
/// | `/feed/<n>.xml` | generated RSS 2.0 feed number n (`?items=`, `?bytes=` to shape it; `?cache-control=`, `?expires=` add those headers) |
/// | `/atom/<n>.xml` | the same feed as Atom 1.0 |
/// | `/rolling/<n>.xml` | feed n, 20 items, one newer every `?every=` (10s by default) and the oldest gone: a source with new data at every period, for soak runs |
/// | `/page/<n>.html` | generated web page number n (a `#product` block, a list of stories; ``PageGenerator``; `?bytes=` to size it, 50 KB by default) |
/// | `/conditional-page/<n>.html` | page n with ETag and Last-Modified; 304 when the client sends them back |
/// | `/conditional/<n>.xml` | feed n with ETag and Last-Modified; 304 when the client sends them back (`?cache-control=` adds that header) |
/// | `/gzip/<n>.xml`, `/brotli/<n>.xml` | feed n compressed (when the client accepts it) |
/// | `/enclosures/<name>` | a ``FixtureEnclosure`` registered with ``FixtureServer/serveEnclosure(_:_:)`` (ranges, ETag, pacing, stalls); unregistered names are served with `?size=` bytes |
/// | `/files/<name>` | a body registered with ``FixtureServer/serve(_:body:contentType:)`` |
/// | `/redirect/<k>` | k redirects, then feed 1; `/redirect-loop`; `/redirect-to-file`; `/redirect-to/<host>/<path>` redirects to `<path>` on this port under the name `<host>` (another origin) |
/// | `/moved/<n>.xml` | a permanent redirect (308; `?status=301`) to `/feed/<n>.xml` |
/// | `/status/<code>` | that status; `?retry-after=` adds the header |
/// | `/hang`, `/drip`, `/reset` | never answers; trickles a feed a byte at a time; resets the connection |
/// | `/huge` | 64 MiB of chunked body, no length announced (`?length` announces it) |
/// | `/gzip-bomb` | a small gzip body that inflates to 64 MiB |
/// | any path, `PUT` | 200 with `{"event_id": …}`: a Matrix homeserver taking a message (recorded like a POST) |
/// | any path, `POST` | 200: a webhook receiver (the body is in ``FixtureServer/Request/body``); `/huge-receiver` answers with 64 MiB; `/picky-receiver/<word>` answers 422 to a body that holds `<word>` |
/// | `/stats` | `{"requests": N}`: requests served so far, this one not counted (benchmarks check work done) |
/// | `/long-header` | feed 1 behind a header line of `?bytes=` bytes (default 1 MiB) |
/// | `/header-flood` | feed 1 behind `?lines=` lines (default 10,000) of `<?name=>: a` (`Cache-Control` by default), then `Cache-Control: max-age=600` |
/// | `/js/<name>` | pages whose content a script builds, and pages that misbehave in a browser (``ScriptedPages``) |
/// | `/malformed`, `/xxe`, `/billion-laughs`, `/wrong-charset`, `/not-a-feed` | hostile documents |
struct FixtureRoutes: Sendable {
    let feedCount: Int
    /// Fixed validators, so a second request can be answered with 304.
    static let lastModified = "Wed, 21 Oct 2026 07:28:00 GMT"

    func response(for request: FixtureServer.Request, server: FixtureServer) -> FixtureServer.Response {
        let parts = request.path.split(separator: "/").map(String.init)
        let rss = [("Content-Type", "application/rss+xml; charset=utf-8")]
        // A webhook receiver: any POST is taken (and recorded with its body).
        // `/huge-receiver` takes it and answers with 64 MiB of body (no length announced), as a
        // receiver that echoes or streams would.
        if request.method == "POST", parts.first == "huge-receiver" {
            return .stream(headers: [("Content-Type", "text/plain")], chunk: [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024), chunks: 1024)
        }
        // A receiver that refuses some deliveries for what they carry, and takes the others.
        if request.method == "POST", parts.first == "picky-receiver", parts.count > 1,
           String(decoding: request.body, as: UTF8.self).contains(parts[1]) {
            return .full(status: 422, headers: [("Content-Type", "text/plain")], body: Array("refused\n".utf8))
        }
        if request.method == "POST" {
            return .full(status: 200, headers: [("Content-Type", "text/plain")], body: Array("ok\n".utf8))
        }
        // A Matrix homeserver takes a message by PUT and answers with the event's id.
        if request.method == "PUT" {
            return .full(status: 200, headers: [("Content-Type", "application/json")], body: Array(#"{"event_id": "$fixture"}"#.utf8))
        }
        switch parts.first {
        case "feed":
            var headers = rss
            if let cacheControl = request.query["cache-control"] { headers.append(("Cache-Control", cacheControl)) }
            if let expires = request.query["expires"] { headers.append(("Expires", expires)) }
            return .full(status: 200, headers: headers, body: feed(parts, request, server: server))
        case "moved":
            let status = request.query["status"].flatMap(Int.init) ?? 308
            return .full(status: status, headers: [("Location", "/feed/\(parts.count > 1 ? parts[1] : "1.xml")")], body: [])
        case "atom":
            guard let number = number(parts) else { return notFound }
            let body = server.generated("atom \(number) \(request.query["items"] ?? "") \(request.query["bytes"] ?? "")") {
                Array(FeedGenerator.atom(FeedGenerator.feed(number: number, items: request.query["items"].flatMap(Int.init), targetBytes: request.query["bytes"].flatMap(Int.init))).utf8)
            }
            return .full(status: 200, headers: [("Content-Type", "application/atom+xml")], body: body)
        case "rolling":
            guard let number = number(parts) else { return notFound }
            let period = max(0.001, request.query["every"].flatMap(Self.duration) ?? 10)
            let turn = Int(Date().timeIntervalSince1970 / period)
            // Made at every request, not kept: a new body each period for as long as a soak runs
            // would be the server's memory growing, not the client's.
            var feed = FeedGenerator.feed(number: number, items: 20, targetBytes: 12_000)
            for index in feed.items.indices {
                let serial = turn - index
                feed.items[index].guid = "urn:fixture:rolling:\(number):\(serial)"
                feed.items[index].link += "-\(serial)"
                feed.items[index].published = Date(timeIntervalSince1970: Double(serial) * period)
            }
            return .full(status: 200, headers: rss, body: Array(FeedGenerator.rss(feed).utf8))
        case "page", "conditional-page":
            guard let number = number(parts) else { return notFound }
            let bytes = min(request.query["bytes"].flatMap(Int.init) ?? 50_000, 64_000_000)
            let html = [("Content-Type", "text/html; charset=utf-8")]
            var validators: [(String, String)] = []
            if parts[0] == "conditional-page" {
                let etag = "\"page-\(number)-v1\""
                validators = [("ETag", etag), ("Last-Modified", Self.lastModified)]
                if request.headers["if-none-match"] == etag || request.headers["if-modified-since"] == Self.lastModified {
                    return .full(status: 304, headers: validators, body: [])
                }
            }
            let body = server.generated("page \(number) \(bytes)") { Array(PageGenerator.page(number: number, targetBytes: bytes).utf8) }
            return .full(status: 200, headers: html + validators, body: body)
        case "conditional":
            let etag = "\"feed-\(parts.count > 1 ? parts[1] : "")-v1\""
            let validators = [("ETag", etag), ("Last-Modified", Self.lastModified)]
            if request.headers["if-none-match"] == etag || request.headers["if-modified-since"] == Self.lastModified {
                return .full(status: 304, headers: validators, body: [])
            }
            let cacheControl = request.query["cache-control"].map { [("Cache-Control", $0)] } ?? []
            return .full(status: 200, headers: rss + validators + cacheControl, body: feed(parts, request, server: server))
        case "gzip", "brotli":
            let encoding = parts[0] == "gzip" ? "gzip" : "br"
            let body = feed(parts, request, server: server)
            guard request.headers["accept-encoding"]?.contains(encoding) == true else {
                return .full(status: 200, headers: rss, body: body)
            }
            let compressed = encoding == "gzip" ? Compression.gzip(body) : Compression.brotli(body)
            return .full(status: 200, headers: rss + [("Content-Encoding", encoding), ("Vary", "Accept-Encoding")], body: compressed)
        case "files":
            guard parts.count == 2, let file = server.file(parts[1]) else { return notFound }
            return .full(status: 200, headers: [("Content-Type", file.contentType)], body: file.body)
        case "enclosures":
            guard parts.count == 2 else { return notFound }
            let enclosure = server.enclosure(parts[1]) ?? FixtureEnclosure(size: request.query["size"].flatMap(Int.init) ?? 1 << 20)
            return enclosure.response(name: parts[1], request: request, server: server)
        case "redirect":
            let remaining = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            let next = remaining <= 1 ? "/feed/1.xml" : "/redirect/\(remaining - 1)"
            return .full(status: 302, headers: [("Location", next)], body: [])
        case "redirect-to":
            // `/redirect-to/<host>/<path>`: this server under another name, another origin.
            guard parts.count > 2 else { return notFound }
            return .full(status: 302, headers: [("Location", "http://\(parts[1]):\(server.port)/" + parts[2...].joined(separator: "/"))], body: [])
        case "redirect-loop":
            return .full(status: 302, headers: [("Location", "/redirect-loop")], body: [])
        case "redirect-to-file":
            return .full(status: 302, headers: [("Location", "file:///etc/passwd")], body: [])
        case "status":
            let code = parts.count > 1 ? Int(parts[1]) ?? 500 : 500
            var headers = [("Content-Type", "text/html")]
            if let retryAfter = request.query["retry-after"] { headers.append(("Retry-After", retryAfter)) }
            return .full(status: code, headers: headers, body: Array("<html><body>status \(code)</body></html>".utf8))
        case "hang":
            return .hang
        case "drip":
            let interval = request.query["interval"].flatMap(Self.duration) ?? 0.1
            return .drip(headers: rss, body: Array(FeedGenerator.rss(FeedGenerator.feed(number: 1, items: 3)).utf8), interval: .milliseconds(Int(interval * 1000)))
        case "reset":
            return .reset
        case "long-header":
            let length = request.query["bytes"].flatMap(Int.init) ?? 1 << 20
            return .full(status: 200, headers: rss + [("X-Padding", String(repeating: "x", count: length))], body: feed(["feed", "1"], request, server: server))
        case "header-flood":
            // Many lines of one name, then the one that matters: what a client that joins
            // repeated lines must read whole, and quickly (curl accepts 300 KB of them).
            let lines = request.query["lines"].flatMap(Int.init) ?? 10_000
            let name = request.query["name"] ?? "Cache-Control"
            let flood = Array(repeating: (name, "a"), count: max(0, lines))
            return .full(status: 200, headers: rss + flood + [("Cache-Control", "max-age=600")], body: feed(["feed", "1"], request, server: server))
        case "huge":
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
            if request.query["length"] != nil {
                // Made once, and sent without copying it behind a header: 64 MiB per request
                // cost more than the client's work under a busy test run.
                let body = server.generated("huge") { [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024 * 1024) }
                return .paced(status: 200, headers: rss, body: body, from: 0, bytesPerSecond: nil, stallAt: nil)
            }
            return .stream(headers: rss, chunk: chunk, chunks: 1024)
        case "gzip-bomb":
            return .full(status: 200, headers: rss + [("Content-Encoding", "gzip")], body: Compression.gzipBomb)
        case "malformed":
            return .full(status: 200, headers: rss, body: Array(HostileDocuments.malformed.utf8))
        case "xxe":
            return .full(status: 200, headers: rss, body: Array(HostileDocuments.externalEntity.utf8))
        case "billion-laughs":
            return .full(status: 200, headers: rss, body: Array(HostileDocuments.billionLaughs.utf8))
        case "wrong-charset":
            return .full(status: 200, headers: rss, body: HostileDocuments.latin1DeclaredAsUTF8)
        case "stats":
            let served = server.requests.filter { $0.path != "/stats" }.count
            return .full(status: 200, headers: [("Content-Type", "application/json")], body: Array("{\"requests\": \(served)}".utf8))
        case "js":
            return ScriptedPages.response(parts.count > 1 ? parts[1] : "", request, port: server.port)
        case "not-a-feed":
            return .full(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html><head><title>Hi</title></head><body>Not a feed</body></html>".utf8))
        default:
            return notFound
        }
    }

    private var notFound: FixtureServer.Response {
        .full(status: 404, headers: [("Content-Type", "text/plain")], body: Array("not found".utf8))
    }

    private func number(_ parts: [String]) -> Int? {
        guard parts.count > 1 else { return nil }
        return Int(parts[1].split(separator: ".").first ?? "")
    }

    private func feed(_ parts: [String], _ request: FixtureServer.Request, server: FixtureServer) -> [UInt8] {
        let number = number(parts) ?? 1
        return server.generated("rss \(number) \(request.query["items"] ?? "") \(request.query["bytes"] ?? "")") {
            let feed = FeedGenerator.feed(number: number, items: request.query["items"].flatMap(Int.init), targetBytes: request.query["bytes"].flatMap(Int.init))
            return Array(FeedGenerator.rss(feed).utf8)
        }
    }

    /// `100ms`, `2s` or a plain number of seconds.
    static func duration(_ text: String) -> TimeInterval? {
        if text.hasSuffix("ms") { return Double(text.dropLast(2)).map { $0 / 1000 } }
        if text.hasSuffix("s") { return Double(text.dropLast()) }
        return Double(text)
    }
}
