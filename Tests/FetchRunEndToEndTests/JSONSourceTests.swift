import Foundation
import Testing
import FixtureServer

/// `type: json` through the built binary against the fixture server: a watched value that
/// changes (one diff, one delivery) and that only seems to (nothing), an array as items, and
/// every way a document or a path can be wrong.
@Suite struct JSONSourceTests {
    func posted(_ server: FixtureServer, _ path: String) -> [[String: Any]] {
        server.requests(to: path).filter { $0.method == "POST" }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
    }

    static func status(_ state: String, updated: String, services: [String], indent: String = " ") -> [UInt8] {
        let list = services.map { "\"\($0)\"" }.joined(separator: ",\(indent)")
        return Array("{\"status\":{\"state\":\"\(state)\",\(indent)\"updated\":\"\(updated)\",\"services\":[\(list)]},\"hits\":\(Int.random(in: 0..<1_000_000))}".utf8)
    }

    @Test func aWatchedValueThatChangesIsOneDiffAndOneDeliveryAndNoiseIsNothing() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))" }
            sources:
              - name: status
                type: json
                url: "\(server.url("/files/api.json"))"
                select: $.status
                ignore: [dates, times]
            """, to: "sources.yaml")
        server.serve("api.json", body: Self.status("ok", updated: "2026-11-25T10:00:00Z", services: ["db", "web"]), contentType: "application/json")
        let baseline = try await fetchrun.run([])
        #expect(baseline.status == 0 && baseline.stdout.contains("baseline: 1 item"), "\(baseline.stdout)\(baseline.stderr)")

        // Another time stamp, other spacing, another hit counter outside the selection: no change.
        server.serve("api.json", body: Self.status("ok", updated: "2026-11-25T11:30:00Z", services: ["db", "web"], indent: "\n  "), contentType: "application/json")
        let noise = try await fetchrun.run(["--format", "json"])
        #expect(noise.status == 0 && noise.stdout.contains(#""outcome":"noData""#), "\(noise.stdout)")

        server.serve("api.json", body: Self.status("degraded", updated: "2026-11-25T12:00:00Z", services: ["db", "web", "cache"]), contentType: "application/json")
        let changed = try await fetchrun.run(["--format", "json"])
        #expect(changed.status == 0, "\(changed.stderr)")
        let event = try #require(try events(changed.stdout).first { $0["event"] as? String == "changed" })
        let diff = try #require(event["diff"] as? String)
        #expect(diff.contains("-  \"state\": \"ok\"") && diff.contains("+  \"state\": \"degraded\"") && diff.contains("+    \"cache\""), "\(diff)")
        #expect(diff.hasPrefix("@@ ") && !diff.contains("2026"), "\(diff)")
        #expect(event["source"] as? String == "status" && event["extra"] == nil)

        #expect(try await fetchrun.run([]).stdout.contains("noData"))
        let deliveries = posted(server, "/hook")
        #expect(deliveries.count == 1, "\(deliveries)")
        #expect(deliveries.first?["diff"] as? String == diff)
        #expect(deliveries.first?["delivery_id"] as? String == "status/change-2")

        // The report shows the diff under the change.
        server.serve("api.json", body: Self.status("ok", updated: "2026-11-25T12:00:00Z", services: ["db", "web", "cache"]), contentType: "application/json")
        let text = try await fetchrun.run([])
        #expect(text.stdout.contains("+ \"state\": \"ok\"") && text.stdout.contains("      -  \"state\": \"degraded\""), "\(text.stdout)")
    }

    @Test func anArrayBecomesItemsWithLinksResolvedAndDatesRead() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            sources:
              - name: releases
                type: json
                url: "\(server.url("/files/releases.json"))"
                items:
                  each: $.data.releases[?@.draft == false]
                  title: name
                  link: "@.html_url"
                  published: published_at
                  summary: body
            """, to: "sources.yaml")
        func releases(_ tags: [String]) -> [UInt8] {
            let entries = tags.enumerated().map { index, tag in
                #"{"name": "\#(tag)", "html_url": "/releases/\#(tag)", "published_at": "2026-11-\#(10 + index)T08:00:00Z", "body": "notes for \#(tag)", "draft": false}"#
            }
            return Array(#"{"data": {"releases": [\#((entries + [#"{"name": "next", "html_url": "/r/next", "draft": true}"#]).joined(separator: ","))]}}"#.utf8)
        }
        server.serve("releases.json", body: releases(["v1.0", "v1.1"]), contentType: "application/json")
        let first = try await fetchrun.run(["--format", "json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try events(first.stdout).filter { $0["event"] as? String == "item" }.count == 2)

        server.serve("releases.json", body: releases(["v1.0", "v1.1", "v1.2"]), contentType: "application/json")
        let second = try await fetchrun.run(["--format", "json"])
        let items = try events(second.stdout).filter { $0["event"] as? String == "item" }
        #expect(items.count == 1, "\(second.stdout)")
        let item = try #require(items.first)
        #expect(item["title"] as? String == "v1.2")
        #expect(item["link"] as? String == server.url("/releases/v1.2"))
        #expect(item["id"] as? String == server.url("/releases/v1.2"))
        #expect(item["summary"] as? String == "notes for v1.2")
        #expect(item["published"] as? String == "2026-11-12T08:00:00Z")
    }

    @Test func badDocumentsAndPathsFailOnlyTheirOwnSourceWithTheirKind() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        func source(_ name: String, _ options: String) -> String {
            "  - { name: \(name), type: json, url: \"\(server.url("/files/\(name).json"))\", \(options) }\n"
        }
        try fetchrun.write("state_dir: state\nsources:\n"
            + source("broken", "select: $.a")
            + source("missing", "select: $.nowhere")
            + source("object", "items: { each: \"$[*]\", title: meta }")
            + source("untold", "items: { each: \"$[*]\", title: t }")
            + source("deep", "select: $.a")
            + source("explosive", "select: \"$..*..*..*\"")
            + source("huge", "select: $.a, max_bytes: 65536")
            + source("good", "items: { each: \"$[*]\", id: n, title: t }"), to: "sources.yaml")
        server.serve("broken.json", body: Array(#"{"a": [1, 2"#.utf8))
        server.serve("missing.json", body: Array(#"{"a": 1}"#.utf8))
        server.serve("object.json", body: Array(#"[{"meta": {"x": 1}}]"#.utf8))
        server.serve("untold.json", body: Array(#"[{"t": "fine"}, {"x": 1}]"#.utf8))
        server.serve("deep.json", body: Array((String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)).utf8))
        // 500 nested levels of 21 members: $..*..*..* would gather billions of nodes.
        server.serve("explosive.json", body: Array(("{\"a\":" + String(repeating: "[" + String(repeating: "0,", count: 20), count: 500) + "0" + String(repeating: "]", count: 500) + "}").utf8))
        server.serve("huge.json", body: Array(("{\"a\": \"" + String(repeating: "x", count: 1 << 20) + "\"}").utf8))
        // Numbers past a double's range or 400 digits long, in fields used and not.
        server.serve("good.json", body: Array(#"[{"n": 1, "t": "one", "big": 1e999}, {"n": \#(String(repeating: "9", count: 400)), "t": "two"}, {"n": 3, "t": 1e999}]"#.utf8))

        let result = try await fetchrun.run(["--format", "json"], timeout: .seconds(60))
        #expect(result.status == 2, "\(result.stderr)")
        let sources = Dictionary(try events(result.stdout).filter { $0["event"] as? String == "source" }.map { ($0["source"] as! String, $0) }, uniquingKeysWith: { a, _ in a })
        func failure(_ name: String) -> (kind: String?, message: String) {
            let error = sources[name]?["failure"] as? [String: Any]
            return (error?["kind"] as? String, error?["message"] as? String ?? "\(sources[name] ?? [:])")
        }
        #expect(failure("broken").kind == "parse" && failure("broken").message.contains("not JSON"), "\(failure("broken"))")
        #expect(failure("missing").kind == "selector" && failure("missing").message.contains("'$.nowhere' matches nothing"), "\(failure("missing"))")
        #expect(failure("object").kind == "selector" && failure("object").message.contains("entry 1: 'title' ($.meta) is an object"), "\(failure("object"))")
        #expect(failure("untold").kind == "selector" && failure("untold").message.contains("entry 2 has no id, link or title"), "\(failure("untold"))")
        #expect(failure("deep").kind == "parse" && failure("deep").message.contains("nested deeper"), "\(failure("deep"))")
        #expect(failure("explosive").kind == "selector" && failure("explosive").message.contains("selects more than"), "\(failure("explosive"))")
        #expect(failure("huge").kind != nil && failure("huge").message.contains("64 KiB limit (max_bytes)"), "\(failure("huge"))")
        #expect(sources["good"]?["outcome"] as? String == "newData" && sources["good"]?["new"] as? Int == 3, "\(sources["good"] ?? [:])")
        // The 1e999 title has no text: the item keeps its id as its title.
        let titles = try events(result.stdout).filter { $0["event"] as? String == "item" && $0["source"] as? String == "good" }.compactMap { $0["title"] as? String }
        #expect(titles.sorted() == ["3", "one", "two"], "\(titles)")
    }

    @Test func badPathsAreRefusedWhenTheConfigLoadsWithTheirPlace() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            sources:
              - name: a
                type: json
                url: http://127.0.0.1:9/
                select: "$.a["
              - name: b
                type: json
                url: http://127.0.0.1:9/
                items: { each: "$.r[*]", title: "$..t", colour: x }
              - name: c
                type: json
                url: http://127.0.0.1:9/
                select: $.a
                items: { each: "$[*]", title: t }
              - name: d
                type: json
                url: http://127.0.0.1:9/
                select: $.a
                ignore: ["(unclosed"]
                report: removed
            """, to: "sources.yaml")
        let result = try await fetchrun.run(["validate"])
        #expect(result.status == 65)
        let stderr = result.stderr
        #expect(stderr.contains("sources.yaml:5:13: source 'a': 'select': not a JSONPath: column 5"), "\(stderr)")
        #expect(stderr.contains("sources.yaml:9:37: source 'b': 'items.title': '$..t' can select more than one value"), "\(stderr)")
        #expect(stderr.contains("sources.yaml:9:53: source 'b': 'items': unknown key 'colour'"), "\(stderr)")
        #expect(stderr.contains("source 'c': 'select' and 'items' both given"), "\(stderr)")
        #expect(stderr.contains("sources.yaml:19:13: source 'd': 'ignore': '(unclosed': not a regular expression"), "\(stderr)")
        #expect(stderr.contains("sources.yaml:20:13: source 'd': 'report': invalid report 'removed': use changes or added"), "\(stderr)")
    }
}
