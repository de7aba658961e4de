import Foundation
import Testing
import FixtureServer

/// The hardening cases through the built binary: hostile servers, feeds, plugins, files and
/// config, each costing no more than its own source.
@Suite struct HardeningEndToEndTests: ScriptedPlugins {
    func failure(_ source: [String: Any]?) -> String {
        ((source?["failure"] as? [String: Any])?["message"] as? String) ?? ""
    }

    @Test func absurdRetryAfterValuesNeitherCrashRunNorWatch() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        var config = "state_dir: state\ndefaults:\n  interval: 1s\nsources:\n"
        for (index, value) in ["9223372036854775807", "99999999999999999999999", "-1", "Fri,%2031%20Dec%209999%2023:59:59%20GMT"].enumerated() {
            config += "  - name: limited\(index)\n    type: rss\n    url: \"\(server.url("/status/503?retry-after=\(value)"))\"\n"
        }
        config += "  - name: fine\n    type: traffic\n    min: 1\n"
        try fetchrun.write(config, to: "sources.yaml")
        let run = try await fetchrun.run(["--format", "json"])
        #expect(run.status == 2, "\(run.stderr)")
        let found = try sources(run)
        // One host: the first absurd value the host answers with backs it off, clamped to 24 h;
        // the sources after it wait out what is left of that (in whichever order they went).
        let limited = (0..<4).compactMap { found["limited\($0)"] }
        #expect(limited.count == 4)
        #expect(limited.contains { failure($0).contains("retry after 24h") }, "\(limited.map(failure))")
        for source in limited {
            let waits = (source["failure"] as? [String: Any])?["retry_after_ms"] as? Int
            #expect(waits == nil || (86_000_000...86_400_000).contains(waits!), "\(failure(source))")
        }
        #expect(found["fine"]?["outcome"] as? String == "newData")
        let watch = try await fetchrun.run(["watch", "--for", "2s"], timeout: .seconds(20))
        #expect(watch.status == 0, "\(watch.stderr)")
        #expect(watch.stdout.contains("watched for"))
    }

    /// Two inputs that once trapped the whole process, found by fuzzing (`fetchrun-fuzz header`):
    /// a `Cache-Control` directive that is only "=", and a date whose zone offset has twenty digits.
    @Test func aBareCacheControlDirectiveAndAnEndlessZoneOffsetAreRead() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let item = "<item><guid>odd-date</guid><title>odd</title><pubDate>Fri, 01 Mar 2024 10:00:00 -99999999999999999999</pubDate></item>"
        server.serve("odd-date.xml", body: Array(#"<rss version="2.0"><channel><title>t</title>\#(item)</channel></rss>"#.utf8))
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: bare-directive
                type: rss
                url: "\(server.url("/feed/2.xml?cache-control=max-age%3D60,%3D,%20%3D"))"
              - name: odd-date
                type: rss
                url: "\(server.url("/files/odd-date.xml"))"
              - name: healthy
                type: rss
                url: "\(server.url("/feed/3.xml"))"
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let found = try sources(result)
        for name in ["bare-directive", "odd-date", "healthy"] {
            #expect(found[name]?["outcome"] as? String == "newData", "\(name): \(result.stdout)")
        }
        // The date that cannot be read is left out; the item is kept.
        let snapshot = try fetchrun.read("state/snapshots/odd-date.json")
        #expect(snapshot.contains("odd-date"))
        #expect(!snapshot.contains("published"), "\(snapshot)")
    }

    @Test func hostileFeedsCostOnlyTheirOwnSource() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        var crowded = #"<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item"#
        for index in 0..<100_000 { crowded += " a\(index)=\"x\"" }
        crowded += "><title>x</title></item></channel></rss>"
        server.serve("crowded.xml", body: Array(crowded.utf8))
        let title = String(repeating: "T", count: 5_000_000)
        server.serve("longtitle.xml", body: Array(#"<rss version="2.0"><channel><item><guid>long</guid><title>\#(title)</title></item></channel></rss>"#.utf8))
        try fetchrun.write("""
            state_dir: state
            defaults:
              deadline: 5s
            sources:
              - name: crowded
                type: rss
                url: "\(server.url("/files/crowded.xml"))"
              - name: longtitle
                type: rss
                url: "\(server.url("/files/longtitle.xml"))"
              - name: healthy
                type: rss
                url: "\(server.url("/feed/3.xml?latency=100ms"))"
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"])
        #expect(result.status == 2, "\(result.stderr)")
        let found = try sources(result)
        #expect(failure(found["crowded"]).contains("refused: an element has more than 1000 attributes"))
        #expect(found["healthy"]?["outcome"] as? String == "newData")
        #expect(found["longtitle"]?["outcome"] as? String == "newData")
        // Functional bound only (the benchmark measures): libxml2 alone takes 7–30 s here.
        #expect(result.duration < .seconds(5))
        let snapshot = try fetchrun.read("state/snapshots/longtitle.json")
        #expect(snapshot.utf8.count < 5_000)
        let text = try await fetchrun.run([])
        #expect(!text.stdout.contains(String(repeating: "T", count: 2_000)))
    }

    @Test func aPluginsDescendantsCannotHoldTheRunAndStderrFloodsAreCut() async throws {
        let fetchrun = try FetchRunBinary()
        // The grandchild leaves the process group and keeps stdout open for 30 s.
        try script(fetchrun, "escape.sh", "cat >/dev/null; echo '{\"id\":\"1\",\"title\":\"t\"}'; setsid sleep 30 & exit 0")
        try script(fetchrun, "hang.sh", "cat >/dev/null; setsid sleep 30 & sleep 30")
        // A line of 1 MiB on stderr: 256 times the 4 KiB a line is kept to (8 MiB made the
        // flood itself, through `tr`, a CPU-bound second or more on a busy machine).
        try script(fetchrun, "flood.sh", "cat >/dev/null; head -c 1048576 /dev/zero | tr '\\\\0' e >&2; exit 3")
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: escape
                type: exec
                command: [./escape.sh]
                deadline: 2s
              - name: hang
                type: exec
                command: [./hang.sh]
                deadline: 2s
              - name: flood
                type: exec
                command: [./flood.sh]
                deadline: 20s
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"], timeout: .seconds(60))
        #expect(result.duration < .seconds(10), "the run waited for a plugin's descendants: \(result.duration)")
        let found = try sources(result)
        #expect(found["escape"]?["outcome"] as? String == "newData", "\(result.stderr)")
        #expect(failure(found["hang"]).contains("deadline exceeded"))
        #expect(failure(found["flood"]).contains("exited with status 3"))
        #expect(failure(found["flood"]).utf8.count < 1_000)
    }

    @Test func describeIsAskedOnlyOfPluginsThatOfferItAndABadSchemaIsNamed() async throws {
        let fetchrun = try FetchRunBinary()
        try script(fetchrun, "plugins/fetchrun-adapter-quiet", "touch \"$(dirname \"$0\")/../started\"; cat >/dev/null")
        try script(fetchrun, "plugins/fetchrun-adapter-wrong", #"[ "$1" = --describe ] && echo '{"summary":"w","options":{"path":{"kind":"path"}}}'"#)
        try fetchrun.write("sources:\n  - name: q\n    type: quiet\n    anything: 1\n", to: "sources.yaml")
        let quiet = try await fetchrun.run(["validate"], environment: ["XDG_CACHE_HOME": fetchrun.path("cache")])
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(!fetchrun.exists("started"), "a plugin that never mentions --describe was run by validate")

        try fetchrun.write("sources:\n  - name: w\n    type: wrong\n", to: "sources.yaml")
        let wrong = try await fetchrun.run(["validate"], environment: ["XDG_CACHE_HOME": fetchrun.path("cache")])
        #expect(wrong.status == 65)
        #expect(wrong.stderr.contains("sources.yaml:3:11: source 'w': plugin "), "\(wrong.stderr)")
        #expect(wrong.stderr.contains("'options' must be a list of"), "\(wrong.stderr)")
    }

    @Test func plantedLinksAreNeverWrittenThroughAndLeftoversAreCleaned() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\nsources:\n  - name: t\n    type: traffic\n", to: "sources.yaml")
        try fetchrun.write("precious", to: "victim")
        try FileManager.default.createDirectory(atPath: fetchrun.path("state/snapshots"), withIntermediateDirectories: true)
        symlink(fetchrun.path("victim"), fetchrun.path("state/lock"))
        let refused = try await fetchrun.run([])
        #expect(refused.status == 73, "\(refused.stderr)")
        #expect(refused.stderr.contains("symbolic link"))
        #expect(try fetchrun.read("victim") == "precious")

        unlink(fetchrun.path("state/lock"))
        try fetchrun.write("{", to: "state/snapshots/.t.json.tmp-4194305-77")
        symlink(fetchrun.path("victim"), fetchrun.path("state/snapshots/t.json"))
        let run = try await fetchrun.run([])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try fetchrun.read("victim") == "precious")
        #expect(!fetchrun.exists("state/snapshots/.t.json.tmp-4194305-77"))
        #expect(run.stdout.contains("symbolic link"), "the planted snapshot link is reported: \(run.stdout)")
    }

    @Test func credentialsStayInTheHTTPLayerAndInjectedHeadersAreRefused() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        server.serve("relative.xml", body: Array(#"<rss version="2.0"><channel><item><title>rel</title><link>/story/1</link><enclosure url="ep.mp3" type="audio/mpeg"/></item></channel></rss>"#.utf8))
        let url = server.url("/files/relative.xml").replacingOccurrences(of: "http://", with: "http://reader:${FEED_PASSWORD}@")
        try fetchrun.write("state_dir: state\nsources:\n  - name: secret\n    type: rss\n    url: \"\(url)\"\n", to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json", "-vv"], environment: ["FEED_PASSWORD": "hunter2-s3cret"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("/story/1"))
        for text in [result.stdout, result.stderr, try fetchrun.read("state/snapshots/secret.json")] {
            #expect(!text.contains("hunter2-s3cret"))
        }

        try fetchrun.write("sources:\n  - name: h\n    type: rss\n    url: \"\(server.url("/feed/1.xml"))\"\n    headers: { Authorization: \"Bearer ${TOKEN}\" }\n", to: "sources.yaml")
        let injected = try await fetchrun.run(["validate"], environment: ["TOKEN": "abc\r\nX-Injected: yes"])
        #expect(injected.status == 65)
        #expect(injected.stderr.contains("sources.yaml:5:"), "\(injected.stderr)")
        #expect(injected.stderr.contains("header 'Authorization': its value holds a carriage return"))
        #expect(!injected.stderr.contains("X-Injected"))
    }

    @Test func nothingFromOutsideReachesTheTerminalRaw() async throws {
        let fetchrun = try FetchRunBinary()
        try script(fetchrun, "evil.sh", #"cat >/dev/null; printf '{"id":"1","title":"\\u001b]52;c;aGFjaw==\\u0007owned \\u009b31m","link":"https://x.example/\\u001b[2J"}\n'; printf '\033[31mred stderr\n' >&2"#)
        try fetchrun.write("state_dir: state\nsources:\n  - name: evil\n    type: exec\n    command: [./evil.sh]\n", to: "sources.yaml")
        let run = try await fetchrun.run(["-v", "--list-all"])
        #expect(run.status == 0, "\(run.stderr)")
        let show = try await fetchrun.run(["show"])
        for output in [run.stdout, run.stderr, show.stdout] {
            #expect(!output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B }, "\(output)")
        }
        #expect(run.stdout.contains("\\x1B]52;c;aGFjaw==\\x07owned \\u009B31m"))
        // A config key is echoed in an error: safe there too.
        try fetchrun.write("sources:\n  - name: t\n    type: traffic\n    \"\\e[2Jkey\": 1\n", to: "sources.yaml")
        let invalid = try await fetchrun.run(["validate"])
        #expect(invalid.status == 65)
        #expect(invalid.stderr.contains("\\x1B[2Jkey"))
        #expect(!invalid.stderr.unicodeScalars.contains { $0.value == 0x1B })
    }

    /// A 3 MB title, a 3 MB link, a 20,000-character URL in an error: each printed field is
    /// cut to a few hundred characters ending in "…", in every command that prints it.
    @Test func everyPrintedFieldIsCapped() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try script(fetchrun, "huge.sh", #"cat >/dev/null; exec python3 -c 'import json; print(json.dumps({"id": "1", "title": "T" * 3000000, "link": "https://x.example/" + "l" * 3000000}))'"#)
        let longPath = "/missing/" + String(repeating: "p", count: 20_000)
        try fetchrun.write("state_dir: state\nsources:\n  - name: huge\n    type: exec\n    command: [./huge.sh]\n  - name: gone\n    type: rss\n    url: \"\(server.url(longPath))\"\n", to: "sources.yaml")
        let title = String(repeating: "T", count: 3_000_000)
        try fetchrun.write("<rss><channel><title>\(title)</title><item><title>\(title)</title><link>https://x.example/\(title)</link></item></channel></rss>", to: "big.xml")

        let run = try await fetchrun.run(["--list-all"])
        #expect(run.status == 2, "\(run.stderr.prefix(2000))") // one source failed
        let show = try await fetchrun.run(["show"])
        let status = try await fetchrun.run(["status"])
        let probe = try await fetchrun.run(["probe", fetchrun.path("big.xml")])
        #expect(probe.status == 0, "\(probe.stderr.prefix(2000))")
        let limit = 500 // TerminalText.maximumLength, as the README's Safety section says
        for (command, output) in [("run", run.stdout + run.stderr), ("show", show.stdout), ("status", status.stdout), ("probe", probe.stdout + probe.stderr)] {
            #expect(command == "status" || output.contains("TTT…"), "\(command): \(output.prefix(2000))")
            // A line holds at most two capped fields (a title and its link) and some words.
            let longest = output.split(separator: "\n").map(\.count).max() ?? 0
            #expect(longest < 2 * limit + 200, "\(command): a line of \(longest) characters")
        }
        for output in [run.stdout, status.stdout] {
            #expect(output.contains("ppp…"), "\(output.prefix(2000))")
        }
        // NDJSON carries the values as stored: the item within its caps (a 1 KiB title), the
        // failure's message within its own (1,000 characters).
        let json = try sources(try await fetchrun.run(["--format", "json"]))
        #expect(failure(json["gone"]).count == 1_000)
        #expect(failure(json["gone"]).hasSuffix("…"))
        let items = try events(try await fetchrun.run(["show", "--format", "json"]).stdout)
        #expect((items.first?["title"] as? String)?.utf8.count ?? .max <= 1_024)
    }

    @Test func oddConfigFilesLongHeadersAndInternationalHostsGetTrueMessages() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        mkfifo(fetchrun.path("fifo.yaml"), 0o644)
        let fifo = try await fetchrun.run(["validate", "-c", "fifo.yaml"], timeout: .seconds(20))
        #expect(fifo.status == 65)
        #expect(fifo.stderr.contains("cannot read the config file: it is a FIFO (named pipe), not a regular file"), "\(fifo.stderr)")
        let zero = try await fetchrun.run(["validate", "-c", "/dev/zero"], timeout: .seconds(20))
        #expect(zero.status == 65)
        #expect(zero.stderr.contains("it is a character device, not a regular file"), "\(zero.stderr)")

        // *.localhost resolves to 127.0.0.1 inside libcurl: a real international host name.
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: idn
                type: rss
                url: "http://bücher.localhost:\(server.port)/feed/1.xml"
              - name: long
                type: rss
                url: "\(server.url("/long-header"))"
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["--format", "json"])
        let found = try sources(result)
        #expect(found["idn"]?["outcome"] as? String == "newData", "\(result.stdout)")
        #expect(failure(found["long"]).contains("header line longer than the 100 KB libcurl accepts"))
    }
}
