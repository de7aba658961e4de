import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Writes a commented starter config.
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Write a commented starter config (one source of each built-in kind) where none exists.",
            discussion: "--type page or json puts a web-page or JSON-API source first, with its options explained, instead of a feed."
        )

        @OptionGroup var configOptions: ConfigOptions

        @Option(help: "The kind of source the starter leads with: rss (a feed), page (a part of a web page) or json (a JSON API).")
        var type: Add.Kind = .rss

        func run() async throws {
            let path = configOptions.path
            var info = stat()
            if lstat(path, &info) == 0 {
                throw CommandFailure(ExitStatus.usage, "\(path) already exists; fetchrun init writes a new config only where there is none (`fetchrun add URL` adds a feed to it)")
            }
            try ConfigFile.write(Self.starter(leadingWith: type), to: path)
            Console.error("wrote \(path): `fetchrun validate` checks it, `fetchrun` fetches every source once, `fetchrun watch` keeps fetching")
        }

        /// What `init` writes: valid as it stands (the tests load it), every line explained.
        static func starter(leadingWith kind: Add.Kind) -> String {
            let examples = [feedExample, pageExample, jsonExample]
            let first = kind == .page ? 1 : kind == .json ? 2 : 0
            return starterHead + examples[first] + examples.enumerated().filter { $0.offset != first }.map(\.element).joined() + starterTail
        }

        static let starterHead = """
        # fetchrun sources — one entry per source under `sources:`.
        # `fetchrun adapters` lists every type and its options; `fetchrun validate` checks this file.

        # Where snapshots and the state database live (relative to this file).
        state_dir: .fetchrun

        # Settings every source starts from; a source may override any of them.
        defaults:
          deadline: 30s      # a fetch that takes longer fails, and the others carry on
          interval: 15m      # watch mode: how often a source is fetched
          keep: 200          # items kept in a source's snapshot

        # Where new items go, besides the report (remove the #s to use one): a phone notification
        # through ntfy; also gotify, slack, discord, telegram, matrix, webhook, email, command.
        # `fetchrun test-output phone` sends a sample.
        # outputs:
        #   - name: phone
        #     type: ntfy
        #     url: https://ntfy.sh/choose-a-long-random-topic
        #     digest: true     # one message per run, not one per item; or daily@08:00

        sources:

        """

        static let feedExample = """
          # A feed: RSS, Atom or JSON Feed, over http(s) or from a file (file:path).
          # `fetchrun add URL` finds a site's feed and adds it here; `fetchrun import subs.opml`
          # brings the feeds of another reader.
          - name: lwn
            type: rss
            url: https://lwn.net/headlines/rss
            tags: [linux, news]


        """

        static let pageExample = """
          # A part of a web page: when its text changes, that is new data, shown as a diff.
          # css: (or xpath:) picks the part; remove: takes out what changes on every load;
          # ignore: leaves dates, times, numbers or your own patterns out of the comparison.
          # `fetchrun test-source kernel-releases` prints what it watches; `fetchrun probe URL`
          # suggests a selector. items: (with each:, title:, link:) makes a list's entries items.
          - name: kernel-releases
            type: page
            url: https://www.kernel.org/
            css: "#releases"
            ignore: [dates]


        """

        static let jsonExample = """
          # A JSON API: items: turns an array into items (paths per entry), or select: watches
          # one value (a change shown as a diff). Paths are JSONPath (RFC 9535).
          - name: kernel-versions
            type: json
            url: https://www.kernel.org/releases.json
            items:
              each: $.releases[*]
              id: version
              title: version
              link: source


        """

        static let starterTail = """
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
}
