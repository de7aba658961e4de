import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Appends the feeds of an OPML subscription list to the config.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Append the feeds of an OPML file (another reader's export) to the config as rss sources.",
            discussion: """
            Names come from the feeds' titles (made unique); the folders a feed sits in become its \
            tags. Feeds the config already has (by URL) are left out. Nothing else in the config \
            changes — comments and order stay — and the result is checked before it is written. \
            A config that does not exist yet is created.
            """
        )

        @OptionGroup var configOptions: ConfigOptions

        @Argument(help: ArgumentHelp("The OPML file.", valueName: "file.opml"))
        var file: String

        @Flag(help: "Print what would be appended; change nothing.")
        var dryRun = false

        func run() async throws {
            let path = configOptions.path
            let text: String
            let existing: FetchConfig?
            if FileManager.default.fileExists(atPath: path) {
                existing = try await configOptions.load()
                text = try ConfigFile.readText(path)
            } else {
                existing = nil
                text = ""
            }
            let feeds: [OPML.Feed]
            do {
                feeds = try OPML.read(try SafeFile.read(file, maxBytes: 64 << 20, followSymlinks: true))
            } catch let error as SafeFile.ReadError {
                throw CommandFailure(ExitStatus.invalidConfig, "\(TerminalText.safe(file)): cannot read the OPML file: \(error.description)")
            } catch {
                throw CommandFailure(ExitStatus.invalidConfig, "\(TerminalText.safe(file)): \(error)")
            }

            var names = ConfigEditor.SourceNames(taken: Set(existing?.sources.map(\.name) ?? []))
            var knownURLs = [String: String]()
            for source in existing?.sources ?? [] {
                guard let feed = source.adapter as? RSSAdapter else { continue }
                knownURLs[feed.fetcher.url] = source.name
                knownURLs[feed.fetcher.displayURL] = source.name
            }
            var added: [ConfigEditor.NewSource] = []
            var skipped: [String] = []
            var shortened = 0
            for feed in feeds {
                let shown = TerminalText.safe(feed.url)
                let lowered = feed.url.lowercased()
                guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
                    skipped.append("\(shown): not an http(s) URL")
                    continue
                }
                if let name = knownURLs[feed.url] {
                    skipped.append("\(shown): already in the config as '\(name)'")
                    continue
                }
                let name = names.name(title: feed.title, url: feed.url)
                knownURLs[feed.url] = name
                added.append(ConfigEditor.NewSource(name: name, type: RSSAdapter.type, fields: [("url", feed.url)], tags: feed.tags))
                if feed.tagsShortened { shortened += 1 }
            }
            Console.error(skipped.map { "skipped \($0)" })
            guard !added.isEmpty else {
                Console.error("nothing to add from \(file) (\(feeds.count) feed\(feeds.count == 1 ? "" : "s") in it)")
                return
            }
            let updated = try ConfigFile.append(added, to: text, path: path)
            if shortened > 0 {
                Console.error("\(shortened) \(shortened == 1 ? "feed sits" : "feeds sit") in more than \(OPML.maximumTags) folders or under a folder title longer than \(OPML.maximumTagBytes) bytes: their tags are the outermost \(OPML.maximumTags) folders, each cut to \(OPML.maximumTagBytes) bytes")
            }
            if dryRun {
                for source in added {
                    print("would add \(source.name)  \(TerminalText.safe(source.fields[0].value))" + (source.tags.isEmpty ? "" : "  [\(source.tags.map { TerminalText.safe($0) }.joined(separator: ", "))]"))
                }
                Console.error("dry run: \(added.count) source\(added.count == 1 ? "" : "s") would be added to \(path); nothing written")
                return
            }
            try ConfigFile.write(updated, to: path)
            for source in added { print("added \(source.name)  \(TerminalText.safe(source.fields[0].value))") }
            Console.error("\(added.count) source\(added.count == 1 ? "" : "s") added to \(path)" + (skipped.isEmpty ? "" : ", \(skipped.count) skipped"))
        }
    }

    /// Writes the config's sources in another format.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write the config's rss sources as an OPML 2.0 subscription list (stdout).",
            discussion: "A source's first tag is its folder. URLs are written as in the config: a ${VAR} stays unexpanded and credentials are removed, so no secret reaches the file."
        )

        @OptionGroup var configOptions: ConfigOptions

        @Flag(help: "OPML 2.0, what feed readers import.")
        var opml = false

        func validate() throws {
            guard opml else { throw ValidationError("say which format: --opml") }
        }

        func run() async throws {
            let config = try await configOptions.load()
            var feeds: [OPML.Feed] = []
            for source in config.sources {
                guard let feed = source.adapter as? RSSAdapter else { continue }
                let url = feed.fetcher.displayURL
                guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://") else {
                    Console.error("left out \(source.name): a local file (\(TerminalText.safe(url))) means nothing to another reader")
                    continue
                }
                feeds.append(OPML.Feed(title: source.name, url: url, tags: source.tags))
            }
            print(OPML.write(feeds, title: "fetchrun: \((configOptions.path as NSString).lastPathComponent)", created: SystemClock().date), terminator: "")
        }
    }
}
