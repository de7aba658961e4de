import FetchRunKit
import Foundation

/// One page rendered in a browser context of its own: made, attached, set up, navigated,
/// waited on, read, photographed — and disposed of by ``ChromiumRenderer`` however it ends.
///
/// While the page loads, a task answers the browser's events: a request of a blocked kind
/// fails, the source's headers go with requests to the page's own origin only, a dialog
/// (`alert`, `confirm`, `beforeunload`) is dismissed, and a crashed renderer fails the fetch.
struct PageRender: Sendable {
    let connection: CDPConnection
    let request: RenderRequest
    let clock: any FetchClock
    /// The browser context: disposing of it closes the page and every popup it opened.
    let contextID: String

    /// The size of the window pages are laid out in, and of a viewport screenshot.
    static let viewport = (width: 1280, height: 800)
    /// A screenshot's largest area: taller elements are cut at this height.
    static let screenshotLimit = (width: 1920, height: 4000)

    private static let resourceTypes: [BlockedResource: [String]] = [
        .images: ["Image"], .fonts: ["Font"], .media: ["Media"], .stylesheets: ["Stylesheet"], .scripts: ["Script"],
    ]

    /// What the event task saw, for the notes.
    private struct Seen: Sendable {
        var blocked = 0
        var dialogs: [String] = []
    }

    enum Failure: Error {
        case crashed
    }

    func run() async throws -> RenderedPage {
        let targetID = try await connection.send("Target.createTarget", ["url": .string("about:blank"), "browserContextId": .string(contextID)])["targetId"]?.stringValue ?? ""
        let session = try await connection.send("Target.attachToTarget", ["targetId": .string(targetID), "flatten": .bool(true)])["sessionId"]?.stringValue ?? ""
        let events = connection.events(of: session)
        defer { connection.unsubscribe(session) }
        try await setUp(session)

        let (lifecycle, lifecycleSink) = AsyncStream<(name: String, loader: String)>.makeStream()
        let seen = Locked(Seen())
        let origin = HTTPText.origin(of: request.url)
        return try await withThrowingTaskGroup(of: RenderedPage?.self) { group in
            group.addTask {
                defer { lifecycleSink.finish() }
                for await event in events {
                    try await answer(event, session: session, mainFrame: targetID, origin: origin, seen: seen, lifecycle: lifecycleSink)
                }
                try Task.checkCancellation()
                throw CDPError.closed("the browser closed the page")
            }
            group.addTask {
                try await load(session, lifecycle: lifecycle)
                var page = try await read(session, targetID: targetID)
                let seen = seen.withLock { $0 }
                if seen.blocked > 0 { page.notes.append("\(seen.blocked) request\(seen.blocked == 1 ? "" : "s") blocked (block:)") }
                for message in seen.dialogs { page.notes.append("a dialog dismissed: \(message)") }
                return page
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let page = result { return page }
            }
            throw CancellationError()
        }
    }

    /// The page's window, user agent, cookies and request interception, before it loads.
    private func setUp(_ session: String) async throws {
        try await connection.send("Page.enable", session: session)
        try await connection.send("Page.setLifecycleEventsEnabled", ["enabled": .bool(true)], session: session)
        try await connection.send("Emulation.setDeviceMetricsOverride", [
            "width": .number(Double(Self.viewport.width)), "height": .number(Double(Self.viewport.height)),
            "deviceScaleFactor": .number(1), "mobile": .bool(false),
        ], session: session)
        if let userAgent = request.userAgent {
            try await connection.send("Emulation.setUserAgentOverride", ["userAgent": .string(userAgent)], session: session)
        }
        if !request.cookies.isEmpty {
            let cookies = request.cookies.sorted { $0.key < $1.key }.map { name, value in
                JSONValue.object(["name": .string(name), "value": .string(value), "url": .string(request.url)])
            }
            try await connection.send("Storage.setCookies", ["cookies": .array(cookies), "browserContextId": .string(contextID)])
        }
        var patterns = request.block.flatMap { Self.resourceTypes[$0] ?? [] }.sorted().map { type in
            JSONValue.object(["resourceType": .string(type), "requestStage": .string("Request")])
        }
        // Every request is looked at when headers are to be added: only those to the page's
        // origin get them, so that a credential never reaches a host the page merely loads from.
        if !request.headers.isEmpty { patterns = [.object(["urlPattern": .string("*"), "requestStage": .string("Request")])] }
        if !patterns.isEmpty {
            try await connection.send("Fetch.enable", ["patterns": .array(patterns)], session: session)
        }
    }

