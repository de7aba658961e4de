import Foundation
import TestSupport
import Testing
import FixtureServer

/// Outputs through the built binary against local receivers: a command, a webhook on the
/// fixture server, mail to the SMTP fixture. Exactly once in the normal case, at least once
/// (never lost) after a crash.
@Suite struct OutputTests {
    /// An RSS feed of `ids`, newest first.
    static func feed(_ ids: [String]) -> [UInt8] {
        var xml = #"<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>"#
        for (index, id) in ids.enumerated() {
            xml += "<item><title>Story \(id)</title><link>https://news.example/\(id)</link><guid>\(id)</guid><pubDate>Sat, 21 Nov 2026 \(String(format: "%02d", 23 - index % 24)):00:00 GMT</pubDate></item>"
        }
        return Array((xml + "</channel></rss>").utf8)
    }

    /// A script that appends what it reads on stdin to `file` and exits with `status`.
    /// A command output that appends what it is given to `file`, then waits `pause` seconds
    /// (none when `nil`) before it exits.
    func recorder(_ fetchrun: FetchRunBinary, name: String, file: String, pause: String? = nil) throws {
        try fetchrun.write("#!/bin/sh\ncat >> \(fetchrun.path(file))\n" + (pause.map { "sleep \($0)\n" } ?? ""), to: name)
        chmod(fetchrun.path(name), 0o755)
    }

    func lines(_ fetchrun: FetchRunBinary, _ file: String) -> [[String: Any]] {
        ((try? fetchrun.read(file)) ?? "").split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    func posted(_ server: FixtureServer, _ path: String) -> [[String: Any]] {
        server.requests(to: path).filter { $0.method == "POST" }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
    }

    @Test func commandAndWebhookGetEveryNewItemOnceAndTheBaselineNot() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try recorder(fetchrun, name: "notify.sh", file: "received.ndjson")
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: log, type: command, command: [./notify.sh] }
              - { name: chat, type: webhook, url: "\(server.url("/hook"))" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a", "b"]))
        #expect(try await fetchrun.run([]).status == 0)
        // A first fetch is the baseline: nothing is sent.
        #expect(lines(fetchrun, "received.ndjson").isEmpty && posted(server, "/hook").isEmpty)

        server.serve("news.xml", body: Self.feed(["c", "a", "b"]))
        let second = try await fetchrun.run([])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("outputs: chat: 1 sent") && second.stderr.contains("outputs: log: 1 sent"), "\(second.stderr)")
        server.serve("news.xml", body: Self.feed(["e", "d", "c", "a", "b"]))
        #expect(try await fetchrun.run([]).status == 0)
        #expect(try await fetchrun.run([]).status == 0) // nothing new: nothing sent

