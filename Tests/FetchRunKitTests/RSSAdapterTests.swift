import Foundation
import Testing
import FixtureServer
@testable import FetchRunKit

@Suite struct RSSAdapterTests {
    func problems(_ yaml: String, environment: [String: String] = [:]) -> [String] {
        do {
            _ = try ConfigLoader(environment: environment).load(text: "sources:\n  - name: feed\n    type: rss\n" + yaml, file: "s.yaml", directory: "/srv/config")
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    func adapter(_ yaml: String, environment: [String: String] = [:]) throws -> RSSAdapter {
        let config = try ConfigLoader(environment: environment).load(text: "sources:\n  - name: feed\n    type: rss\n" + yaml, file: "s.yaml", directory: "/srv/config")
        return try #require(config.sources[0].adapter as? RSSAdapter)
    }

    @Test func optionsAreChecked() {
        #expect(problems("") == ["s.yaml:2:5: source 'feed': missing 'url' (the feed's http(s) URL, or file:path)"])
        #expect(problems("    url: ftp://example.org/feed\n") == ["s.yaml:4:10: source 'feed': 'url': only http://, https:// and file: URLs can be fetched"])
        #expect(problems("    url: https://example.org/\n    max_bytes: 12\n").first?.contains("must be between 1024") == true)
        #expect(problems("    url: https://example.org/\n    headers: [a]\n").first?.contains("'headers' must be a mapping") == true)
        #expect(problems("    url: https://example.org/\n    headers: { \"Bad Name\": x }\n").first?.contains("header 'Bad Name'") == true)
        #expect(problems("    url: https://example.org/\n    header: { A: b }\n").first?.contains("did you mean 'headers'") == true)
    }

    @Test func fileURLsResolveAgainstTheConfigFolder() throws {
        #expect(try adapter("    url: file:feeds/tech.xml\n").fetcher.url == "file:///srv/config/feeds/tech.xml")
        #expect(try adapter("    url: file:///var/feeds/tech.xml\n").fetcher.url == "file:///var/feeds/tech.xml")
        #expect(try adapter("    url: https://example.org/rss\n").fetcher.url == "https://example.org/rss")
    }

    @Test func secretsStayOutOfTheDisplayedURL() throws {
        let rss = try adapter("    url: https://example.org/rss?token=${TOKEN}\n    headers: { Authorization: \"Bearer ${TOKEN}\" }\n", environment: ["TOKEN": "s3cret"])
        #expect(rss.fetcher.url == "https://example.org/rss?token=s3cret")
        #expect(rss.fetcher.displayURL == "https://example.org/rss?token=${TOKEN}")
        #expect(rss.fetcher.headers.map(\.value) == ["Bearer s3cret"])
    }

    @Test func conditionalGetTurnsA304IntoNoData() async throws {
        let server = try FixtureServer()
        let state = try temporaryStateDirectory()
        let source = try ConfigLoader(environment: [:]).load(
            text: "sources:\n  - name: cond\n    type: rss\n    url: \(server.url("/conditional/9.xml"))\n", file: "s.yaml", directory: "/"
        ).sources[0]
        let http = CurlHTTPClient()
        let pipeline = try await pipeline(in: state, http: http)
        let (first, second) = await withRunning(http) { (await pipeline.fetch(source).report, await pipeline.fetch(source).report) }
        #expect(first.outcome.newItems.count == FeedGenerator.feed(number: 9).items.count)
        guard case .loaded(let snapshot) = state.snapshots.load(source: "cond") else { Issue.record("no snapshot"); return }
        #expect(snapshot.validators == HTTPValidators(etag: "\"feed-9.xml-v1\"", lastModified: "Wed, 21 Oct 2026 07:28:00 GMT"))

        #expect(second.outcome == .noData)
        #expect(second.totalItems == first.totalItems)
        let sent = try #require(server.requests(to: "/conditional/9.xml").last)
        #expect(sent.headers["if-none-match"] == "\"feed-9.xml-v1\"")
        #expect(sent.headers["if-modified-since"] == "Wed, 21 Oct 2026 07:28:00 GMT")
    }

    @Test func failuresSayWhatKindTheyAre() async throws {
        let server = try FixtureServer()
        let state = try temporaryStateDirectory()
        // A deadline far from anything these answers need, for a machine under the whole suite's
        // load; a client each, since a 429's Retry-After holds its whole host back.
        func outcome(_ path: String, deadline: String = "60s") async throws -> FetchFailure? {
            let source = try ConfigLoader(environment: [:]).load(
                text: "sources:\n  - name: f\n    type: rss\n    deadline: \(deadline)\n    url: \"\(server.url(path))\"\n", file: "s.yaml", directory: "/"
            ).sources[0]
            let http = CurlHTTPClient()
            let pipeline = try await pipeline(in: state, dryRun: true, http: http)
            return await withRunning(http) { await pipeline.fetch(source).report.outcome.failure }
        }
        #expect(try await outcome("/status/404")?.status == 404)
        #expect(try await outcome("/status/429?retry-after=30")?.retryAfter == .seconds(30))
        #expect(try await outcome("/not-a-feed")?.kind == .parse)
        #expect(try await outcome("/reset")?.kind == .network)
        #expect(try await outcome("/hang", deadline: "300ms")?.kind == .deadlineExceeded)
    }
}