    /// One event of the page's: requests, dialogs, lifecycle, a crash.
    private func answer(_ event: CDPConnection.Event, session: String, mainFrame: String, origin: String?, seen: Locked<Seen>, lifecycle: AsyncStream<(name: String, loader: String)>.Continuation) async throws {
        switch event.method {
        case "Fetch.requestPaused":
            guard let id = event.params["requestId"]?.stringValue else { return }
            let type = event.params["resourceType"]?.stringValue ?? ""
            let blockedTypes = Set(request.block.flatMap { Self.resourceTypes[$0] ?? [] })
            if blockedTypes.contains(type) {
                seen.withLock { $0.blocked += 1 }
                _ = try? await connection.send("Fetch.failRequest", ["requestId": .string(id), "errorReason": .string("BlockedByClient")], session: session)
                return
            }
            var params: [String: JSONValue] = ["requestId": .string(id)]
            let url = event.params["request"]?["url"]?.stringValue ?? ""
            if !request.headers.isEmpty, let origin, HTTPText.origin(of: url) == origin {
                var headers: [String: String] = [:]
                if case .object(let sent)? = event.params["request"]?["headers"] {
                    for (name, value) in sent { headers[name] = value.stringValue }
                }
                for (name, value) in request.headers {
                    for key in headers.keys where key.lowercased() == name.lowercased() { headers.removeValue(forKey: key) }
                    headers[name] = value
                }
                params["headers"] = .array(headers.sorted { $0.key < $1.key }.map { .object(["name": .string($0.key), "value": .string($0.value)]) })
            }
            _ = try? await connection.send("Fetch.continueRequest", params, session: session)
        case "Page.javascriptDialogOpening":
            let message = event.params["message"]?.stringValue ?? ""
            seen.withLock { seen in
                if seen.dialogs.count < 3 { seen.dialogs.append("'\(TerminalText.safe(message, maximumLength: 80))'") }
            }
            _ = try? await connection.send("Page.handleJavaScriptDialog", ["accept": .bool(false)], session: session)
        case "Page.lifecycleEvent":
            // The main frame's only: its id is the target's.
            guard event.params["frameId"]?.stringValue == mainFrame, let name = event.params["name"]?.stringValue,
                  let loader = event.params["loaderId"]?.stringValue else { return }
            lifecycle.yield((name, loader))
        case "Inspector.targetCrashed":
            throw Failure.crashed
        default:
            return
        }
    }

    /// Navigates, then waits for what the request says.
    private func load(_ session: String, lifecycle: AsyncStream<(name: String, loader: String)>) async throws {
        let navigated = try await connection.send("Page.navigate", ["url": .string(request.url)], session: session)
        if let error = navigated["errorText"]?.stringValue, !error.isEmpty {
            throw FetchFailure(.network, "\(request.displayURL): the browser could not load the page: \(TerminalText.safe(error, maximumLength: 200))")
        }
        if let selector = request.wait.selector {
            let test = "document.querySelector(\(Self.literal(selector))) !== null"
            while try await evaluate(test, session: session)?.boolValue != true {
                try await clock.sleep(for: .milliseconds(100))
            }
        } else {
            // The newest document of the main frame: a page that navigates on is followed.
            var loader = navigated["loaderId"]?.stringValue ?? ""
            var loaded = false
            for await event in lifecycle {
                if event.name == "init", event.loader != loader {
                    loader = event.loader
                    loaded = false
                }
                guard event.loader == loader else { continue }
                if event.name == "load" { loaded = true }
                if event.name == "networkIdle", loaded { break }
            }
            try Task.checkCancellation()
        }
        if let settle = request.wait.settle { try await clock.sleep(for: settle) }
    }