        let commandIDs = lines(fetchrun, "received.ndjson").map { $0["delivery_id"] as? String }
        let webhookIDs = posted(server, "/hook").map { $0["delivery_id"] as? String }
        #expect(commandIDs.sorted { ($0 ?? "") < ($1 ?? "") } == ["news/c", "news/d", "news/e"])
        #expect(webhookIDs.sorted { ($0 ?? "") < ($1 ?? "") } == ["news/c", "news/d", "news/e"])
        let first = try #require(posted(server, "/hook").first)
        #expect(first["event"] as? String == "item" && first["source"] as? String == "news" && first["title"] as? String == "Story c")
        #expect(server.requests(to: "/hook").first?.headers["x-fetchrun-delivery-id"] == "news/c")
        let status = try events(try await fetchrun.run(["outputs", "--format", "json"]).stdout)
        #expect(status.allSatisfy { $0["pending"] as? Int == 0 && $0["sent"] as? Int == 3 }, "\(status)")
    }

    @Test func aWebhookThatIsDownLosesNothingAndTheNextRunDelivers() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))", batch: 10 }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([]).status == 0)
        server.respond(to: "/hook", status: 503)
        server.serve("news.xml", body: Self.feed(["c", "b", "a"]))
        let down = try await fetchrun.run([])
        // Delivery is not the fetch: the run succeeded.
        #expect(down.status == 0, "\(down.stderr)")
        #expect(down.stdout.contains("newData") && down.stdout.contains("2 new"), "\(down.stdout)")
        #expect(down.stderr.contains("outputs: chat: 2 not sent (HTTP 503"), "\(down.stderr)")
        let listed = try await fetchrun.run(["outputs"])
        #expect(listed.stdout.contains("2 pending") && listed.stdout.contains("HTTP 503"), "\(listed.stdout)")

        // --retry tries at once, whatever the backoff; still down, they still wait (exit 2).
        let retried = try await fetchrun.run(["outputs", "--retry"])
        #expect(retried.status == 2 && retried.stderr.contains("2 not sent"), "\(retried.stderr)")

        server.respond(to: "/hook", status: nil)
        let next = try await fetchrun.run([])
        #expect(next.status == 0)
        #expect(next.stderr.contains("outputs: chat: 2 sent"), "\(next.stderr)")
        // One POST of the batch that was taken (the 503 ones had a body too): b and c, once.
        let taken = server.requests(to: "/hook").filter { $0.method == "POST" }.last
        let batch = try #require(try JSONSerialization.jsonObject(with: Data(taken?.body ?? [])) as? [[String: Any]])
        #expect(batch.compactMap { $0["delivery_id"] as? String }.sorted() == ["news/b", "news/c"])
        #expect(try await fetchrun.run(["outputs"]).stdout.contains("nothing pending"))
        #expect(try await fetchrun.run([]).stderr.contains("outputs:") == false)
    }

    @Test func killedDuringDeliveryEveryItemArrivesAtLeastOnceAndIsMarkedOnce() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // 20 ms a delivery: the 500 take ~10 s, so a test task that a loaded machine runs late
        // still kills the run in the middle of them (without the pause they could all be out
        // in about a second, before the task looked again).
        try recorder(fetchrun, name: "notify.sh", file: "received.ndjson", pause: "0.02")
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: log, type: command, command: [./notify.sh], per_item: true }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))", keep: 1000 }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["old"]))
        #expect(try await fetchrun.run([]).status == 0)
        let ids = (0..<500).map { "n\($0)" }
        server.serve("news.xml", body: Self.feed(ids + ["old"]))
        let running = try fetchrun.start([])
        // Killed once some deliveries went out, long before all 500 could.
        try await waitUntil("20 deliveries") { lines(fetchrun, "received.ndjson").count >= 20 }
        kill(running.pid, SIGKILL)
        await running.waitForExit()
        let before = Set(lines(fetchrun, "received.ndjson").compactMap { $0["delivery_id"] as? String })
        #expect(!before.isEmpty && before.count < 500, "\(before.count) delivered before the kill")

        let again = try await fetchrun.run([], timeout: .seconds(120))
        #expect(again.status == 0, "\(again.stderr)")
        let received = lines(fetchrun, "received.ndjson").compactMap { $0["delivery_id"] as? String }
        #expect(Set(received) == Set(ids.map { "news/\($0)" }), "\(Set(ids.map { "news/\($0)" }).subtracting(received).sorted().prefix(5)) missing")
        let outbox = try events(try await fetchrun.run(["outputs", "--format", "json"]).stdout)
        #expect(outbox.first?["pending"] as? Int == 0 && outbox.first?["sent"] as? Int == 500, "\(outbox)")
    }

    @Test func mailGoesThroughSMTPWithTheTemplatesAndNoPasswordShown() async throws {
        let server = try FixtureServer()
        let smtp = try SMTPTLSFixture()
        defer { smtp.stop() }
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - name: mail
                type: email
                url: \(smtp.url)
                ca_file: \(smtp.caFile)
                from: fetchrun@example.org
                to: [me@example.org, you@example.org]
                username: me
                password: ${SMTP_PASSWORD}
                per_item: true
                subject: "[{source}] {title}"
                template: "Read {link}\\nfrom {source_title}"
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([], environment: ["SMTP_PASSWORD": "mail-secret-1"]).status == 0)
        server.serve("news.xml", body: Self.feed(["c", "b", "a"]))
        let result = try await fetchrun.run(["-vv"], environment: ["SMTP_PASSWORD": "mail-secret-1"])
        #expect(result.status == 0, "\(result.stderr)")
        // Upgraded with STARTTLS before AUTH and the message.
        let received = smtp.messages
        #expect(received.allSatisfy { $0.tls })
        let messages = received.map(\.message)
        #expect(messages.count == 2)
        let subjects = messages.compactMap { $0.header("Subject") }.sorted()
        #expect(subjects == ["[news] Story b", "[news] Story c"], "\(subjects)")
        let mail = try #require(messages.first { $0.header("Subject") == "[news] Story c" })
        #expect(mail.from == "fetchrun@example.org" && mail.recipients == ["me@example.org", "you@example.org"])
        #expect(mail.body.contains("Read https://news.example/c\r\nfrom News"), "\(mail.body)")
        #expect(mail.login?.user == "me" && mail.login?.password == "mail-secret-1")
        #expect(mail.header("X-Fetchrun-Delivery-Ids") == "news/c")
        #expect(!(result.stdout + result.stderr).contains("mail-secret-1"))
        // test-output sends a sample the same way.
        let test = try await fetchrun.run(["test-output", "mail"], environment: ["SMTP_PASSWORD": "mail-secret-1"])
        #expect(test.status == 0 && test.stdout.contains("mail (email"), "\(test.stderr)")
        #expect(smtp.messages.count == 3 && smtp.messages.last?.message.header("Subject") == "[fetchrun-test] fetchrun test item")
    }

    @Test func anyTwoHundredIsTakenWhateverItsBodyAndHostileIDsMakeSafeDeliveryIDs() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: hook, type: webhook, url: "\(server.url("/huge-receiver"))", timeout: 20s }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([]).status == 0)
        // Ids a feed may hold: CR LF and a header of their own, non-ASCII, megabytes cut to 2 KB.
        let injected = "x&#13;&#10;X-Injected: 1", long = String(repeating: "y", count: 5_000)
        server.serve("news.xml", body: Self.feed([injected, "caf\u{E9}", long, "plain-id", "a"]))
        let result = try await fetchrun.run([])
        #expect(result.status == 0, "\(result.stderr)")
        let posts = server.requests(to: "/huge-receiver")
        #expect(posts.count == 4, "\(posts.count) posts")
        let headerIDs = posts.compactMap { $0.headers["x-fetchrun-delivery-id"] }
        #expect(posts.allSatisfy { $0.headers["x-injected"] == nil })
        #expect(headerIDs.count == 4 && headerIDs.contains("news/plain-id"), "\(headerIDs)")
        #expect(headerIDs.filter { $0.hasPrefix("news/h:") }.count == 3, "\(headerIDs)")
        #expect(headerIDs.allSatisfy { $0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } && $0.utf8.count < 220 })
        // The JSON carries the same id as the header.
        for post in posts {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(post.body)) as? [String: Any])
            #expect(object["delivery_id"] as? String == post.headers["x-fetchrun-delivery-id"])
        }
        // The 64 MiB answers were 200s: all four are sent, none is sent again.
        let outbox = try events(try await fetchrun.run(["outputs", "--format", "json"]).stdout)
        #expect(outbox.first?["pending"] as? Int == 0 && outbox.first?["sent"] as? Int == 4, "\(outbox)")
        #expect(try await fetchrun.run([]).status == 0)
        #expect(server.requests(to: "/huge-receiver").count == 4)
    }

    @Test func anOutputsURLIsShownAsWrittenNeverWithTheSecretItExpandsTo() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let secrets = ["HOOK_TOKEN": "hook-secret-77", "CMD_TOKEN": "cmd-secret-78"]
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "http://127.0.0.1:1/services/${HOOK_TOKEN}" }
              - { name: script, type: command, command: [/bin/false, "--token=${CMD_TOKEN}"] }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([], environment: secrets).status == 0)
        // One new item: both outputs fail, and their errors are recorded.
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        let run = try await fetchrun.run([], environment: secrets)
        #expect(run.stderr.contains("not sent"), "\(run.stderr)")
        let listed = try await fetchrun.run(["outputs"], environment: secrets)
        let json = try await fetchrun.run(["outputs", "--format", "json"], environment: secrets)
        let tested = try await fetchrun.run(["test-output", "chat"], environment: secrets)
        let everything = [run, listed, json, tested].map { $0.stdout + $0.stderr }.joined()
        #expect(everything.contains("http://127.0.0.1:1/services/${HOOK_TOKEN}"), "\(everything)")
        #expect(listed.stdout.contains("--token=${CMD_TOKEN}"), "\(listed.stdout)")
        for secret in secrets.values { #expect(!everything.contains(secret)) }
        // Nor in what state.db keeps of the failures.
        let database = try ["state.db", "state.db-wal"].map { fetchrun.folder.appendingPathComponent("state/\($0)") }
            .filter { FileManager.default.fileExists(atPath: $0.path) }.map { try Data(contentsOf: $0) }
        #expect(database.contains { $0.range(of: Data("${HOOK_TOKEN}".utf8)) != nil })
        for secret in secrets.values { #expect(database.allSatisfy { $0.range(of: Data(secret.utf8)) == nil }) }
    }

    @Test(arguments: [SMTPFixture.StartTLS.notOffered, .refused])
    func mailIsNeverSentInCleartextAndStaysQueued(_ startTLS: SMTPFixture.StartTLS) async throws {
        let server = try FixtureServer()
        let smtp = try SMTPFixture(startTLS: startTLS)
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: mail, type: email, url: "\(smtp.url)", from: f@example.org, to: [me@example.org], username: me, password: "${SMTP_PASSWORD}" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([], environment: ["SMTP_PASSWORD": "mail-secret-2"]).status == 0)
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        let result = try await fetchrun.run([], environment: ["SMTP_PASSWORD": "mail-secret-2"])
        #expect(result.stderr.contains("did not offer STARTTLS or refused it"), "\(result.stderr)")
        #expect(smtp.messages.isEmpty)
        #expect(!(result.stdout + result.stderr).contains("mail-secret-2"))
        let outbox = try events(try await fetchrun.run(["outputs", "--format", "json"], environment: ["SMTP_PASSWORD": "mail-secret-2"]).stdout)
        #expect(outbox.first?["pending"] as? Int == 1, "\(outbox)")
        let lastError = "\(outbox.first?["last_error"] ?? "")"
        #expect(lastError.contains("STARTTLS"), "\(outbox)")
    }

    @Test func aLocalRelayWithoutTLSIsAnOptInAndNeverWithAPassword() async throws {
        let smtp = try SMTPFixture()
        let fetchrun = try FetchRunBinary()
        let output = "  - { name: relay, type: email, url: \"\(smtp.url)\", from: f@example.org, to: [me@example.org], starttls: off"
        try fetchrun.write("state_dir: state\noutputs:\n\(output) }\nsources:\n  - { name: t, type: traffic }\n", to: "sources.yaml")
        let sent = try await fetchrun.run(["test-output", "relay"])
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(smtp.messages.count == 1 && smtp.messages.first?.login == nil)
        try fetchrun.write("state_dir: state\noutputs:\n\(output), username: me, password: pw }\nsources:\n  - { name: t, type: traffic }\n", to: "sources.yaml")
        let refused = try await fetchrun.run(["test-output", "relay"])
        #expect(refused.status != 0 && refused.stderr.contains("cannot be used with a 'password'"), "\(refused.stderr)")
        #expect(smtp.messages.count == 1)
    }

    @Test func aFailingSourceAlertsOnceAfterThreeFailuresAndOnceWhenItRecovers() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: pager, type: webhook, url: "\(server.url("/alerts"))", events: [failures] }
              - { name: chat, type: webhook, url: "\(server.url("/hook"))" }
            sources:
              - { name: flaky, type: rss, url: "\(server.url("/files/flaky.xml"))" }
            """, to: "sources.yaml")
        server.serve("flaky.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([]).status == 0)
        server.respond(to: "/files/flaky.xml", status: 500)
        for _ in 0..<5 { #expect(try await fetchrun.run([]).status == 3) }
        server.respond(to: "/files/flaky.xml", status: nil)
        for _ in 0..<2 { #expect(try await fetchrun.run([]).status == 0) }
        let alerts = posted(server, "/alerts")
        #expect(alerts.map { $0["event"] as? String } == ["failing", "recovered"], "\(alerts)")
        #expect(alerts.first?["failures"] as? Int == 3 && (alerts.first?["error"] as? String ?? "").contains("HTTP 500"))
        #expect(alerts.last?["failures"] as? Int == 5)
        // The items output hears nothing of failures.
        #expect(posted(server, "/hook").isEmpty)
    }

    @Test func filtersDecideWhatIsNewAndSentButEveryItemIsKept() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))" }
            defaults:
              exclude: [{ title: "(?i)sponsored" }]
            sources:
              - name: news
                type: rss
                url: "\(server.url("/files/news.xml"))"
                include: ["Story (a|c|s)", { link: "/d$" }]
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([]).status == 0)
        // b: not included; c, d: included; s: included by its title, then excluded by defaults.
        var xml = String(decoding: Self.feed(["d", "c", "b", "a"]), as: UTF8.self)
        xml = xml.replacingOccurrences(of: "</channel>", with: "<item><title>Story s (Sponsored)</title><guid>s</guid></item></channel>")
        server.serve("news.xml", body: Array(xml.utf8))
        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 0)
        let newIDs = try events(result.stdout).filter { $0["event"] as? String == "item" }.compactMap { $0["id"] as? String }.sorted()
        #expect(newIDs == ["c", "d"], "\(newIDs)")
        #expect(posted(server, "/hook").compactMap { $0["delivery_id"] as? String }.sorted() == ["news/c", "news/d"])
        // Filtered items are in the snapshot, so they never come back as new.
        let snapshot = try fetchrun.read("state/snapshots/news.json")
        #expect(snapshot.contains("\"b\"") && snapshot.contains("\"s\""))
        #expect(try await fetchrun.run([]).stdout.contains("news  noData"))
    }

    @Test func watchDeliversAsItFetchesAndRetriesAfterABackoff() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))", interval: 1s }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([]).status == 0)
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        let watch = try fetchrun.start(["watch"])
        try await waitUntil("a post to the hook") { !posted(server, "/hook").isEmpty }
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()
        #expect(posted(server, "/hook").compactMap { $0["delivery_id"] as? String } == ["news/b"])
        #expect(try await fetchrun.run(["outputs"]).stdout.contains("nothing pending"))
    }

    @Test func aReloadedWatchSendsToTheOutputsOfItsNewConfig() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let sources = "sources:\n  - { name: news, type: rss, url: \"\(server.url("/files/news.xml"))\", interval: 1s }\n"
        try fetchrun.write("state_dir: state\n" + sources, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        let watch = try fetchrun.start(["watch"])
        func printed(_ text: String, in file: URL) -> Bool {
            (try? String(contentsOf: file, encoding: .utf8))?.contains(text) == true
        }
        try await waitUntil("the baseline") { printed("news: baseline", in: watch.stdout) }

        try fetchrun.write("state_dir: state\nhttp: { per_host: 2 }\noutputs:\n  - { name: chat, type: webhook, url: \"\(server.url("/hook"))\" }\n" + sources, to: "sources.yaml")
        kill(watch.pid, SIGHUP)
        try await waitUntil("the reload") { printed("changed none; outputs: chat", in: watch.stderr) }
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        try await waitUntil("the webhook's POST") { !posted(server, "/hook").isEmpty }
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()
        #expect(posted(server, "/hook").compactMap { $0["delivery_id"] as? String } == ["news/b"])
        let stderr = (try? String(contentsOf: watch.stderr, encoding: .utf8)) ?? ""
        // The connection limits were set up at start; the watch says so rather than pretend.
        #expect(stderr.contains("SIGHUP: http: changed; it takes effect at the next start"), "\(stderr)")
        #expect(!stderr.contains("downloads: changed"))
    }

    @Test func testOutputSaysWhetherTheOutputTookTheSample() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))", template: "{\\"text\\": {title:json}}" }
            sources:
              - { name: t, type: traffic }
            """, to: "sources.yaml")
        let ok = try await fetchrun.run(["test-output", "chat"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(String(decoding: server.requests(to: "/hook").first?.body ?? [], as: UTF8.self) == #"{"text": "fetchrun test item"}"#)
        server.respond(to: "/hook", status: 500)
        let down = try await fetchrun.run(["test-output", "chat"])
        #expect(down.status == 1 && down.stderr.contains("not sent: HTTP 500"), "\(down.stderr)")
        #expect(try await fetchrun.run(["test-output", "nope"]).status == 64)
    }

    @Test func aDeliveryTheReceiverRefusesIsGivenUpListedAndSentAgainOnlyWhenAsked() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/picky-receiver/refuse-me"))", give_up_attempts: 2, give_up_after: 1s }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([]).status == 0)
        // The refused one is first in the queue; those behind it go through all the same.
        server.serve("news.xml", body: Self.feed(["refuse-me", "c", "b", "a"]))
        let first = try await fetchrun.run([])
        #expect(first.stderr.contains("outputs: chat: 2 sent, 1 not sent (HTTP 422"), "\(first.stderr)")
        let tried = posted(server, "/picky-receiver/refuse-me").compactMap { $0["delivery_id"] as? String }
        #expect(tried.first == "news/refuse-me" && tried.sorted() == ["news/b", "news/c", "news/refuse-me"], "\(tried)")
        // Real time: past the output's give_up_after (1 s), between two runs of the binary.
        try await Task.sleep(for: .seconds(1.1))
        let second = try await fetchrun.run([])
        #expect(second.stderr.contains("outputs: chat: 1 given up (HTTP 422"), "\(second.stderr)")
        #expect(second.stderr.contains("`fetchrun outputs --retry --given-up` sends it again"), "\(second.stderr)")

        let listed = try await fetchrun.run(["outputs"])
        #expect(listed.stdout.contains("nothing pending, 1 given up"), "\(listed.stdout)")
        #expect(listed.stdout.contains("given up: news/refuse-me (2 attempts since") && listed.stdout.contains("HTTP 422"), "\(listed.stdout)")
        let json = try events(try await fetchrun.run(["outputs", "--format", "json"]).stdout)
        #expect(json.first { $0["event"] as? String == "output" }?["given_up"] as? Int == 1, "\(json)")
        #expect(json.first { $0["event"] as? String == "given_up" }?["id"] as? String == "news/refuse-me", "\(json)")
        // Nothing is tried again by a run, nor by a plain --retry (nothing waits: exit 0).
        #expect(try await fetchrun.run([]).stderr.contains("outputs:") == false)
        #expect(try await fetchrun.run(["outputs", "--retry"]).status == 0)
        #expect(posted(server, "/picky-receiver/refuse-me").count == 4)
        #expect(try await fetchrun.run(["outputs", "--given-up"]).status == 64)
        // Taken back on request: tried again (still refused, so it waits, exit 2).
        let again = try await fetchrun.run(["outputs", "--retry", "--given-up"])
        #expect(again.status == 2 && again.stderr.contains("1 not sent (HTTP 422"), "\(again.stderr)")
        #expect(posted(server, "/picky-receiver/refuse-me").count == 5)
    }

    @Test func aCommandOutputThatFloodsItsOutputIsJudgedByItsExitStatusAndATimeoutSaysSo() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        // 64 MiB to stdout and a long line to stderr, then success; and one that never stops.
        try fetchrun.write("#!/bin/sh\nhead -c 67108864 /dev/zero\nhead -c 8388608 /dev/zero | tr '\\0' x >&2\ncat > /dev/null\nexit 0\n", to: "flood.sh")
        try fetchrun.write("#!/bin/sh\nexec yes flood\n", to: "endless.sh")
        for script in ["flood.sh", "endless.sh"] { chmod(fetchrun.path(script), 0o755) }
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: flood, type: command, command: [./flood.sh] }
              - { name: endless, type: command, command: [./endless.sh], timeout: 2s }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([]).status == 0)
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        let run = try await fetchrun.run([])
        #expect(run.stderr.contains("outputs: flood: 1 sent"), "\(run.stderr)")
        #expect(run.stderr.contains("outputs: endless: 1 not sent (") && run.stderr.contains("did not finish within 2s (its `timeout`); it was stopped"), "\(run.stderr)")
        #expect(!run.stderr.contains("signal 15"), "\(run.stderr)")
    }

    /// The receiver's side, as the README shows it: Python's own HMAC over the timestamp, a
    /// dot and the body, compared in constant time. Exits 0 when the signature holds.
    static let signatureCheck = """
        import hashlib, hmac, sys
        secret, timestamp, signature, body = sys.argv[1].encode(), sys.argv[2], sys.argv[3], open(sys.argv[4], "rb").read()
        expected = "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        sys.exit(0 if hmac.compare_digest(expected, signature) else 1)
        """

    func signatureHolds(_ request: FixtureServer.Request, secret: String, in fetchrun: FetchRunBinary) throws -> Bool {
        try fetchrun.write(String(decoding: request.body, as: UTF8.self), to: "body.bin")
        try fetchrun.write(Self.signatureCheck, to: "check.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [fetchrun.path("check.py"), secret, request.headers["x-fetchrun-timestamp"] ?? "", request.headers["x-fetchrun-signature"] ?? "", fetchrun.path("body.bin")]
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test func aSignedWebhookCarriesAnHMACTheReceiverCanCheckAndTheSecretNowhereElse() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let secret = "whsec-\(UUID().uuidString)"
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))", secret: "${HOOK_SECRET}" }
              - { name: plain, type: webhook, url: "\(server.url("/plain"))" }
            sources:
              - { name: news, type: rss, url: "\(server.url("/files/news.xml"))" }
            """, to: "sources.yaml")
        let environment = ["HOOK_SECRET": secret]
        server.serve("news.xml", body: Self.feed(["a"]))
        #expect(try await fetchrun.run([], environment: environment).status == 0)
        server.serve("news.xml", body: Self.feed(["b", "a"]))
        let run = try await fetchrun.run(["-vv"], environment: environment)
        #expect(run.stderr.contains("outputs: chat: 1 sent"), "\(run.stderr)")
        let post = try #require(server.requests(to: "/hook").first)
        let timestamp = try #require(post.headers["x-fetchrun-timestamp"].flatMap { Int64($0) })
        #expect(abs(Double(timestamp) - Date().timeIntervalSince1970) < 120)
        #expect(post.headers["x-fetchrun-signature"]?.hasPrefix("sha256=") == true)
        #expect(try signatureHolds(post, secret: secret, in: fetchrun))
        // A changed body, or another key, does not check out.
        var tampered = post
        tampered.body += Array(" ".utf8)
        #expect(try !signatureHolds(tampered, secret: secret, in: fetchrun))
        #expect(try !signatureHolds(post, secret: secret + "x", in: fetchrun))
        // Only the output with a secret signs.
        #expect(server.requests(to: "/plain").first?.headers["x-fetchrun-signature"] == nil)
        // test-output signs too.
        #expect(try await fetchrun.run(["test-output", "chat"], environment: environment).status == 0)
        #expect(try signatureHolds(try #require(server.requests(to: "/hook").last), secret: secret, in: fetchrun))

        let listed = try await fetchrun.run(["outputs", "--format", "json"], environment: environment)
        var everything = run.stdout + run.stderr + listed.stdout + listed.stderr
        for file in fetchrun.files(in: "state") where file.hasPrefix("state.db") {
            everything += String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: fetchrun.path("state/\(file)")))) ?? Data(), as: UTF8.self)
        }
        #expect(!everything.contains(secret))

        // A secret whose variable is unset is an error at its place, not an unsigned post.
        let unset = try await fetchrun.run(["validate"])
        #expect(unset.status != 0 && unset.stderr.contains("sources.yaml:3:") && unset.stderr.contains("'secret': environment variable 'HOOK_SECRET' is not set"), "\(unset.stderr)")
    }
}
