import Foundation
import Testing
import TestSupport
import FixtureServer
@testable import FetchRunKit

@Suite struct HTTPClientTests {
    let server: FixtureServer
    let client = CurlHTTPClient.started()

    init() throws {
        server = try FixtureServer()
    }

    func get(_ path: String, headers: [(name: String, value: String)] = [], within: Duration = .seconds(10), maxBytes: Int = HTTPRequest.defaultMaxBodyBytes) async throws -> HTTPResponse {
        try await client.execute(HTTPRequest(url: server.url(path), headers: headers, deadline: .now + within, maxBodyBytes: maxBytes))
    }

    func httpError(_ path: String, within: Duration = .seconds(10)) async -> HTTPError? {
        do {
            _ = try await get(path, within: within)
            return nil
        } catch {
            return error as? HTTPError
        }
    }

    @Test func getsABodyWithHeadersAndAUserAgent() async throws {
        let response = try await get("/feed/3.xml")
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "application/rss+xml; charset=utf-8")
        #expect(response.charset == "utf-8")
        #expect(String(decoding: response.body, as: UTF8.self).contains("Fixture Technology News 3"))
        let request = try #require(server.requests(to: "/feed/3.xml").first)
        #expect(request.headers["user-agent"]?.hasPrefix("fetchrun/") == true)
        #expect(request.headers["accept-encoding"]?.contains("gzip") == true)
        #expect(request.headers["accept-encoding"]?.contains("br") == true)
    }

    @Test func decodesGzipAndBrotli() async throws {
        let plain = try await get("/feed/5.xml").body
        #expect(try await get("/gzip/5.xml").body == plain)
        #expect(try await get("/brotli/5.xml").body == plain)
    }

    @Test func followsRedirectsWithinTheCap() async throws {
        let response = try await get("/redirect/3")
        #expect(response.status == 200)
        #expect(response.redirectCount == 3)
        #expect(response.effectiveURL == server.url("/feed/1.xml"))
        #expect(await httpError("/redirect/9")?.kind == .redirect)
        #expect(await httpError("/redirect-loop")?.kind == .redirect)
    }

    @Test func refusesRedirectsAwayFromHTTP() async throws {
        let error = await httpError("/redirect-to-file")
        #expect(error?.kind == .redirect)
    }

    @Test func refusesFileURLsUnlessAllowed() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-\(UUID().uuidString).xml")
        try Data("<rss/>".utf8).write(to: file)
        await #expect(throws: HTTPError.self) {
            _ = try await client.execute(HTTPRequest(url: file.absoluteString, deadline: .now + .seconds(5)))
        }
        let allowed = try await client.execute(HTTPRequest(url: file.absoluteString, deadline: .now + .seconds(5), allowsFileURL: true))
        #expect(allowed.body == Data("<rss/>".utf8))
        #expect(allowed.status == 0 && allowed.isSuccess)
    }

    @Test func capsTheDecompressedBody() async throws {
        #expect(await httpError("/huge")?.kind == .bodyTooLarge)
        #expect(await httpError("/huge?length=1")?.kind == .bodyTooLarge)
        #expect(await httpError("/gzip-bomb")?.kind == .bodyTooLarge)
        await #expect(throws: HTTPError.self) { _ = try await get("/feed/1.xml", maxBytes: 1024) }
    }

    @Test func statusErrorsAreResponses() async throws {
        let response = try await get("/status/429?retry-after=120")
        #expect(response.status == 429)
        #expect(response.retryAfter() == .seconds(120))
        #expect(!response.isSuccess)
        // A client of its own: the 429 above holds this client's every request to the host for 120 s.
        let dated = try await CurlHTTPClient.started().execute(HTTPRequest(url: server.url("/status/503?retry-after=Wed,%2021%20Oct%202015%2007:28:00%20GMT"), deadline: .now + .seconds(10)))
        #expect(dated.retryAfter(now: Date(timeIntervalSince1970: 1_445_412_420)) == .seconds(60))
    }

    @Test func connectionResetIsANetworkError() async throws {
        #expect(await httpError("/reset")?.kind == .network)
    }

    @Test func cancellationRemovesAHangingTransferAtOnce() async throws {
        let start = ContinuousClock.now
        let task = Task { try await get("/hang", within: .seconds(120)) }
        try await waitUntil("the hang at the server") { !server.requests(to: "/hang").isEmpty }
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        // Far from the 120 s it would otherwise wait, and loose enough for a loaded machine.
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    @Test func cancellationBeforeTheTransferStartsIsHonoured() async throws {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await get("/feed/1.xml")
        }
        await #expect(throws: CancellationError.self) { _ = try await task.value }
    }

    @Test func curlsOwnTimeoutStopsAHangInsideTheDeadline() async throws {
        let start = ContinuousClock.now
        #expect(await httpError("/hang", within: .milliseconds(300))?.kind == .network)
        // The hang never ends by itself: any bound shows curl's time-out at work.
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    @Test func sendsHeadersAsGiven() async throws {
        _ = try await get("/conditional/2.xml", headers: [("If-None-Match", "\"feed-2.xml-v1\""), ("X-Token", "abc def")])
        let request = try #require(server.requests(to: "/conditional/2.xml").last)
        #expect(request.headers["if-none-match"] == "\"feed-2.xml-v1\"")
        #expect(request.headers["x-token"] == "abc def")
    }

    @Test func aHangingResponseDoesNotHoldBackOtherRequestsToTheHost() async throws {
        let hanging = Task { try await get("/hang", within: .seconds(120)) }
        defer { hanging.cancel() }
        try await waitUntil("the hang at the server") { !server.requests(to: "/hang").isEmpty }
        let start = ContinuousClock.now
        for number in 0..<3 { #expect(try await get("/feed/\(number).xml", within: .seconds(60)).status == 200) }
        // Held back, they would wait for the hang's 120 s; the bound is loose for a loaded machine.
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    @Test func manyConcurrentRequestsAllComplete() async throws {
        let bodies = try await withThrowingTaskGroup(of: Int.self) { group in
            for number in 0..<200 {
                group.addTask { try await get("/feed/\(number).xml?latency=20ms").body.count }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(bodies.count == 200)
        #expect(bodies.allSatisfy { $0 > 10_000 })
    }
}