    /// The document as the browser holds it, where it ended up, its status and a screenshot.
    private func read(_ session: String, targetID: String) async throws -> RenderedPage {
        let length = try await evaluate("document.documentElement ? document.documentElement.outerHTML.length : 0", session: session)?.intValue ?? 0
        if length > request.maxBodyBytes {
            throw FetchFailure(.parse, "\(request.displayURL): the rendered page is larger than max_bytes (\(ByteSizeText.format(Int64(request.maxBodyBytes))))")
        }
        let document = try await connection.send("DOM.getDocument", ["depth": .number(0)], session: session)
        guard let root = document["root"]?["nodeId"]?.intValue else { throw FetchFailure(.parse, "\(request.displayURL): the browser returned no document") }
        let html = try await connection.send("DOM.getOuterHTML", ["nodeId": .number(Double(root))], session: session)["outerHTML"]?.stringValue ?? ""
        if html.utf8.count > request.maxBodyBytes {
            throw FetchFailure(.parse, "\(request.displayURL): the rendered page is larger than max_bytes (\(ByteSizeText.format(Int64(request.maxBodyBytes))))")
        }
        let info = try await connection.send("Target.getTargetInfo", ["targetId": .string(targetID)])
        let finalURL = info["targetInfo"]?["url"]?.stringValue ?? request.url
        let status = try await evaluate("(performance.getEntriesByType('navigation')[0] || {}).responseStatus || 0", session: session)?.intValue
        if let status, status >= 400 {
            throw FetchFailure(.httpStatus, "HTTP \(status) from \(request.displayURL) (rendered in the browser)")
        }
        var page = RenderedPage(html: html, finalURL: finalURL, status: status.flatMap { $0 > 0 ? $0 : nil })
        if let area = request.screenshot {
            let shot = try await screenshot(area, session: session)
            page.screenshot = shot.png
            if let note = shot.note { page.notes.append(note) }
        }
        return page
    }

    /// A PNG of `area`, within ``screenshotLimit`` and ``ScreenshotFolder/maximumBytes``.
    private func screenshot(_ area: ScreenshotArea, session: String) async throws -> (png: Data?, note: String?) {
        var clip: [Double] = [0, 0, Double(Self.viewport.width), Double(Self.viewport.height)]
        if case .element(let selector) = area {
            let script = "(() => { const e = document.querySelector(\(Self.literal(selector))); if (!e) return null; const r = e.getBoundingClientRect(); return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })()"
            if case .array(let numbers)? = try await evaluate(script, session: session) {
                let box = numbers.compactMap { value -> Double? in
                    if case .number(let number) = value { return number.value }
                    return nil
                }
                if box.count == 4, box[2] >= 1, box[3] >= 1, box.allSatisfy(\.isFinite) { clip = box }
            }
        }
        // Where the page says its element is, kept to what a page can be: a position it makes up
        // must not make the capture, and so the fetch, fail.
        clip[0] = min(max(0, clip[0]), 1_000_000)
        clip[1] = min(max(0, clip[1]), 1_000_000)
        clip[2] = min(clip[2], Double(Self.screenshotLimit.width))
        clip[3] = min(clip[3], Double(Self.screenshotLimit.height))
        let result = try await connection.send("Page.captureScreenshot", [
            "format": .string("png"), "captureBeyondViewport": .bool(true),
            "clip": .object(["x": .number(clip[0]), "y": .number(clip[1]), "width": .number(clip[2]), "height": .number(clip[3]), "scale": .number(1)]),
        ], session: session)
        guard let encoded = result["data"]?.stringValue, let png = Data(base64Encoded: encoded) else { return (nil, "no screenshot: the browser returned none") }
        guard png.count <= ScreenshotFolder.maximumBytes else {
            return (nil, "screenshot left out: \(ByteSizeText.format(Int64(png.count))) is more than \(ByteSizeText.format(Int64(ScreenshotFolder.maximumBytes)))")
        }
        return (png, nil)
    }

    /// `expression`'s value in the page, or `nil` when it threw or is not JSON.
    private func evaluate(_ expression: String, session: String) async throws -> JSONValue? {
        let result = try await connection.send("Runtime.evaluate", ["expression": .string(expression), "returnByValue": .bool(true)], session: session)
        if result["exceptionDetails"] != nil { return nil }
        return result["result"]?["value"]
    }

    /// `text` as a JavaScript string literal (JSON's is one).
    static func literal(_ text: String) -> String {
        var writer = JSONWriter(capacity: text.utf8.count + 2)
        writer.value(text)
        return writer.string
    }
}

extension JSONValue {
    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}
