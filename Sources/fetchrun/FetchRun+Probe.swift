import ArgumentParser
import FetchRunBrowser
import FetchRunKit
import Foundation
import Logging

extension FetchRun {
    /// Fetches one URL with no config and no state: a feed's items, or a source for a page or a JSON API.
    struct Probe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "probe",
            abstract: "Fetch one URL or file without config or state: a feed's items, or for a web page or a JSON API what it holds and a source to watch it with.",
            discussion: "A web page: the feeds it links to, else a page source over its main content, with that content's text. A JSON document: an array of entries as items, else the whole document watched. Exits 0 when it was read, 2 when it could not be fetched or read."
        )

        @Argument(help: "An http(s) URL, or the path of a local feed file.")
        var location: String

        @OptionGroup var output: OutputOptions

        @Option(help: ArgumentHelp("Give up after this long.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var deadline: Duration = .seconds(30)

        @Option(help: ArgumentHelp("Largest body accepted, in bytes, after decompression.", valueName: "bytes"))
        var maxBytes: Int = HTTPRequest.defaultMaxBodyBytes

        enum Render: String, ExpressibleByArgument, CaseIterable {
            case plain, browser
        }

        @Option(help: ArgumentHelp("browser: load the page in a headless Chromium (found on PATH) and read what its scripts built.", valueName: "plain|browser"))
        var render: Render = .plain

        func run() async throws {
            output.bootstrapLogging()
            let fetcher = {
                var fetcher = SourceFetcher(url: url, maxBodyBytes: maxBytes)
                fetcher.accept = Self.accept
                return fetcher
            }()
            let client = CurlHTTPClient()
            let response: HTTPResponse
            let reading: SourceSuggestion.Reading
            let renderer = render == .browser ? ChromiumRenderer(settings: BrowserSettings(tabs: 1), clock: client.clock, http: client, logger: Logger(label: "fetchrun")) : nil
            if renderer != nil, fetcher.isFileURL {
                throw CommandFailure(ExitStatus.usage, "--render browser loads http:// and https:// pages, not files")
            }
            do {
                let fetched: Result<(HTTPResponse, SourceSuggestion.Reading), any Error>
                do {
                    fetched = .success(try await withRunning(client) {
                        try await withDeadline(client.now + deadline, on: client.clock) {
                            let response: HTTPResponse
                            if let renderer {
                                var request = RenderRequest(url: fetcher.url, displayURL: fetcher.displayURL)
                                request.maxBodyBytes = maxBytes
                                let started = client.now
                                let page = try await renderer.render(request)
                                response = HTTPResponse(
                                    status: page.status ?? 200, headers: ["content-type": "text/html; charset=utf-8"], body: Data(page.html.utf8),
                                    effectiveURL: page.finalURL, duration: client.now - started
                                )
                            } else {
                                guard case .new(let fetched, _) = try await fetcher.fetchBody(using: client, deadline: client.now + deadline) else {
                                    throw FetchFailure(.httpStatus, "\(fetcher.displayURL): 304 Not Modified without validators sent")
                                }
                                response = fetched
                            }
                            return (response, try await SourceSuggestion.read(response, base: fetcher.isFileURL ? nil : response.effectiveURL, from: fetcher.displayURL))
                        }
                    })
                } catch {
                    fetched = .failure(error)
                }
                // No browser outlives the command.
                await renderer?.shutdown()
                (response, reading) = try fetched.get()
            } catch is DeadlineExceeded {
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(location): deadline exceeded after \(DurationText.format(deadline))")
            } catch {
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(error)")
            }
            let suggested = suggestion(for: reading, response: response)
            switch (output.format, reading) {
            case (.text, .feed(let feed)):
                Console.out(TextReport(style: Console.stdoutStyle).lines(forProbe: feed.withinItemLimits(), response: response, location: location))
            case (.json, .feed(let feed)):
                Console.out(JSONEvents.lines(forProbe: feed.withinItemLimits(), response: response, location: location))
            case (.text, _):
                Console.out(TextReport(style: Console.stdoutStyle).lines(forProbe: reading, response: response, location: location, suggested: suggested.map { ConfigEditor.lines(for: $0, indent: 2) } ?? []))
            case (.json, _):
                Console.out(JSONEvents.lines(forProbe: reading, response: response, location: location, suggested: suggested))
            }
        }

        /// Feeds first, then pages (`add` asks the same): probe takes whichever the server has.
        static let accept = SourceFetcher.feedAccept + ", text/html;q=0.7"

        /// The source to paste for a page or a JSON API: a feed the page links to comes first.
        private func suggestion(for reading: SourceSuggestion.Reading, response: HTTPResponse) -> ConfigEditor.NewSource? {
            let sourceURL = location.contains("://") ? location : "file:" + location
            switch reading {
            case .feed:
                return nil
            case .page(let page):
                if let feed = page.feeds.first {
                    return ConfigEditor.NewSource(name: ConfigEditor.sourceName(title: feed.title ?? page.title, url: feed.url, taken: []), type: RSSAdapter.type, fields: [("url", feed.url)])
                }
                let rendered = render == .browser ? [("render", "browser")] : []
                return ConfigEditor.NewSource(name: ConfigEditor.sourceName(title: page.title, url: sourceURL, taken: []), type: PageAdapter.type, fields: [("url", sourceURL)] + rendered + (page.css.map { [("css", $0)] } ?? []))
            case .json(let document):
                let name = ConfigEditor.sourceName(title: nil, url: sourceURL, taken: [])
                if let select = document.select { return ConfigEditor.NewSource(name: name, type: JSONAdapter.type, fields: [("url", sourceURL), ("select", select)]) }
                return ConfigEditor.NewSource(name: name, type: JSONAdapter.type, fields: [("url", sourceURL)], maps: [("items", document.items)])
            }
        }

        /// A path becomes a `file:` URL; anything with a scheme is taken as written.
        var url: String {
            if location.contains("://") { return location }
            return URL(fileURLWithPath: location).standardizedFileURL.absoluteString
        }
    }
}
