import Foundation
import Testing
@testable import FetchRunKit

@Suite struct OutputUnitTests {
    func problems(_ text: String) -> [String] {
        do {
            _ = try ConfigLoader(environment: ["PW": "s3cret"]).load(text: text, file: "sources.yaml", directory: "/etc")
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    @Test func templatesReplacePlaceholdersAndLeaveOtherBracesAlone() throws {
        let template = try OutputTemplate(#"{"text": {title:json}, "url": "{link}"} {{literal}} {count}"#)
        #expect(template.render(["title": "A \"quoted\" title", "link": "https://x/1", "count": "2"]) == #"{"text": "A \"quoted\" title", "url": "https://x/1"} {literal} 2"#)
        #expect(try OutputTemplate("{link}").render([:]) == "")
        #expect(throws: (any Error).self) { try OutputTemplate("{titel}") }
        #expect(try OutputTemplate("{ not a placeholder }").render([:]) == "{ not a placeholder }")
    }

    @Test func filtersMatchFieldsWithRegularExpressions() throws {
        let item = Item(id: "1", title: "Swift 6.3 released", link: "https://swift.org/blog/6.3", summary: "Faster builds", author: "core-team", tags: ["release"])
        let other = Item(id: "2", title: "Weekly digest", link: "https://example.org/d", summary: "Sponsored content")
        let filter = ItemFilter(
            include: [try .init(field: nil, pattern: "(?i)release"), try .init(field: "tags", pattern: "^digest$")],
            exclude: [try .init(field: "summary", pattern: "(?i)sponsored")]
        )
        #expect(try filter.passes(item))
        #expect(try !filter.passes(other))
        #expect(try ItemFilter().passes(other))
        #expect(throws: (any Error).self) { try ItemFilter.Rule(field: "colour", pattern: "x") }
        #expect(throws: (any Error).self) { try ItemFilter.Rule(field: nil, pattern: "(unclosed") }
    }

    @Test func outputsAreCheckedWithTheirPlacesAndSecretsUnquoted() {
        let found = problems("""
            outputs:
              - { name: chat, type: webhook, url: "ftp://x", template: "{titel}" }
              - { name: mail, type: email, url: "http://x", from: "not an address", to: ["a@b.c", "x\\r\\ny"], password: "${PW}" }
              - { name: chat, type: command, command: [] }
              - { name: pager, type: sms }
            sources:
              - { name: a, type: traffic, outputs: [chatt], include: ["(open"], send_baseline: maybe }
            """)
        let expected = [
            "sources.yaml:2:39: 'url' must be an http:// or https:// URL",
            "sources.yaml:2:60: 'template': invalid template '{titel}': unknown placeholder '{titel}'",
            "sources.yaml:3:37: 'url' must be smtp://host[:port] or smtps://host[:port]",
            "sources.yaml:3:55: 'from': 'not an address' is not a mail address",
            "sources.yaml:3:77: 'to': 'x  y' is not a mail address",
            "sources.yaml:4:13: duplicate output name 'chat' (first used at 2:13)",
            "sources.yaml:4:43: 'command' must name a program",
            "sources.yaml:5:26: unknown output type 'sms'; known: command, discord, email, feed, gotify, matrix, ntfy, slack, telegram, webhook",
            "sources.yaml:7:41: source 'a': 'outputs': no output named 'chatt' (did you mean 'chat'?)",
            "sources.yaml:7:59: source 'a': 'include': invalid pattern '(open'",
            "sources.yaml:7:84: source 'a': 'send_baseline'",
        ]
        for prefix in expected {
            #expect(found.contains { $0.hasPrefix(prefix) }, "\(prefix) not in \(found)")
        }
        #expect(!found.joined().contains("s3cret"))
    }

    @Test func startTLSIsRequiredOrOffAndOffNeverWithAPasswordOrSMTPS() {
        let found = problems("""
            outputs:
              - { name: a, type: email, url: "smtp://x", from: f@x.org, to: [t@x.org], starttls: maybe }
              - { name: b, type: email, url: "smtp://x", from: f@x.org, to: [t@x.org], starttls: off, password: "${PW}" }
              - { name: c, type: email, url: "smtps://x", from: f@x.org, to: [t@x.org], starttls: off }
            sources:
              - { name: s, type: traffic }
            """)
        #expect(found.contains { $0.hasPrefix("sources.yaml:2:") && $0.contains("'starttls' must be required or off") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("sources.yaml:3:") && $0.contains("cannot be used with a 'password'") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("sources.yaml:4:") && $0.contains("smtps:// is TLS throughout") }, "\(found)")
        #expect(found.count == 3, "\(found)")
    }

    @Test func giveUpLimitsAreReadAndCheckedWithTheirPlaces() throws {
        let config = try ConfigLoader(environment: [:]).load(text: """
            outputs:
              - { name: a, type: command, command: [/bin/cat], give_up_attempts: 5, give_up_after: 2h }
              - { name: b, type: command, command: [/bin/cat] }
            sources:
              - { name: s, type: traffic }
            """, file: "sources.yaml", directory: "/")
        #expect(config.outputs[0].giveUp == OutputConfig.GiveUp(attempts: 5, age: .seconds(7200)))
        #expect(config.outputs[1].giveUp == OutputConfig.GiveUp(attempts: 10, age: .seconds(86_400)))
        let queued = Date(timeIntervalSince1970: 0)
        #expect(!config.outputs[0].giveUp.givesUp(attempts: 5, createdAt: queued, at: queued.addingTimeInterval(7199)))
        #expect(!config.outputs[0].giveUp.givesUp(attempts: 4, createdAt: queued, at: queued.addingTimeInterval(7200)))
        #expect(config.outputs[0].giveUp.givesUp(attempts: 5, createdAt: queued, at: queued.addingTimeInterval(7200)))

        let found = problems("""
            outputs:
              - { name: a, type: command, command: [/bin/cat], give_up_attempts: 0 }
              - { name: b, type: command, command: [/bin/cat], give_up_after: soon }
            sources:
              - { name: s, type: traffic }
            """)
        #expect(found.contains { $0.hasPrefix("sources.yaml:2:") && $0.contains("give_up_attempts") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("sources.yaml:3:") && $0.contains("give_up_after") }, "\(found)")
    }

    @Test func sourcesRouteToTheirOutputsAndDefaults() throws {
        let config = try ConfigLoader(environment: [:]).load(text: """
            outputs:
              - { name: log, type: command, command: [/bin/cat] }
              - { name: pager, type: webhook, url: "http://127.0.0.1:9/x", events: [failures], alert_after: 5 }
            defaults: { exclude: [spam], send_baseline: true }
            sources:
              - { name: a, type: traffic }
              - { name: b, type: traffic, outputs: [] }
              - { name: c, type: traffic, outputs: [pager] }
            """, file: "s.yaml", directory: "/")
        let (a, b, c) = (config.sources[0].routing, config.sources[1].routing, config.sources[2].routing)
        #expect(a.outputs(for: .items, among: config.outputs).map(\.name) == ["log"])
        #expect(a.outputs(for: .failures, among: config.outputs).map(\.name) == ["pager"])
        #expect(b.outputs(for: .items, among: config.outputs).isEmpty && b.outputs(for: .failures, among: config.outputs).isEmpty)
        #expect(c.outputs(for: .items, among: config.outputs).isEmpty && c.outputs(for: .failures, among: config.outputs).map(\.alertAfter) == [5])
        #expect(a.sendBaseline && a.filter.exclude.count == 1)
    }

    @Test func aMailsHeadersStayOnOneLineWhateverTheTitle() throws {
        let item = Item(id: "1", title: "Breaking\r\nBcc: victim@example.org\r\n\r\nbody", link: "https://x/1")
        let settings = EmailOutput.Settings(url: "smtp://x", from: "f@x.org", to: ["t@x.org"], username: nil, password: nil, perItem: true, subject: nil)
        let message = EmailOutput.message([Delivery.item(item, source: "s", sourceTitle: "Süddeutsche Nachrichten")], settings: settings, template: nil, date: Date())
        let head = message.components(separatedBy: "\r\n\r\n")[0]
        #expect(!head.contains("\r\nBcc:"))
        // A non-ASCII subject is encoded, not sent raw.
        #expect(head.contains("Subject: =?UTF-8?B?"))
        #expect(message.hasSuffix("\r\n"))
    }

    /// A body with a line past 998 bytes (a summary in one line) goes quoted-printable, every
    /// line then within 76 characters, and decodes to what was meant; a short one stays 8bit.
    @Test func aMailWithALongLineIsQuotedPrintableAndDecodesToItsText() throws {
        let summary = String(repeating: "Grüße = 100 % \t", count: 400) + "end "
        let item = Item(id: "1", title: "T", link: "https://x/1", summary: summary)
        var settings = EmailOutput.Settings(url: "smtp://x", from: "f@x.org", to: ["t@x.org"], username: nil, password: nil, perItem: true, subject: nil)
        settings.format = .text
        let template = try OutputTemplate("{title}\n.{summary}\n{link}")
        let message = EmailOutput.message([Delivery.item(item, source: "s", sourceTitle: nil)], settings: settings, template: template, date: Date())
        let parts = message.components(separatedBy: "\r\n\r\n")
        #expect(parts[0].hasSuffix("Content-Transfer-Encoding: quoted-printable"))
        let body = parts.dropFirst().joined(separator: "\r\n\r\n")
        let lines = body.components(separatedBy: "\r\n")
        #expect(lines.allSatisfy { $0.utf8.count <= 76 } && lines.count > 100)
        #expect(lines.allSatisfy { $0.utf8.allSatisfy { $0 == 9 || (32...126).contains($0) } })
        // Decoded by the rules of RFC 2045: soft breaks gone, =XX back to its byte.
        var decoded: [UInt8] = [], bytes = Array(body.replacingOccurrences(of: "=\r\n", with: "").utf8), index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "="), let byte = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16) {
                decoded.append(byte)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        #expect(String(decoding: decoded, as: UTF8.self) == "T\r\n.\(summary)\r\nhttps://x/1\r\n")
        let short = EmailOutput.message([Delivery.item(Item(id: "2", title: "Grüße", link: "https://x/2"), source: "s", sourceTitle: nil)], settings: settings, template: nil, date: Date())
        #expect(short.contains("Content-Transfer-Encoding: 8bit\r\n\r\nGrüße"))
    }

    @Test func aFailedDeliveryIsTriedAgainAfterABackoffThatDoublesUpToAnHour() {
        #expect(OutboxDelivery.retryDelay(afterAttempts: 1) == 30 && OutboxDelivery.retryDelay(afterAttempts: 3) == 120)
        #expect(OutboxDelivery.retryDelay(afterAttempts: 1000) == 3600 && OutboxDelivery.retryDelay(afterAttempts: -5) == 30)
    }
}
