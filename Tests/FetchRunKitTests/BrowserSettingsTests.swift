import Foundation
import Testing
@testable import FetchRunBrowser
@testable import FetchRunKit

/// `render: browser`'s settings as a config writes them, the request a page source makes, and
/// the renderer's pieces that need no browser: the tab pool, origins, the DevTools address.
@Suite struct BrowserSettingsTests {
    func load(_ text: String) throws(ConfigError) -> FetchConfig {
        try ConfigLoader(environment: [:]).load(text: text, file: "sources.yaml", directory: "/etc/fetchrun")
    }

    func problems(_ text: String) -> [String] {
        do {
            _ = try load(text)
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    @Test func aRenderedPageCarriesItsSettingsIntoItsRequest() throws {
        let config = try load("""
            browser: { command: [/usr/bin/chromium, --lang=uk], tabs: 2 }
            sources:
              - name: shop
                type: page
                url: https://shop.example/товар
                render: browser
                css: "#price"
                wait_for: "#price .amount"
                wait: 500ms
                block: [images, scripts]
                screenshot: true
                keep_session: true
                headers: { X-Token: "a" }
                cookies: { session: "s" }
                user_agent: "Shop watcher/1"
                proxy: "http://proxy.example:3128"
              - { name: plain, type: page, url: "https://example.org/", css: h1 }
            """)
        #expect(config.browser == BrowserSettings(command: ["/usr/bin/chromium", "--lang=uk"], tabs: 2))
        #expect(config.needsBrowser && config.sources[0].rendersInBrowser && !config.sources[1].rendersInBrowser)
        let adapter = try #require(config.sources[0].adapter as? PageAdapter)
        let request = try #require(adapter.render).request(for: adapter.fetcher, source: "shop")
        #expect(request.wait == RenderWait(selector: "#price .amount", settle: .milliseconds(500)))
        #expect(request.block == [.images, .scripts] && request.screenshot == .element("#price"))
        #expect(request.headers.map(\.name) == ["X-Token"] && request.cookies == ["session": "s"])
        #expect(request.userAgent == "Shop watcher/1" && request.proxy == "http://proxy.example:3128")
        #expect(request.session == "shop")
        // Without user_agent, the browser keeps its own.
        let plainAgent = try load("sources:\n  - { name: p, type: page, url: \"https://example.org/\", render: browser }")
        let page = try #require(plainAgent.sources[0].adapter as? PageAdapter)
        #expect(try #require(page.render).request(for: page.fetcher, source: "p").userAgent == nil)
        #expect(try #require(page.render).request(for: page.fetcher, source: "p").block == BlockedResource.standard)
        #expect(try #require(page.render).request(for: page.fetcher, source: "p").session == nil)
        #expect(!(try load("sources:\n  - { name: p, type: page, url: \"https://example.org/\" }")).needsBrowser)
    }

    @Test func mistakesAreNamedWithTheirPlace() {
        let found = problems("""
            browser: { command: [], tabs: 0, url: "ftp://x", colour: red }
            sources:
              - { name: a, type: page, url: "https://example.org/", render: chrome }
              - { name: b, type: page, url: "https://example.org/", wait_for: "#x", screenshot: true }
              - { name: c, type: page, url: "file:page.html", render: browser }
              - { name: d, type: page, url: "https://example.org/", render: browser, wait_for: "div[", block: [images, popups] }
              - { name: e, type: page, url: "https://example.org/", render: browser, proxy: "http://user:secret@proxy.example:3128" }
            """)
        let text = found.joined(separator: "\n")
        #expect(text.contains("'browser' 'command' must name a program"), "\(text)")
        #expect(text.contains("'tabs'") && text.contains("'browser' 'url' must be a ws://"), "\(text)")
        #expect(text.contains("unknown key 'colour'"), "\(text)")
        #expect(text.contains("'render' must be plain or browser, not 'chrome'"), "\(text)")
        #expect(text.contains("'wait_for' applies to pages fetched with render: browser") && text.contains("'screenshot' applies to pages fetched with render: browser"), "\(text)")
        #expect(text.contains("render: browser loads http:// and https:// pages, not files"), "\(text)")
        #expect(text.contains("'wait_for': not a CSS selector"), "\(text)")
        #expect(text.contains("'block': 'popups' is not one of images, fonts, media, stylesheets, scripts"), "\(text)")
        #expect(text.contains("cannot send a proxy's user name and password") && !text.contains("secret"), "\(text)")
        // Each says where: line and column.
        #expect(found.allSatisfy { $0.contains("sources.yaml:") }, "\(found)")
        #expect(problems("browser: { command: [chromium], url: \"ws://127.0.0.1:9222/devtools/browser/x\" }\nsources: []").joined().contains("not both"))
    }

    @Test func theTabPoolHandsSlotsOutInTurnAndAWaitEndsWhenCancelled() async throws {
        let slots = TabSlots(count: 1)
        try await slots.acquire()
        let order = Locked<[String]>([])
        let second = Task {
            try await slots.acquire()
            order.withLock { $0.append("second") }
        }
        let cancelled = Task {
            try await slots.acquire()
            order.withLock { $0.append("cancelled") }
        }
        // Both wait: the only slot is taken. The cancelled wait ends at once, holding nothing.
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        slots.release()
        try await second.value
        #expect(order.withLock { $0 } == ["second"])
        slots.release()
        // The slot came back: a new render takes it without waiting.
        try await slots.acquire()
        slots.release()
    }

    @Test func originsAndLiteralsAreWhatThePageRunsAgainst() {
        // The page's headers go where HTTPText.origin says a request's own origin is.
        #expect(HTTPText.origin(of: "https://Shop.example/a?b") == "https://shop.example")
        #expect(HTTPText.origin(of: "http://shop.example:8080/") == "http://shop.example:8080")
        #expect(HTTPText.origin(of: "https://shop.example:443/x") == HTTPText.origin(of: "https://shop.example/y"))
        #expect(HTTPText.origin(of: "http://localhost:80/") != HTTPText.origin(of: "http://127.0.0.1:80/"))
        #expect(HTTPText.origin(of: "file:///etc/passwd") == nil && HTTPText.origin(of: "data:text/html,x") == nil)
        // A selector is handed to the page as a string literal, whatever it holds (a line
        // separator is allowed in one since ES2019).
        #expect(PageRender.literal("a[title=\"x\"]\u{2028}'); alert(1); ('") == "\"a[title=\\\"x\\\"]\u{2028}'); alert(1); ('\"")
    }

    @Test func theDevToolsAddressIsReadFromTheBrowsersLogOnlyWhenWellFormed() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-devtools-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let process = ChromiumProcess(pid: 0, profile: folder, webSocketURL: "")
        func log(_ text: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/chromium.log")) }
        try log("[1:1:ERROR:dbus] no bus\n")
        #expect(process.listeningURL() == nil)
        try log("x\nDevTools listening on ws://127.0.0.1:40123/devtools/browser/3f2b-9c\n")
        #expect(process.listeningURL() == "ws://127.0.0.1:40123/devtools/browser/3f2b-9c")
        try log("DevTools listening on ws://127.0.0.1:99999/devtools/browser/x\nDevTools listening on ws://127.0.0.1:1/devtools/browser/a b\n")
        #expect(process.listeningURL() == nil)
        #expect(ChromiumProcess.arguments(profile: folder).contains("--remote-allow-origins=ws://127.0.0.1"))
        #expect(!ChromiumProcess.arguments(profile: folder).contains { $0.contains("remote-allow-origins=*") })
    }

    @Test func screenshotsAreKeptByTheirChangeAndTheNewestFiftyStay() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-shots-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let screenshots = ScreenshotFolder(stateDirectory: folder)
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var names: [String] = []
        for index in 0..<(ScreenshotFolder.keepPerSource + 3) {
            let record = ChangeRecord(id: "shop:change:\(String(index, radix: 16))f00d", source: "shop", kind: .change, at: Date(timeIntervalSince1970: 1_795_950_000 + Double(index)))
            let name = ScreenshotFolder.name(source: "shop", record: record)
            #expect(ScreenshotFolder.isName(name), "\(name)")
            try screenshots.save(png, as: name)
            names.append(name)
        }
        // The oldest three went; the others are there, private to the user.
        #expect(names.prefix(3).allSatisfy { screenshots.read($0) == nil })
        #expect(names.dropFirst(3).allSatisfy { screenshots.read($0) == png })
        let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/screenshots/shop")
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        // Nothing outside the folder is read by a name a record could hold.
        try Data("secret".utf8).write(to: URL(fileURLWithPath: folder + "/1-a.png"))
        #expect(screenshots.read("../1-a.png") == nil && screenshots.read("shop/../../1-a.png") == nil)
        // Nor through a link planted in the state folder: at the name, or as a source's folder.
        try FileManager.default.createSymbolicLink(atPath: folder + "/screenshots/shop/9-a.png", withDestinationPath: folder + "/1-a.png")
        #expect(screenshots.read("shop/9-a.png") == nil)
        try FileManager.default.createSymbolicLink(atPath: folder + "/screenshots/mill", withDestinationPath: folder)
        #expect(screenshots.read("mill/1-a.png") == nil)
        #expect(throws: ScreenshotFolder.WriteError.self) { try screenshots.save(png, as: "mill/2-b.png") }
        #expect(!FileManager.default.fileExists(atPath: folder + "/2-b.png"))
    }

    @Test func aBrowserThatIsNotThereIsNamed() {
        #expect(throws: ChromiumProcess.LaunchError.self) { try ChromiumProcess.executable(for: nil, environment: ["PATH": "/nonexistent"]) }
        do {
            _ = try ChromiumProcess.executable(for: ["no-such-browser\u{1b}[31m"], environment: ["PATH": "/usr/bin"])
            Issue.record("found a browser that is not there")
        } catch {
            #expect("\(error)".contains("not found") && !"\(error)".contains("\u{1b}"), "\(error)")
        }
    }
}
