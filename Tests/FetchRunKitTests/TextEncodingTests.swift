import Foundation
import Testing
@testable import FetchRunKit

/// Text is UTF-8 end to end: a page's encoding decided as a browser decides it, HTML fragments
/// read as the UTF-8 they are, and every cut made between grapheme clusters.
@Suite struct TextEncodingTests {
    /// Real-world scripts, each a line: what every surface must carry unharmed.
    static let corpus = [
        "漢字かな交じり文、한국어 텍스트", "مرحبا بالعالم — العربية", "שלום עולם (עברית)", "Привет, мир", "Καλημέρα κόσμε",
        "สวัสดีชาวโลก", "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈", "e\u{301}te\u{301} Ångström", "café ☕ 漢字",
    ]

    func text(of html: [UInt8], charset: String?) throws -> String {
        let page = try HTMLDocument.parse(Data(html), url: nil, charset: charset).document
        let body = try #require(page.nodes.firstIndex { $0.name == "body" })
        return page.text(of: body)
    }

    // MARK: Sniffing

    @Test func aPageWithoutADeclarationIsUTF8WhenItsBytesAre() throws {
        let page = Array("<html><body><p>€ 1.299,00 – 漢字</p></body></html>".utf8)
        #expect(try text(of: page, charset: nil) == "€ 1.299,00 – 漢字")
        #expect(HTMLEncoding.sniff(Data(page), httpCharset: nil).origin == .validUTF8)
    }

    @Test func aPageWithoutADeclarationWhoseBytesAreNotUTF8IsWindows1252() throws {
        // 0x80 is the euro sign in windows-1252 (and a C1 control in ISO-8859-1).
        let page: [UInt8] = Array("<p>".utf8) + [0x80, 0x20, 0x31, 0x32, 0x20, 0xE9, 0x74, 0xE9] + Array("</p>".utf8)
        #expect(try text(of: page, charset: nil) == "€ 12 été")
        #expect(HTMLEncoding.sniff(Data(page), httpCharset: nil).origin == .fallback)
    }

