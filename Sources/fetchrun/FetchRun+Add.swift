import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Adds a source to the config: a feed (found from a page when needed), a part of a web
    /// page, or a JSON API.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a source to the config: a feed's URL, or a web page whose feeds are found in its <link rel=\"alternate\"> tags; with --type page or json, a part of a web page or a JSON API.",
            discussion: "The source is fetched and read before it is added, and is added only when that worked; nothing else in the config changes. A config that does not exist yet is created. Without --css or --select, a page source watches the page's main content and a json source an array of entries as items (else the whole document), as `fetchrun probe` suggests."
        )

        enum Kind: String, ExpressibleByArgument, CaseIterable {
            case rss, page, json
        }

        /// The other feeds of a page listed one per line; past these, a count.
        static let listedOffers = 10

        @OptionGroup var configOptions: ConfigOptions

        @Argument(help: "The feed's or the site's http(s) URL.")
        var url: String

        @Option(help: ArgumentHelp("The source's name (default: from the feed's title).", valueName: "name"))
        var name: String?

        @Option(help: ArgumentHelp("Give up after this long.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var deadline: Duration = .seconds(30)

        @Option(help: "What to add: rss (a feed), page (a part of a web page) or json (a JSON API).")
        var type: Kind = .rss

        @Option(help: ArgumentHelp("With --type page: the CSS selector of the part to watch (default: the page's main content).", valueName: "selector"))
        var css: String?

        @Option(help: ArgumentHelp("With --type page: an XPath 1.0 expression for the part to watch, instead of --css.", valueName: "expression"))
        var xpath: String?

        @Option(help: ArgumentHelp("With --type json: the JSONPath of the value to watch (default: an array of entries as items).", valueName: "path"))
        var select: String?

        func validate() throws {
            if type != .page, css != nil || xpath != nil { throw ValidationError("--css and --xpath go with --type page") }
            if css != nil, xpath != nil { throw ValidationError("--css or --xpath, not both") }
            if type != .json, select != nil { throw ValidationError("--select goes with --type json") }
            let lowered = url.lowercased()
            guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else { throw ValidationError("'\(TerminalText.safe(url))' is not an http(s) URL") }
            if let name, !ConfigLoader.isValidName(name) { throw ValidationError("'\(TerminalText.safe(name))' is not a source name: it must match \(ConfigLoader.namePattern)") }
        }

        func run() async throws {
            let path = configOptions.path
            let exists = FileManager.default.fileExists(atPath: path)
            let existing = exists ? try await configOptions.load() : nil
            let text = exists ? try ConfigFile.readText(path) : ""
            let client = CurlHTTPClient()
            if type == .rss {
                try await withRunning(client) { try await add(url, existing: existing, text: text, path: path, client: client) }
            } else {
                try await withRunning(client) { try await addWatch(existing: existing, text: text, path: path, client: client) }
            }
        }

        /// Fetches `url` as a page or a JSON document, makes a source of it (the options given,
        /// else what ``SourceSuggestion`` finds), checks that the source yields something, and
        /// appends it to the config.
        private func addWatch(existing: FetchConfig?, text: String, path: String, client: CurlHTTPClient) async throws {
            let fetcher = {
                var fetcher = SourceFetcher(url: url)
                fetcher.accept = type == .page ? PageAdapter.accept : JSONAdapter.accept
                return fetcher
            }()
            let reading: SourceSuggestion.Reading
            do {
                reading = try await withDeadline(client.now + deadline, on: client.clock) {
                    guard case .new(let response, _) = try await fetcher.fetchBody(using: client, deadline: client.now + deadline) else {
                        throw FetchFailure(.httpStatus, "\(fetcher.displayURL): 304 Not Modified without validators sent")
                    }
                    return try await SourceSuggestion.read(response, base: response.effectiveURL, from: fetcher.displayURL)
                }
            } catch is DeadlineExceeded {
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(fetcher.displayURL)): no answer within \(DurationText.format(deadline))")
            } catch {
                throw CommandFailure(ExitStatus.someSourcesFailed, TerminalText.safe("\(error)"))
            }
            let taken = Set(existing?.sources.map(\.name) ?? [])
            var source: ConfigEditor.NewSource
            switch (type, reading) {
            case (.page, .page(let page)):
                let selector = css.map { [("css", $0)] } ?? xpath.map { [("xpath", $0)] } ?? page.css.map { [("css", $0)] } ?? []
                source = ConfigEditor.NewSource(name: ConfigEditor.sourceName(title: page.title, url: url, taken: taken), type: PageAdapter.type, fields: [("url", url)] + selector)
            case (.json, .json(let document)):
                source = ConfigEditor.NewSource(name: ConfigEditor.sourceName(title: nil, url: url, taken: taken), type: JSONAdapter.type, fields: [("url", url)])
                if let path = select ?? document.select {
                    source.fields.append(("select", path))
                } else {
                    source.maps.append(("items", document.items))
                }
            case (_, .feed):
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(fetcher.displayURL)) is a feed: add it without --type, as an rss source")
            case (_, .json):
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(fetcher.displayURL)) is a JSON document: add it with --type json")
            case (_, .page):
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(fetcher.displayURL)) is a web page: add it with --type page")
            }
            // One URL may be watched for several parts, each named by its own selector.
            if css == nil, xpath == nil, select == nil, let known = existing?.sources.first(where: { $0.type == source.type && Self.url(of: $0) == url }) {
                Console.error("\(TerminalText.safe(fetcher.displayURL)) is already in \(path) as '\(known.name)'; \(type == .page ? "--css" : "--select") adds a source for another part of it")
                return
            }
            if let name {
                guard !taken.contains(name) else {
                    throw CommandFailure(ExitStatus.usage, "\(path) already has a source named '\(name)'; choose another with --name")
                }
                source.name = name
            }
            let (updated, config) = try ConfigFile.appendLoading([source], to: text, path: path)
            guard let added = config.sources.first(where: { $0.name == source.name }) else { return }
            // Added only when it yields something: a selector that matches nothing says so now.
            let fetched = try await TestSource.fetchOnce(added, config: config)
            try ConfigFile.write(updated, to: path)
            let what = source.fields.dropFirst().map { "\($0.key): \($0.value)" } + source.maps.map { "items: \($0.entries.first?.value ?? "")" }
            let watched = (added.adapter as? any SelectionWatching)?.watchesOneSelection == true
            let yield = watched
                ? "\(fetched.items.first?.summary?.split(separator: "\n").count ?? 0) lines watched"
                : "\(fetched.items.count) item\(fetched.items.count == 1 ? "" : "s")"
            print("added \(source.name)  \(TerminalText.safe(fetcher.displayURL))  (\(source.type)" + what.map { ", " + TerminalText.safe($0) }.joined() + "; \(yield))")
            print("`fetchrun test-source \(source.name)` shows what it watches")
        }

        private static func url(of source: SourceConfig) -> String? {
            (source.adapter as? PageAdapter)?.fetcher.url ?? (source.adapter as? JSONAdapter)?.fetcher.url
        }

        /// Fetches `url`, or the feed the page there links to, and appends it to the config.
        private func add(_ url: String, existing: FetchConfig?, text: String, path: String, client: CurlHTTPClient) async throws {
            let end = client.now + deadline
            var (response, feed) = try await fetch(url, client: client, deadline: end)
            var feedURL = url
            if feed == nil {
                guard FeedDiscovery.looksLikeHTML(response.body, contentType: response.headers["content-type"]) else {
                    throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(url)): neither a feed nor a web page that links to one")
                }
                let offers = FeedDiscovery.offers(inHTML: response.body, pageURL: response.effectiveURL)
                guard let first = offers.first else {
                    throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(url)): a web page with no <link rel=\"alternate\"> to an RSS, Atom or JSON feed; give the feed's own URL")
                }
                // A page may link to thousands: a few are worth a line each, the rest a count.
                let others = offers.dropFirst()
                for other in others.prefix(Self.listedOffers) { Console.error("the page also offers \(TerminalText.safe(other.url))" + (other.title.map { " (\(TerminalText.safe($0)))" } ?? "")) }
                if others.count > Self.listedOffers { Console.error("the page offers \(others.count - Self.listedOffers) more feeds, not listed") }
                feedURL = first.url
                (response, feed) = try await fetch(feedURL, client: client, deadline: end)
                guard feed != nil else {
                    throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(feedURL)) (linked from \(TerminalText.safe(url))) is not a feed fetchrun can read")
                }
            }
            guard let feed else { return }
            if let known = existing?.sources.first(where: { ($0.adapter as? RSSAdapter)?.fetcher.url == feedURL }) {
                Console.error("\(TerminalText.safe(feedURL)) is already in \(path) as '\(known.name)'")
                return
            }
            let taken = Set(existing?.sources.map(\.name) ?? [])
            if let name, taken.contains(name) {
                throw CommandFailure(ExitStatus.usage, "\(path) already has a source named '\(name)'; choose another with --name")
            }
            let sourceName = name ?? ConfigEditor.sourceName(title: feed.title, url: feedURL, taken: taken)
            let updated = try ConfigFile.append([ConfigEditor.NewSource(name: sourceName, type: RSSAdapter.type, fields: [("url", feedURL)])], to: text, path: path)
            try ConfigFile.write(updated, to: path)
            print("added \(sourceName)  \(TerminalText.safe(feedURL))  (\(feed.format.rawValue), \(feed.items.count) item\(feed.items.count == 1 ? "" : "s")" + (feed.title.map { ": \(TerminalText.safe($0))" } ?? "") + ")")
        }

        /// The response, and the feed in it when it is one.
        private func fetch(_ url: String, client: CurlHTTPClient, deadline: ContinuousClock.Instant) async throws -> (HTTPResponse, Feed?) {
            let request = HTTPRequest(url: url, headers: [("Accept", Probe.accept)], deadline: deadline)
            let response: HTTPResponse
            do {
                response = try await withDeadline(deadline) { try await client.execute(request) }
            } catch is DeadlineExceeded {
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(url)): no answer within \(DurationText.format(self.deadline))")
            } catch {
                throw CommandFailure(ExitStatus.someSourcesFailed, "\(TerminalText.safe(HTTPText.removingCredentials(from: url))): \((error as? HTTPError)?.message ?? "\(error)")")
            }
            guard response.isSuccess else {
                throw CommandFailure(ExitStatus.someSourcesFailed, "HTTP \(response.status) from \(TerminalText.safe(HTTPText.removingCredentials(from: url)))")
            }
            let feed = try? await FeedParser(baseURL: response.effectiveURL).parseOffPool(response.body, charset: response.charset)
            return (response, feed)
        }
    }
}
