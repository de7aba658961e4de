import Foundation
import Testing
import TestSupport
import FixtureServer

/// ntfy, Gotify, Slack and Discord outputs through the built binary against the fixture server
/// as each service's receiver: the request each service documents (path, auth, JSON shape),
/// markup escaped, length limits (truncate and split), digests, 429 with Retry-After, 401.
@Suite struct NotificationTests {
    static let hostileTitle = "<b>*Big* _news_</b> @everyone & <!channel> [x](https://evil.example) `code`"

    /// An RSS feed of `ids`, newest first; each item's summary `summary` (escaped as RSS does).
    static func feed(_ ids: [String], summary: String = "A short summary.") -> [UInt8] {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        }
        var xml = #"<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>"#
        for id in ids {
            let title = id == "hostile" ? hostileTitle : "Story \(id)"
            xml += "<item><title>\(escape(title))</title><link>https://news.example/\(id)</link><guid>\(id)</guid><description>\(escape(summary))</description></item>"
        }
        return Array((xml + "</channel></rss>").utf8)
    }

    func posted(_ server: FixtureServer, _ path: String) -> [[String: Any]] {
        server.requests(to: path).filter { $0.method == "POST" }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
    }

    @Test func eachServiceGetsItsOwnRequestWithTheTitleEscapedAndTheLimitKept() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: phone, type: ntfy, url: "\(server.url("/ntfy/alerts"))", token: "${NTFY_TOKEN}", priority: high, tags: [news] }
              - { name: gotify, type: gotify, url: "\(server.url("/gotify"))", token: "${GOTIFY_TOKEN}", priority: 7 }
              - { name: slack, type: slack, url: "\(server.url("/slack/T0/B0/secret"))" }
              - { name: discord, type: discord, url: "\(server.url("/discord/1/token"))" }
              - { name: discord-split, type: discord, url: "\(server.url("/discord/2/token"))", overflow: split }
              - { name: telegram, type: telegram, api_url: "\(server.url("/tg"))", token: "${TG_TOKEN}", chat_id: "@news" }
              - { name: matrix, type: matrix, homeserver: "\(server.url(""))", token: "${MATRIX_TOKEN}", room: "!room:example.org", overflow: split }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        let environment = ["NTFY_TOKEN": "tk_ntfy_secret", "GOTIFY_TOKEN": "gotify-secret", "TG_TOKEN": "123456:tg-secret", "MATRIX_TOKEN": "syt_matrix_secret"]
        let long = (1...1000).map { "word\($0)" }.joined(separator: " ")  // 9,893 characters
        server.serve("news.xml", body: Self.feed(["a"], summary: long))
        #expect(try await fetchrun.run([], environment: environment).status == 0)
        server.serve("news.xml", body: Self.feed(["hostile", "a"], summary: long))
        let run = try await fetchrun.run([], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let listing = try await fetchrun.run(["outputs"], environment: environment).stdout
        for secret in environment.values { #expect(!run.stderr.contains(secret) && !listing.contains(secret), "\(secret)") }

        // ntfy: JSON to the server's root, the topic in the body, the token as a bearer.
        let ntfy = try #require(server.requests(to: "/ntfy/").first)
        #expect(ntfy.headers["authorization"] == "Bearer tk_ntfy_secret")
        let ntfyBody = try #require(posted(server, "/ntfy/").first)
        #expect(ntfyBody["topic"] as? String == "alerts" && ntfyBody["priority"] as? Int == 4 && ntfyBody["tags"] as? [String] == ["news"])
        #expect(ntfyBody["click"] as? String == "https://news.example/hostile")
        let ntfyMessage = try #require(ntfyBody["message"] as? String)
        #expect(ntfyMessage.hasPrefix(Self.hostileTitle + "\nhttps://news.example/hostile"), "\(ntfyMessage)")
        #expect(ntfyMessage.utf8.count <= 4096 && ntfyMessage.hasSuffix("…"), "\(ntfyMessage.utf8.count)")

        // Gotify: /message with the app token in X-Gotify-Key.
        let gotify = try #require(server.requests(to: "/gotify/message").first)
        #expect(gotify.headers["x-gotify-key"] == "gotify-secret")
        let gotifyBody = try #require(posted(server, "/gotify/message").first)
        #expect(gotifyBody["priority"] as? Int == 7 && (gotifyBody["message"] as? String)?.contains("word1000") == true)

        // Slack: mrkdwn with &, < and > escaped, so <!channel> is text, not a mention.
        let slack = try #require(posted(server, "/slack/T0/B0/secret").first?["text"] as? String)
        #expect(slack.hasPrefix("*<https://news.example/hostile|&lt;b&gt;*Big* _news_&lt;/b&gt; @everyone &amp; &lt;!channel&gt; [x](https://evil.example) `code`>*"), "\(slack)")
        #expect(!slack.contains("<!channel>"))

        // Discord: Markdown escaped, no mentions allowed, within 2,000 characters.
        let discord = try #require(posted(server, "/discord/1/token").first)
        let content = try #require(discord["content"] as? String)
        #expect(content.hasPrefix(#"**[\<b\>\*Big\* \_news\_\</b\> \@everyone & \<!channel\> \[x\]\(https://evil.example\) \`code\`](<https://news.example/hostile>)**"#), "\(content)")
        #expect((discord["allowed_mentions"] as? [String: Any])?["parse"] as? [String] == [])
        #expect(content.unicodeScalars.count <= 2000 && content.contains("…"))
        #expect(posted(server, "/discord/1/token").count == 1)

        // overflow: split: every word arrives, in order, over several messages of ≤ 2,000.
        let parts = posted(server, "/discord/2/token").compactMap { $0["content"] as? String }
        #expect(parts.count >= 5 && parts.allSatisfy { $0.unicodeScalars.count <= 2000 }, "\(parts.map(\.count))")
        let words = parts.joined(separator: " ").split(whereSeparator: { $0 == " " || $0 == "\n" }).filter { $0.hasPrefix("word") }
        #expect(words == (1...1000).map { "word\($0)"[...] }, "\(words.prefix(3))…\(words.suffix(3))")

        // Telegram: sendMessage under the bot's token, HTML escaped, within 4,096 characters.
        let telegram = try #require(posted(server, "/tg/bot123456:tg-secret/sendMessage").first)
        #expect(telegram["chat_id"] as? String == "@news" && telegram["parse_mode"] as? String == "HTML")
        let telegramText = try #require(telegram["text"] as? String)
        #expect(telegramText.hasPrefix(#"<b><a href="https://news.example/hostile">&lt;b&gt;*Big* _news_&lt;/b&gt; @everyone &amp; &lt;!channel&gt; [x](https://evil.example) `code`</a></b>"#), "\(telegramText)")
        #expect(telegramText.unicodeScalars.count <= 4096 && telegramText.contains("…"))

        // Matrix: PUT per part under a transaction id, the token as a bearer, HTML and text.
        let puts = server.requests.filter { $0.method == "PUT" }
        #expect(puts.count == 1, "\(puts.map(\.path))")  // 10,000 characters fit in one event
        let put = try #require(puts.first)
        #expect(put.path.hasPrefix("/_matrix/client/v3/rooms/%21room%3Aexample.org/send/m.room.message/fetchrun-") && put.path.hasSuffix("-0"), "\(put.path)")
        #expect(put.headers["authorization"] == "Bearer syt_matrix_secret")
        let event = try #require(try JSONSerialization.jsonObject(with: Data(put.body)) as? [String: Any])
        #expect(event["msgtype"] as? String == "m.notice" && event["format"] as? String == "org.matrix.custom.html")
        #expect((event["formatted_body"] as? String)?.hasPrefix(#"<b><a href="https://news.example/hostile">&lt;b&gt;"#) == true)
        #expect((event["body"] as? String)?.hasPrefix(Self.hostileTitle) == true, "\(event["body"] ?? "")")
    }

    @Test func aMatrixMessageSentAgainIsTheSameTransactionAndTelegramsWaitIsInItsAnswer() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: matrix, type: matrix, homeserver: "\(server.url(""))", token: "${MATRIX_TOKEN}", room: "!room:example.org" }
              - { name: telegram, type: telegram, api_url: "\(server.url("/tg"))", token: "${TG_TOKEN}", chat_id: "42" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        let environment = ["MATRIX_TOKEN": "syt_x", "TG_TOKEN": "1:tg"]
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([], environment: environment).status == 0)
        server.respond(to: "/_matrix/*", status: 502)
        server.respond(to: "/tg/bot1:tg/sendMessage", status: 429, body: Array(#"{"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 900", "parameters": {"retry_after": 900}}"#.utf8))
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        #expect(try await fetchrun.run([], environment: environment).status == 0)
        let listed = try events(try await fetchrun.run(["outputs", "--format", "json"], environment: environment).stdout)
        let telegram = try #require(listed.first { $0["output"] as? String == "telegram" })
        let next = try #require((telegram["next_attempt"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
        #expect(next.timeIntervalSinceNow > 800, "\(telegram)")

        server.respond(to: "/_matrix/*", status: nil)
        #expect(try await fetchrun.run([], environment: environment).status == 0)
        let paths = server.requests.filter { $0.method == "PUT" }.map(\.path)
        #expect(paths.count == 2 && paths[0] == paths[1], "\(paths)")
    }

    @Test func aDigestIsOneMessageWithACountAndTheRestSaidAsAndNMore() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: discord, type: discord, url: "\(server.url("/discord/digest"))", digest: true }
              - { name: slack, type: slack, url: "\(server.url("/slack/digest"))", digest: true }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["0"]))
        #expect(try await fetchrun.run([]).status == 0)
        server.serve("news.xml", body: Self.feed((0...50).map(String.init)))
        #expect(try await fetchrun.run([]).status == 0)
        let discord = posted(server, "/discord/digest").compactMap { $0["content"] as? String }
        #expect(discord.count == 1, "\(discord)")
        let message = try #require(discord.first)
        #expect(message.hasPrefix("**50 new items**\n• **[Story 1](<https://news.example/1>)** _\\(news\\)_"), "\(message)")
        #expect(message.unicodeScalars.count <= 2000)
        let more = try #require(message.split(separator: "\n").last)
        let listed = message.split(separator: "\n").count - 2
        #expect(more == "… and \(50 - listed) more" && listed > 10, "\(more)")
        // Slack's limit holds all 50.
        let slack = try #require(posted(server, "/slack/digest").first?["text"] as? String)
        #expect(slack.split(separator: "\n").count == 51 && !slack.contains("more"), "\(slack)")
    }

    @Test func aRateLimitedOutputWaitsAsAskedAndARefusedTokenIsSaidWithoutIt() async throws {
        let server = try FixtureServer()
        // Slack and Gotify on hosts of their own, as they are: a 429 with Retry-After holds
        // back every request to its host (the HTTP client's per-host backoff), not others'.
        let slackHost = try FixtureServer()
        let gotifyHost = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: discord, type: discord, url: "\(server.url("/discord/limited"))" }
              - { name: gotify, type: gotify, url: "\(gotifyHost.url("/gotify"))", token: "${GOTIFY_TOKEN}" }
              - { name: slack, type: slack, url: "\(slackHost.url("/slack/fine"))" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        let environment = ["GOTIFY_TOKEN": "wrong-token-value"]
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([], environment: environment).status == 0)
        server.respond(to: "/discord/limited", status: 429, headers: [("Retry-After", "600")])
        gotifyHost.respond(to: "/gotify/message", status: 401)
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        let run = try await fetchrun.run([], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(posted(slackHost, "/slack/fine").count == 1, "\(run.stdout)\(run.stderr)")
        let listed = try await fetchrun.run(["outputs", "--format", "json"], environment: environment)
        let outputs = try events(listed.stdout)
        let discord = try #require(outputs.first { $0["output"] as? String == "discord" }, "\(listed.stdout)\(listed.stderr)")
        #expect(discord["pending"] as? Int == 1 && (discord["last_error"] as? String)?.contains("HTTP 429") == true, "\(discord)")
        let next = try #require((discord["next_attempt"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
        #expect(next.timeIntervalSinceNow > 500, "\(next)")
        let gotify = try #require(outputs.first { $0["output"] as? String == "gotify" })
        #expect((gotify["last_error"] as? String)?.contains("HTTP 401") == true && (gotify["last_error"] as? String)?.contains("refused") == true, "\(gotify)")
        let everything = run.stdout + run.stderr + (try await fetchrun.run(["outputs"], environment: environment).stdout)
        #expect(!everything.contains("wrong-token-value"))
        // Once the services answer again, the next run sends what waited for Gotify; Discord
        // asked for ten minutes, and is left alone until then (or until --force).
        server.respond(to: "/discord/limited", status: nil)
        gotifyHost.respond(to: "/gotify/message", status: nil)
        let after = try await fetchrun.run([], environment: environment)
        #expect(after.status == 0 && after.stderr.contains("outputs: discord: nothing sent before"), "\(after.stderr)")
        // The refused attempts reached the receiver too.
        #expect(posted(gotifyHost, "/gotify/message").count == 2)
        #expect(posted(server, "/discord/limited").count == 1)
        let forced = try await fetchrun.run(["outputs", "--retry", "--force", "discord"], environment: environment)
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(posted(server, "/discord/limited").count == 2)
    }

    @Test func aMatrixMessageCutOffByAKilledRunIsTheSameTransactionWhenSentAgain() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: matrix, type: matrix, homeserver: "\(server.url(""))", token: t, room: "!room:example.org" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([]).status == 0)
        // The homeserver takes the message and answers late: the run is killed before it hears.
        server.respond(to: "/_matrix/*", status: 200, body: Array(#"{"event_id": "$late"}"#.utf8), delay: 20)
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        let running = try fetchrun.start([])
        try await waitUntil("a PUT at the server") { !server.requests.filter({ $0.method == "PUT" }).isEmpty }
        kill(running.pid, SIGKILL)
        await running.waitForExit()
        server.respond(to: "/_matrix/*", status: nil)
        #expect(try await fetchrun.run([]).status == 0)
        let paths = server.requests.filter { $0.method == "PUT" }.map(\.path)
        #expect(paths.count == 2 && paths[0] == paths[1], "\(paths)")
        let outbox = try events(try await fetchrun.run(["outputs", "--format", "json"]).stdout)
        #expect(outbox.first?["pending"] as? Int == 0 && outbox.first?["sent"] as? Int == 1, "\(outbox)")
    }

    @Test func testOutputSendsASampleThroughEachType() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            outputs:
              - { name: ntfy, type: ntfy, url: "\(server.url("/ntfy/t"))" }
              - { name: gotify, type: gotify, url: "\(server.url("/gotify"))", token: app-token }
              - { name: slack, type: slack, url: "\(server.url("/slack/x"))" }
              - { name: discord, type: discord, url: "\(server.url("/discord/x"))" }
              - { name: telegram, type: telegram, api_url: "\(server.url("/tg"))", token: "1:x", chat_id: "7" }
              - { name: matrix, type: matrix, homeserver: "\(server.url(""))", token: t, room: "!r:x" }
            sources:
              - { name: t, type: traffic }
            """, to: "sources.yaml")
        for name in ["ntfy", "gotify", "slack", "discord", "telegram", "matrix"] {
            let tested = try await fetchrun.run(["test-output", name])
            #expect(tested.status == 0, "\(name): \(tested.stdout)\(tested.stderr)")
        }
        #expect(["/ntfy/", "/gotify/message", "/slack/x", "/discord/x", "/tg/bot1:x/sendMessage"].allSatisfy { posted(server, $0).count == 1 })
        #expect(server.requests.filter { $0.method == "PUT" }.count == 1)
        server.respond(to: "/discord/x", status: 401)
        let refused = try await fetchrun.run(["test-output", "discord"])
        #expect(refused.status != 0 && (refused.stdout + refused.stderr).contains("HTTP 401"), "\(refused.stdout)\(refused.stderr)")
    }

    @Test func badNotificationKeysAreRefusedWithTheirPlace() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            outputs:
              - { name: a, type: ntfy, url: "https://ntfy.example", priority: loud }
              - { name: b, type: gotify, url: "https://gotify.example" }
              - { name: c, type: discord, url: "https://discord.example/api/webhooks/1/x", overflow: wrap }
            sources:
              - { name: t, type: traffic }
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["validate"])
        #expect(result.status == 65)
        for expected in ["3:", "names no topic", "'priority': use 1 to 5", "4:", "missing 'token'", "5:", "'overflow': use truncate or split"] {
            #expect(result.stderr.contains(expected), "\(expected): \(result.stderr)")
        }
    }
}
