import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Writes a commented starter config.
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Write a commented starter config (one source of each built-in kind) where none exists."
        )

        @OptionGroup var configOptions: ConfigOptions

        func run() async throws {
            let path = configOptions.path
            var info = stat()
            if lstat(path, &info) == 0 {
                Console.error("\(path) already exists; fetchrun init writes a new config only where there is none (`fetchrun add URL` adds a feed to it)")
                throw ExitStatus.usage
            }
            try ConfigFile.write(Self.starter, to: path)
            Console.error("wrote \(path): `fetchrun validate` checks it, `fetchrun` fetches every source once, `fetchrun watch` keeps fetching")
        }

        /// What `init` writes: valid as it stands (the tests load it), every line explained.
        static let starter = """
        # fetchrun sources — one entry per source under `sources:`.
        # `fetchrun adapters` lists every type and its options; `fetchrun validate` checks this file.

        # Where snapshots and the state database live (relative to this file).
        state_dir: .fetchrun

        # Settings every source starts from; a source may override any of them.
        defaults:
          deadline: 30s      # a fetch that takes longer fails, and the others carry on
          interval: 15m      # watch mode: how often a source is fetched
          keep: 200          # items kept in a source's snapshot

        sources:
          # A feed: RSS, Atom or JSON Feed, over http(s) or from a file (file:path).
          # `fetchrun add URL` finds a site's feed and adds it here; `fetchrun import subs.opml`
          # brings the feeds of another reader.
          - name: lwn
            type: rss
            url: https://lwn.net/headlines/rss
            tags: [linux, news]

          # A synthetic source: road-traffic updates, for trying fetchrun without a network.
          - name: traffic
            type: traffic
            min: 0
            max: 2

          # A mock that finds a new story half of the time.
          - name: coin-news
            type: random-news
            probability: 0.5

          # Your own program as a source (docs/plugins.md): it prints one JSON item per line.
          # No shell is involved: `command` is the program and its arguments.
          - name: hello-plugin
            type: exec
            command: [/bin/sh, -c, 'printf ''{"id": "hello", "title": "Hello from a plugin"}\\n''']

        """
    }

    /// Finds a site's feed and adds it to the config.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a feed to the config: a feed's URL, or a web page whose feeds are found in its <link rel=\"alternate\"> tags.",
            discussion: "The feed is fetched and read before it is added; nothing else in the config changes. A config that does not exist yet is created."
        )

        @OptionGroup var configOptions: ConfigOptions

        @Argument(help: "The feed's or the site's http(s) URL.")
        var url: String

        @Option(help: ArgumentHelp("The source's name (default: from the feed's title).", valueName: "name"))
        var name: String?

        @Option(help: ArgumentHelp("Give up after this long.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var deadline: Duration = .seconds(30)

        func validate() throws {
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
            try await withRunning(client) { try await add(url, existing: existing, text: text, path: path, client: client) }
        }

        /// Fetches `url`, or the feed the page there links to, and appends it to the config.
        private func add(_ url: String, existing: FetchConfig?, text: String, path: String, client: CurlHTTPClient) async throws {
            let end = ContinuousClock.now + deadline
            var (response, feed) = try await fetch(url, client: client, deadline: end)
            var feedURL = url
            if feed == nil {
                guard FeedDiscovery.looksLikeHTML(response.body, contentType: response.headers["content-type"]) else {
                    Console.error("\(TerminalText.safe(url)): neither a feed nor a web page that links to one")
                    throw ExitStatus.someSourcesFailed
                }
                let offers = FeedDiscovery.offers(inHTML: response.body, pageURL: response.effectiveURL)
                guard let first = offers.first else {
                    Console.error("\(TerminalText.safe(url)): a web page with no <link rel=\"alternate\"> to an RSS, Atom or JSON feed; give the feed's own URL")
                    throw ExitStatus.someSourcesFailed
                }
                for other in offers.dropFirst() { Console.error("the page also offers \(TerminalText.safe(other.url))" + (other.title.map { " (\(TerminalText.safe($0)))" } ?? "")) }
                feedURL = first.url
                (response, feed) = try await fetch(feedURL, client: client, deadline: end)
                guard feed != nil else {
                    Console.error("\(TerminalText.safe(feedURL)) (linked from \(TerminalText.safe(url))) is not a feed fetchrun can read")
                    throw ExitStatus.someSourcesFailed
                }
            }
            guard let feed else { return }
            if let known = existing?.sources.first(where: { ($0.adapter as? RSSAdapter)?.fetcher.url == feedURL }) {
                Console.error("\(TerminalText.safe(feedURL)) is already in \(path) as '\(known.name)'")
                return
            }
            let taken = Set(existing?.sources.map(\.name) ?? [])
            if let name, taken.contains(name) {
                Console.error("\(path) already has a source named '\(name)'; choose another with --name")
                throw ExitStatus.usage
            }
            let sourceName = name ?? ConfigEditor.sourceName(title: feed.title, url: feedURL, taken: taken)
            let updated = try ConfigFile.append([ConfigEditor.NewSource(name: sourceName, type: RSSAdapter.type, fields: [("url", feedURL)])], to: text, path: path)
            try ConfigFile.write(updated, to: path)
            print("added \(sourceName)  \(TerminalText.safe(feedURL))  (\(feed.format.rawValue), \(feed.items.count) item\(feed.items.count == 1 ? "" : "s")" + (feed.title.map { ": \(TerminalText.safe($0))" } ?? "") + ")")
        }

        /// The response, and the feed in it when it is one.
        private func fetch(_ url: String, client: CurlHTTPClient, deadline: ContinuousClock.Instant) async throws -> (HTTPResponse, Feed?) {
            let request = HTTPRequest(url: url, headers: [("Accept", SourceFetcher.feedAccept + ", text/html;q=0.7")], deadline: deadline)
            let response: HTTPResponse
            do {
                response = try await withDeadline(deadline) { try await client.execute(request) }
            } catch is DeadlineExceeded {
                Console.error("\(TerminalText.safe(url)): no answer within \(DurationText.format(self.deadline))")
                throw ExitStatus.someSourcesFailed
            } catch {
                Console.error("\(TerminalText.safe(HTTPText.removingCredentials(from: url))): \((error as? HTTPError)?.message ?? "\(error)")")
                throw ExitStatus.someSourcesFailed
            }
            guard response.isSuccess else {
                Console.error("HTTP \(response.status) from \(TerminalText.safe(HTTPText.removingCredentials(from: url)))")
                throw ExitStatus.someSourcesFailed
            }
            let feed = try? await FeedParser(baseURL: response.effectiveURL).parseOffPool(response.body, charset: response.charset)
            return (response, feed)
        }
    }
}
