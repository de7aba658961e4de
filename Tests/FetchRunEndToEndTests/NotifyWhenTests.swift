import Foundation
import Testing
import FixtureServer
import TestSupport

/// `notify_when:` with the built binary: a shop page's price read as written, a notification
/// only as it falls below the limit, every change still in the history, and `test-source`
/// saying what the condition makes of the page.
@Suite struct NotifyWhenTests {
    /// A fetchrun whose one source, `source` (a flow mapping), sends to the fixture's `/hook`.
    static func setUp(_ source: (FixtureServer) -> String) throws -> (FixtureServer, FetchRunBinary) {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: hook, type: webhook, url: "\(server.url("/hook"))" }
            sources:
              - \(source(server))
            """, to: "sources.yaml")
        return (server, fetchrun)
    }

    @Test func aPriceBelowTheLimitIsSentOnceAndEveryChangeIsRecorded() async throws {
        let (server, fetchrun) = try Self.setUp { server in
            "{ name: shop, type: page, url: \"\(server.url("/files/shop.html"))\", css: \"p.price\", notify_when: { value: { below: 1000 } } }"
        }
        var notes: [String] = []
        for price in ["1.299,00 €", "1.199,00 €", "999,00 €", "989,00 €"] {
            server.serve("shop.html", body: HistoryTests.page("Цена \(price)"), contentType: "text/html; charset=utf-8")
            let result = try await fetchrun.run(["--format", "json"])
            #expect([0, 2].contains(result.status), "\(result.stderr)")
            notes.append(try events(result.stdout).first { $0["event"] as? String == "source" }.flatMap { ($0["notes"] as? [String])?.joined(separator: "; ") } ?? "")
        }
        let sent = server.requests(to: "/hook").map { String(decoding: $0.body, as: UTF8.self) }
        #expect(sent.count == 1 && sent.first?.contains("999,00 €") == true, "\(sent)")
        #expect(notes[1].contains("notify_when: 1199 is not below 1000: not sent"), "\(notes)")
        #expect(notes[2].contains("notify_when: 999 is below 1000: sent"), "\(notes)")
        #expect(notes[3].contains("notify_when: 989 is below 1000: not sent"), "\(notes)")
        // Every change is in the history, sent or not.
        let history = try await fetchrun.run(["history", "--format", "json"])
        #expect(try events(history.stdout).filter { $0["kind"] as? String == "change" }.count == 3, "\(history.stdout)")

        let tested = try await fetchrun.run(["test-source", "shop"])
        #expect(tested.status == 0 && tested.stdout.contains("notify_when: met, value 989: 989 is below 1000"), "\(tested.stdout)\(tested.stderr)")
        server.serve("shop.html", body: HistoryTests.page("Ausverkauft"), contentType: "text/html; charset=utf-8")
        let soldOut = try await fetchrun.run(["test-source", "shop", "--format", "json"])
        let condition = try events(soldOut.stdout).first { $0["event"] as? String == "condition" }
        #expect(condition?["met"] as? Bool == false && condition?["reason"] as? String == "no number in the text", "\(soldOut.stdout)")
    }

    /// `extract: product`: a shop's JSON-LD read without a selector; back in stock is sent once.
    @Test func backInStockFromAShopsProductDataIsSentOnce() async throws {
        let (server, fetchrun) = try Self.setUp { server in
            "{ name: mill, type: page, url: \"\(server.url("/files/mill.html"))\", extract: product, notify_when: { appears: \"availability: InStock\" } }"
        }
        func page(_ price: String, _ availability: String) -> [UInt8] {
            Array("""
                <html><head><script type="application/ld+json">{"@type": "Product", "name": "Mühle", "sku": "M-1",
                "offers": {"@type": "Offer", "price": "\(price)", "priceCurrency": "EUR", "availability": "https://schema.org/\(availability)"}}</script></head>
                <body><p>Nothing else to see</p></body></html>
                """.utf8)
        }
        for (price, availability) in [("89.00", "OutOfStock"), ("85.00", "OutOfStock"), ("85.00", "InStock"), ("79.00", "InStock")] {
            server.serve("mill.html", body: page(price, availability), contentType: "text/html; charset=utf-8")
            let result = try await fetchrun.run([])
            #expect([0, 2].contains(result.status), "\(result.stderr)")
        }
        let sent = server.requests(to: "/hook").map { String(decoding: $0.body, as: UTF8.self) }
        #expect(sent.count == 1 && sent.first?.contains("availability: InStock") == true, "\(sent)")
        let tested = try await fetchrun.run(["test-source", "mill"])
        #expect(tested.stdout.contains("price: 79.00 EUR") && tested.stdout.contains("notify_when: met"), "\(tested.stdout)")
    }
}