    @Test func aByteOrderMarkWinsOverTheHeaderAndTheMeta() throws {
        let page = [0xEF, 0xBB, 0xBF] + Array("<meta charset=iso-8859-1><p>€ 漢字</p>".utf8)
        #expect(try text(of: page, charset: "windows-1251") == "€ 漢字")
        var utf16: [UInt8] = [0xFF, 0xFE]
        for unit in "<meta charset=utf-8><p>€ 漢字</p>".utf16 { utf16 += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        #expect(try text(of: utf16, charset: "utf-8") == "€ 漢字")
    }

    @Test func theHTTPCharsetWinsOverTheMeta() throws {
        let page = Array("<html><head><meta charset=\"windows-1252\"></head><body><p>€ 漢字</p></body></html>".utf8)
        #expect(try text(of: page, charset: "UTF-8") == "€ 漢字")
        #expect(HTMLEncoding.sniff(Data(page), httpCharset: "utf-8").origin == .http)
    }

    @Test func theMetaIsReadWithinTheFirstKibibyteAsTheStandardReadsIt() throws {
        // windows-1251 Cyrillic, declared by http-equiv, after a comment that mentions another charset.
        let cyrillic: [UInt8] = [0xCF, 0xF0, 0xE8, 0xE2, 0xE5, 0xF2] // Привет
        let head = Array("<!-- <meta charset=utf-8> --><meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1251\"><p>".utf8)
        #expect(try text(of: head + cyrillic + Array("</p>".utf8), charset: nil) == "Привет")
        // A `content` without http-equiv declares nothing; `iso-8859-1` names windows-1252.
        #expect(HTMLEncoding.prescan(UnsafeRawBufferPointer(start: nil, count: 0)) == nil)
        #expect(HTMLEncoding.sniff(Data("<meta content='text/html; charset=koi8-r'><p>x".utf8), httpCharset: nil).origin == .validUTF8)
        #expect(HTMLEncoding.sniff(Data("<meta charset='ISO-8859-1'>".utf8), httpCharset: nil).name == "windows-1252")
        // A `<meta>` that says UTF-16 was read as ASCII: it means UTF-8.
        #expect(HTMLEncoding.sniff(Data("<meta charset=utf-16>".utf8), httpCharset: nil).name == "UTF-8")
        // Past the first 1,024 bytes a declaration is not looked for.
        let late = Data((String(repeating: " ", count: 1100) + "<meta charset=windows-1251>").utf8)
        #expect(HTMLEncoding.sniff(late, httpCharset: nil).origin == .validUTF8)
        // A label nobody knows is passed over.
        #expect(HTMLEncoding.sniff(Data("<p>x".utf8), httpCharset: "no-such-charset").origin == .validUTF8)
    }

    @Test func aBodyCutInsideACharacterIsStillUTF8() {
        let bytes = Array("漢字".utf8).dropLast()
        #expect(bytes.withUnsafeBytes { HTMLEncoding.isUTF8($0) })
        #expect([UInt8]([0xC3, 0x28]).withUnsafeBytes { !HTMLEncoding.isUTF8($0) })
        #expect([UInt8]([0xED, 0xA0, 0x80]).withUnsafeBytes { !HTMLEncoding.isUTF8($0) }) // a surrogate
    }

    @Test func anHTMLFragmentIsReadAsTheUTF8ItIs() {
        for line in Self.corpus {
            #expect(HTMLDocument.text(ofFragment: "<p>\(line)</p>") == line)
            // Whatever a <meta> inside says: a Swift string's bytes are UTF-8.
            #expect(HTMLDocument.text(ofFragment: "<meta charset=iso-8859-1><b>\(line)</b>") == line)
        }
        #expect(NotificationText.readable("<p>café ☕ 漢字</p>") == "café ☕ 漢字")
    }

    // MARK: Cuts

    @Test func aCutNeverSplitsAGraphemeCluster() {
        let family = "👨‍👩‍👧‍👦", thumb = "👍🏽", accented = "e\u{301}\u{302}"
        for unit in [family, thumb, accented, "漢", "🏳️‍🌈"] {
            let text = String(repeating: unit, count: 40)
            for limit in 2...60 {
                let capped = TerminalText.capped(text, to: limit)
                #expect(capped.unicodeScalars.count <= limit)
                // Every cluster kept is whole: the text without its "…" is whole units.
                let kept = capped.hasSuffix("…") ? String(capped.dropLast()) : capped
                #expect(kept.allSatisfy { String($0) == unit }, "\(unit) at \(limit): \(kept.unicodeScalars.map { String($0.value, radix: 16) })")
            }
        }
        // A made-up cluster of a million marks is cut by the count, at the cost of the limit.
        let hostile = "a" + String(repeating: "\u{301}", count: 1_000_000)
        #expect(TerminalText.capped(hostile, to: 100).unicodeScalars.count == 100)
    }

    @Test func notificationsCutBetweenClustersForEveryMarkup() {
        let summary = String(repeating: "👍🏽家族👨‍👩‍👧‍👦 e\u{301} ", count: 2_000)
        for (markup, limit) in [(NotificationText.Markup.discord, NotificationText.Limit.characters(2000)), (.html, .characters(4096)), (.plain, .bytes(4096)), (.slack, .characters(300)), (.html, .bytesWithBreaks(30_000))] {
            for overflow in NotificationText.Overflow.allCases {
                let text = NotificationText(markup: markup, limit: limit, overflow: overflow)
                let delivery = Delivery.item(Item(id: "1", title: "café ☕ 漢字", link: "https://x.example/a", summary: summary), source: "news", sourceTitle: nil)
                for message in text.messages(for: delivery, template: nil) {
                    #expect(limit.length(message) <= limit.maximum)
                    // Every family emoji sent is whole: as many men as children.
                    #expect(message.components(separatedBy: "👨").count == message.components(separatedBy: "👦").count, "\(markup) \(overflow)")
                    #expect(message.components(separatedBy: "👍").count == message.components(separatedBy: "🏽").count, "\(markup) \(overflow)")
                    #expect(message.contains("café ☕ 漢字") || overflow == .split)
                }
            }
        }
    }

    @Test func aTemplateIsNeverCutInsideAnEscape() throws {
        let template = try OutputTemplate("{title} {summary}")
        let summary = String(repeating: "a&b<c>\"d ", count: 600)
        for (markup, limit) in [(NotificationText.Markup.html, NotificationText.Limit.characters(4096)), (.slack, .characters(997)), (.discord, .characters(2000))] {
            for cut in 0..<12 {
                let text = NotificationText(markup: markup, limit: .characters(limit.maximum - cut))
                let delivery = Delivery.item(Item(id: "1", title: "T", summary: summary), source: "s", sourceTitle: nil)
                let message = try #require(text.messages(for: delivery, template: template).first)
                let body = message.hasSuffix("…") ? String(message.dropLast()) : message
                switch markup {
                case .html, .slack: #expect(!body.contains(/&[a-z]*$/), "\(markup) \(cut)")
                default: #expect(body.reversed().prefix { $0 == "\\" }.count % 2 == 0, "\(markup) \(cut)")
                }
            }
        }
    }

    @Test func aMatrixMessageCountsItsLineBreaksAsTheBrItSends() {
        let limit = NotificationText.Limit.bytesWithBreaks(30_000)
        let text = NotificationText(markup: .html, limit: limit)
        let deliveries = (1...2_000).map { Delivery.item(Item(id: "\($0)", title: "新しい記事 \($0)", link: "https://x.example/\($0)"), source: "news", sourceTitle: nil) }
        for message in text.digest(of: deliveries, template: nil) {
            #expect(MatrixOutput.lineBreaks(message).utf8.count <= 30_000)
        }
    }

    @Test func everyLineOfAMailIsWithin998BytesWhateverItsText() throws {
        let settings = EmailOutput.Settings(
            url: "smtp://127.0.0.1", from: "f@example.org", to: (1...60).map { "reader\($0)@example.org" },
            perItem: false, subject: try OutputTemplate("{title}")
        )
        let titles = [String(repeating: "a long ascii subject ", count: 80), String(repeating: "漢字", count: 600), "e" + String(repeating: "\u{301}", count: 2_000)]
        for title in titles {
            let deliveries = [Delivery.item(Item(id: String(repeating: "見", count: 400), title: title, summary: String(repeating: "👨‍👩‍👧‍👦", count: 500)), source: "s", sourceTitle: nil)]
            let message = EmailOutput.message(deliveries, settings: settings, template: nil, date: Date())
            let lines = message.components(separatedBy: "\r\n")
            #expect(lines.allSatisfy { $0.utf8.count <= 998 }, "\(lines.map(\.utf8.count).max() ?? 0)")
            // Headers are ASCII.
            let head = message.components(separatedBy: "\r\n\r\n")[0]
            #expect(head.unicodeScalars.allSatisfy { $0.isASCII })
        }
    }
}
