import Foundation
import Testing
@testable import FetchRunKit

/// Each output's request, seen through an in-memory ``HTTPExchange``: the URL, method, headers
/// and body each service documents, what a refusal means, and a mail's envelope — no server,
/// no curl (the end-to-end tests keep those).
@Suite struct OutputRequestTests {
    /// Answers every request with `answer` and keeps what was asked.
    final class RecordingExchange: HTTPExchange {
        let requests = Locked<[HTTPRequest]>([])
        let mails = Locked<[MailRequest]>([])
        let answer: @Sendable (HTTPRequest) -> HTTPResponse

        init(answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse = { HTTPResponse(status: 200, headers: [:], body: Data("{}".utf8), effectiveURL: $0.url) }) {
            self.answer = answer
        }

        func execute(_ request: HTTPRequest) async throws -> HTTPResponse {
            requests.withLock { $0.append(request) }
            return answer(request)
        }

        func send(_ mail: MailRequest) async throws -> Int {
            mails.withLock { $0.append(mail) }
            return 250
        }

        var sent: [HTTPRequest] { requests.withLock { $0 } }
    }

    func output(_ yaml: String, environment: [String: String] = [:]) throws -> any Output {
        let config = try ConfigLoader(environment: environment).load(text: "outputs:\n  - " + yaml + "\nsources:\n  - { name: s, type: traffic }\n", file: "sources.yaml", directory: "/")
        return try #require(config.outputs.first).output
    }

    static let item = Delivery.item(Item(id: "1", title: "Новости: 漢字 & <b>", link: "https://news.example/1", summary: "<p>café ☕</p>"), source: "news", sourceTitle: nil)

    func json(_ request: HTTPRequest) throws -> [String: Any] {
        let body = try #require(request.body)
        return try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }

    func header(_ request: HTTPRequest, _ name: String) -> String? {
        request.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    @Test func eachNotificationServiceGetsTheRequestItDocuments() async throws {
        // The title as each target's markup must show it: `&` and `<b>` as text, never as markup.
        let cases: [(yaml: String, url: String, method: String?, auth: (String, String)?, text: String, title: String)] = [
            (#"{ name: n, type: ntfy, url: "https://ntfy.example/alerts", token: tk }"#, "https://ntfy.example/", nil, ("Authorization", "Bearer tk"), "message", "Новости: 漢字 & <b>"),
            (#"{ name: g, type: gotify, url: "https://gotify.example", token: gt }"#, "https://gotify.example/message", nil, ("X-Gotify-Key", "gt"), "message", "Новости: 漢字 & <b>"),
            (#"{ name: s, type: slack, url: "https://hooks.slack.example/T/B/x" }"#, "https://hooks.slack.example/T/B/x", nil, nil, "text", "Новости: 漢字 &amp; &lt;b&gt;"),
            (#"{ name: d, type: discord, url: "https://discord.example/api/webhooks/1/x" }"#, "https://discord.example/api/webhooks/1/x", nil, nil, "content", #"Новости: 漢字 & \<b\>"#),
            (#"{ name: t, type: telegram, token: "1:abc", chat_id: "42" }"#, "https://api.telegram.org/bot1:abc/sendMessage", nil, nil, "text", "Новости: 漢字 &amp; &lt;b&gt;"),
            (#"{ name: m, type: matrix, homeserver: "https://matrix.example", token: mx, room: "!r:example.org" }"#, "https://matrix.example/_matrix/client/v3/rooms/%21r%3Aexample.org/send/m.room.message/", "PUT", ("Authorization", "Bearer mx"), "formatted_body", "Новости: 漢字 &amp; &lt;b&gt;"),
        ]
        for (yaml, url, method, auth, field, title) in cases {
            let exchange = RecordingExchange()
            try await output(yaml).send([Self.item], through: exchange)
            let request = try #require(exchange.sent.first, "\(yaml)")
            #expect(request.url.hasPrefix(url), "\(request.url)")
            #expect(request.bodyMethod == method, "\(yaml)")
            if let (name, value) = auth { #expect(header(request, name) == value, "\(yaml)") }
            #expect(header(request, "Content-Type") == "application/json")
            let text = try #require(try json(request)[field] as? String, "\(yaml)")
            // The title and the summary's text, in UTF-8, escaped for the target's markup.
            #expect(text.contains("café ☕") && text.contains("漢字"), "\(yaml): \(text)")
            #expect(text.contains(title), "\(yaml): \(text)")
        }
    }

    @Test func aRateLimitCarriesItsWaitAndATokenRefusalSaysSo() async throws {
        let limited = RecordingExchange { HTTPResponse(status: 429, headers: ["retry-after": "120"], body: Data(), effectiveURL: $0.url) }
        for yaml in [#"{ name: d, type: discord, url: "https://discord.example/api/webhooks/1/x" }"#, #"{ name: w, type: webhook, url: "https://hooks.example/in" }"#] {
            do {
                try await output(yaml).send([Self.item], through: limited)
                Issue.record("a 429 was taken: \(yaml)")
            } catch let error as OutputError {
                #expect(error.retryAfter == .seconds(120) && error.scope == .destination, "\(yaml): \(error)")
            }
        }
        let refused = RecordingExchange { HTTPResponse(status: 401, headers: [:], body: Data(), effectiveURL: $0.url) }
        await #expect(throws: OutputError.self) { try await output(#"{ name: g, type: gotify, url: "https://gotify.example", token: secret-token }"#).send([Self.item], through: refused) }
        do {
            try await output(#"{ name: g, type: gotify, url: "https://gotify.example", token: secret-token }"#).send([Self.item], through: refused)
        } catch {
            #expect("\(error)".contains("refused") && !"\(error)".contains("secret-token"), "\(error)")
        }
        // A 422 refuses these deliveries only.
        let unprocessable = RecordingExchange { HTTPResponse(status: 422, headers: [:], body: Data(), effectiveURL: $0.url) }
        do {
            try await output(#"{ name: w, type: webhook, url: "https://hooks.example/in" }"#).send([Self.item], through: unprocessable)
        } catch let error as OutputError {
            #expect(error.scope == .deliveries)
        }
    }

    @Test func aSignedWebhookSignsTheTimestampAndTheBody() async throws {
        let exchange = RecordingExchange()
        try await output(#"{ name: w, type: webhook, url: "https://hooks.example/in", secret: "${SECRET}" }"#, environment: ["SECRET": "k3y"]).send([Self.item], through: exchange)
        let request = try #require(exchange.sent.first)
        let timestamp = try #require(header(request, "X-Fetchrun-Timestamp"))
        let signature = try #require(header(request, "X-Fetchrun-Signature"))
        #expect(header(request, "X-Fetchrun-Delivery-Id") == "news/1")
        // Python's hmac, the receiver's side in the README, agrees.
        let body = try #require(request.body)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import hmac, hashlib, sys; print('sha256=' + hmac.new(b'k3y', sys.argv[1].encode() + b'.' + sys.stdin.buffer.read(), hashlib.sha256).hexdigest())", timestamp]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(body)
        try input.fileHandleForWriting.close()
        let expected = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        process.waitUntilExit()
        #expect(signature == expected)
        #expect(try json(request)["title"] as? String == "Новости: 漢字 & <b>")
    }

    @Test func aMailGoesToItsRecipientsWithTheMessageOnTheWire() async throws {
        let exchange = RecordingExchange()
        try await output(#"{ name: m, type: email, url: "smtps://mail.example", from: f@example.org, to: [a@example.org, b@example.org], username: u, password: "${PW}" }"#, environment: ["PW": "pw"]).send([Self.item], through: exchange)
        let mail = try #require(exchange.mails.withLock { $0.first })
        #expect(mail.url == "smtps://mail.example" && mail.from == "f@example.org" && mail.recipients == ["a@example.org", "b@example.org"])
        #expect(mail.username == "u" && mail.password == "pw")
        let message = String(decoding: mail.message, as: UTF8.self)
        #expect(message.contains("Subject: =?UTF-8?B?") && message.contains("Content-Type: text/plain; charset=utf-8"), "\(message)")
        #expect(message.components(separatedBy: "\r\n").allSatisfy { $0.utf8.count <= 998 })
    }
}
