import FixtureServer
import Foundation
import Testing
import TestSupport

/// What the outside sees of a running `watch` or `worker`: `/metrics`, `/healthz`, `/readyz`,
/// `/status`, `healthcheck`, `--metrics-file`, systemd's notify socket and JSON logs.
@Suite struct MonitoringTests {
    /// A TCP connection to 127.0.0.1:`port`, or `nil`.
    static func connect(port: UInt16) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// A GET on 127.0.0.1: the status and the body, `nil` when nothing answers.
    static func get(port: UInt16, _ path: String, token: String? = nil, timeout seconds: Int = 5) -> (status: Int, body: String)? {
        request(port: port, path: path, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [], timeout: seconds).map { ($0.status, $0.body) }
    }

    /// A request on 127.0.0.1: the status, the headers (names lower-cased) and the body; `nil`
    /// when nothing answers.
    static func request(
        port: UInt16, method: String = "GET", path: String, headers: [(String, String)] = [], body: String? = nil, timeout seconds: Int = 5
    ) -> (status: Int, headers: [String: String], body: String)? {
        guard let descriptor = connect(port: port) else { return nil }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if let body { request += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n" }
        request += "\r\n" + (body ?? "")
        _ = request.withCString { send(descriptor, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &chunk, chunk.count, 0)
            guard count > 0 else { break }
            response += chunk[..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n"), let status = Int(text.split(separator: " ").dropFirst().first ?? "") else { return nil }
        var fields: [String: String] = [:]
        for line in text[..<headEnd.lowerBound].split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, fields, String(text[headEnd.upperBound...]))
    }

    /// One sample of an exposition: its name, labels and value.
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// The text exposition format (0.0.4), read strictly: every sample belongs to a family
    /// declared by a `# TYPE` line before it (a histogram's `_bucket`, `_sum`, `_count`), label
    /// values are quoted, values are numbers. Anything else is a recorded issue.
    static func parse(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [Sample] {
        var types: [String: String] = [:]
        var samples: [Sample] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                #expect(parts.count == 4 && ["counter", "gauge", "histogram", "summary", "untyped"].contains(String(parts[3])), "\(line)", sourceLocation: sourceLocation)
                if parts.count == 4 { types[String(parts[2])] = String(parts[3]) }
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...].replacingOccurrences(of: "+Inf", with: "inf")) else {
                Issue.record("not a sample: \(line)", sourceLocation: sourceLocation)
                continue
            }
            let head = line[..<space]
            var name = String(head), labels: [String: String] = [:]
            if let brace = head.firstIndex(of: "{") {
                name = String(head[..<brace])
                #expect(head.hasSuffix("}"), "\(line)", sourceLocation: sourceLocation)
                for pair in head[head.index(after: brace)..<head.index(before: head.endIndex)].split(separator: ",") {
                    let keyValue = pair.split(separator: "=", maxSplits: 1)
                    #expect(keyValue.count == 2 && keyValue[1].hasPrefix("\"") && keyValue[1].hasSuffix("\""), "\(line)", sourceLocation: sourceLocation)
                    if keyValue.count == 2 { labels[String(keyValue[0])] = String(keyValue[1].dropFirst().dropLast()) }
                }
            }
            let family = ["_bucket", "_sum", "_count"].first { name.hasSuffix($0) && types[String(name.dropLast($0.count))] == "histogram" }
                .map { String(name.dropLast($0.count)) } ?? name
            #expect(types[family] != nil, "no # TYPE before \(name)", sourceLocation: sourceLocation)
            samples.append(Sample(name: name, labels: labels, value: value))
        }
        return samples
    }

    static func value(_ samples: [Sample], _ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }?.value
    }

    /// `/metrics` read and parsed, or `nil` when it did not answer 200.
    static func scrape(port: UInt16) -> (body: String, samples: [Sample])? {
        guard let scrape = get(port: port, "/metrics"), scrape.status == 200 else { return nil }
        return (scrape.body, parse(scrape.body))
    }

    /// Scrapes until the samples satisfy `condition` (recording an issue after the wait's
    /// timeout), and returns the last scrape: empty when none answered.
    static func scrape(port: UInt16, until what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: ([Sample]) -> Bool) async throws -> (body: String, samples: [Sample]) {
        var last: (body: String, samples: [Sample]) = ("", [])
        try await waitUntil(what, sourceLocation: sourceLocation) {
            guard let scrape = scrape(port: port) else { return false }
            last = scrape
            return condition(scrape.samples)
        }
        return last
    }

    /// The sum of every series of `name` with `labels` (whatever their other labels say).
    static func total(_ samples: [Sample], _ name: String, _ labels: [String: String]) -> Double {
        samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }.reduce(0) { $0 + $1.value }
    }

    /// `promtool check metrics`, Prometheus's own reader, when it is installed (`make test`
    /// installs Debian's prometheus package).
    static func promtoolProblems(_ exposition: String) throws -> String? {
        guard let promtool = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString)")
        try exposition.write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\(promtool) check metrics < \(input.path) 2>&1"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? nil : output
    }

    @Test func metricsMoveAsFetchesHappenAndReadAsPrometheusExposition() async throws {
        let server = try FixtureServer()
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        try fetchrun.write("""
            state_dir: state
            sources:
              - { name: t, type: traffic, interval: 1s }
              - { name: feed, type: rss, url: "\(server.url("/feed/3.xml"))", interval: 1s }
            """, to: "sources.yaml")
        let watch = try fetchrun.start(["watch", "--listen", "127.0.0.1:\(port)", "--for", "30s"])
        defer { kill(watch.pid, SIGTERM) }
        let first = try await Self.scrape(port: port, until: "a first fetch counted") {
            Self.total($0, "fetchrun_fetches_total", ["source": "t"]) >= 1
        }.samples
        let (body, second) = try await Self.scrape(port: port, until: "later fetches counted") {
            Self.total($0, "fetchrun_fetches_total", ["source": "t"]) >= Self.total(first, "fetchrun_fetches_total", ["source": "t"]) + 2
        }
        #expect(Self.value(second, "fetchrun_fetches_total", ["source": "feed", "outcome": "newData"]) == 1)
        #expect((Self.value(second, "fetchrun_fetches_total", ["source": "feed", "outcome": "noData"]) ?? 0) >= 1)
        // Made at 0 before the first fetch, so that increase() sees a first failure.
        #expect(Self.value(second, "fetchrun_fetches_total", ["source": "feed", "outcome": "failed"]) == 0)
        #expect((Self.value(second, "fetchrun_http_responses_total", ["code": "200"]) ?? 0) >= 2)
        #expect((Self.value(second, "fetchrun_new_items_total", ["source": "feed"]) ?? 0) >= 1)
        #expect(Self.value(second, "fetchrun_source_consecutive_failures", ["source": "feed"]) == 0)
        #expect((Self.value(second, "fetchrun_source_last_success_timestamp_seconds", ["source": "t"]) ?? 0) > Date().timeIntervalSince1970 - 60)
        #expect(Self.value(second, "fetchrun_sources") == 2)
        #expect(Self.value(second, "fetchrun_build_info") == 1)
        #expect((Self.value(second, "process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect((Self.value(second, "process_open_fds") ?? 0) > 3)
        // A histogram's buckets only grow, and +Inf is its count.
        let buckets = second.filter { $0.name == "fetchrun_fetch_duration_seconds_bucket" && $0.labels["type"] == "rss" }
        #expect(buckets.count > 3 && zip(buckets, buckets.dropFirst()).allSatisfy { $0.value <= $1.value })
        #expect(buckets.last?.labels["le"] == "+Inf" && buckets.last?.value == Self.value(second, "fetchrun_fetch_duration_seconds_count", ["type": "rss"]))
        #expect(body.contains("# HELP fetchrun_fetches_total "))
        if let problems = try Self.promtoolProblems(body) { Issue.record("promtool check metrics: \(problems)") }

        let health = try #require(Self.get(port: port, "/healthz"))
        #expect(health.status == 200)
        let ready = try #require(Self.get(port: port, "/readyz"))
        #expect(ready.status == 200, "\(ready.body)")
        let status = try #require(Self.get(port: port, "/status"))
        let lines = try events(status.body)
        #expect(Set(lines.compactMap { $0["source"] as? String }) == ["t", "feed"], "\(status.body)")
        #expect(Self.get(port: port, "/nothing-here")?.status == 404)

        let check = try await fetchrun.run(["healthcheck", "--listen", "127.0.0.1:\(port)"])
        #expect(check.status == 0 && check.stdout.contains("healthy"), "\(check.stderr)")
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()
        #expect(watch.process.terminationStatus == 0)
        let gone = try await fetchrun.run(["healthcheck", "--listen", "127.0.0.1:\(port)", "--timeout", "2s"])
        #expect(gone.status == 1, "\(gone.stdout)\(gone.stderr)")
    }

    @Test func aStalledLoopTurnsHealthzTo503() async throws {
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        try fetchrun.write("state_dir: state\nsources:\n  - { name: t, type: traffic, interval: 1h }\n", to: "sources.yaml")
        let stall = fetchrun.path("stall")
        let watch = try fetchrun.start(["watch", "--listen", "127.0.0.1:\(port)", "--for", "60s"], environment: ["FETCHRUN_TEST_STALL_FILE": stall])
        defer { kill(watch.pid, SIGKILL) }
        try await waitUntil("healthy") { Self.get(port: port, "/healthz")?.status == 200 }
        // Held at its next turn: nothing else in the process stops, the loop does.
        try fetchrun.write("", to: "stall")
        try await waitUntil("stalled", timeout: .seconds(40)) { Self.get(port: port, "/healthz")?.status == 503 }
        let stalled = try #require(Self.get(port: port, "/healthz"))
        #expect(stalled.body.contains("the schedule loop has not turned for"), "\(stalled.body)")
        #expect(try await fetchrun.run(["healthcheck", "--listen", "127.0.0.1:\(port)"]).status == 1)
        try FileManager.default.removeItem(atPath: stall)
        try await waitUntil("turning again") { Self.get(port: port, "/healthz")?.status == 200 }
    }

    /// Anyone who can reach the port can open connections before a token is asked for: what
    /// they hold is bounded (a few dozen descriptors, each connection closed when idle), and
    /// the fetches go on meanwhile.
    @Test func connectionsThatNeverFinishARequestAreBoundedAndClosed() async throws {
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        try fetchrun.write("state_dir: state\nsources:\n  - { name: t, type: traffic, interval: 1s, max_interval: 1s }\n", to: "sources.yaml")
        let watch = try fetchrun.start(["watch", "--listen", "127.0.0.1:\(port)", "--for", "90s"])
        defer { kill(watch.pid, SIGKILL) }
        try await waitUntil("healthy") { Self.get(port: port, "/healthz")?.status == 200 }
        let fetchedBefore = Self.total(try #require(Self.scrape(port: port)).samples, "fetchrun_fetches_total", ["source": "t"])
        func descriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(watch.pid)/fd").count) ?? 0 }
        let before = descriptors()
        // 100 connections, each with a request head that never ends (the kernel queues what
        // the endpoint does not take yet).
        var held: [Int32] = []
        defer { for descriptor in held { close(descriptor) } }
        for _ in 0..<100 {
            guard let descriptor = Self.connect(port: port) else { break }
            held.append(descriptor)
            _ = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n".withCString { send(descriptor, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
        #expect(held.count == 100)
        // Real time: the endpoint's own read timeout on the held connections.
        try await Task.sleep(for: .seconds(2))
        #expect(descriptors() <= before + 32 + 8, "\(descriptors()) descriptors, \(before) before")
        // Idle for 10 s, the first ones taken are closed by the endpoint (a read sees the end).
        try await waitUntil("held connections closed", timeout: .seconds(20)) {
            held.filter { descriptor in
                var byte: UInt8 = 0
                return recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT)) == 0
            }.count >= 32
        }
        for descriptor in held { close(descriptor) }
        held = []
        try await waitUntil("answering again") { Self.get(port: port, "/healthz", timeout: 2)?.status == 200 }
        // The source was fetched every second all along (10 s and more; a loaded machine may
        // start some fetches late, so not ten).
        let samples = try #require(Self.scrape(port: port)).samples
        #expect(Self.total(samples, "fetchrun_fetches_total", ["source": "t"]) >= fetchedBefore + 4)
        try await waitUntil("the connections' descriptors closed", timeout: .seconds(10)) { descriptors() <= before + 2 }
    }

    @Test func aTokenOrANetworkListGuardsTheEndpoint() async throws {
        let fetchrun = try FetchRunBinary()
        let port = try PostgresServer.freePort()
        try fetchrun.write("state_dir: state\nlisten:\n  address: 127.0.0.1:\(port)\n  token: ${METRICS_TOKEN}\nsources:\n  - { name: t, type: traffic, interval: 1h }\n", to: "sources.yaml")
        let watch = try fetchrun.start(["watch", "--for", "30s"], environment: ["METRICS_TOKEN": "s3cret-token"])
        defer { kill(watch.pid, SIGKILL) }
        try await waitUntil("serving") { Self.get(port: port, "/healthz", token: "s3cret-token")?.status == 200 }
        #expect(Self.get(port: port, "/metrics")?.status == 401)
        #expect(Self.get(port: port, "/metrics", token: "s3cret-tokem")?.status == 401)
        #expect(Self.get(port: port, "/metrics", token: "s3cret-token")?.status == 200)
        // healthcheck sends the config's token.
        let check = try await fetchrun.run(["healthcheck"], environment: ["METRICS_TOKEN": "s3cret-token"])
        #expect(check.status == 0, "\(check.stderr)")
        kill(watch.pid, SIGTERM)
        await watch.waitForExit()
        let output = (try? String(contentsOf: watch.stderr, encoding: .utf8)) ?? ""
        #expect(!output.contains("s3cret-token"))

        // An address open to a network without a token or networks is refused.
        try fetchrun.write("state_dir: state\nsources:\n  - { name: t, type: traffic }\n", to: "sources.yaml")
        let open = try await fetchrun.run(["watch", "--listen", "0.0.0.0:\(port)", "--for", "1s"])
        #expect(open.status == 64 && open.stderr.contains("needs 'token' or 'allow'"), "\(open.stderr)")
        try fetchrun.write("state_dir: state\nlisten: { address: \"0.0.0.0:\(port)\", allow: [10.0.0.0/8, not-a-network] }\nsources:\n  - { name: t, type: traffic }\n", to: "sources.yaml")
        let bad = try await fetchrun.run(["validate"])
        #expect(bad.status == 65 && bad.stderr.contains("'not-a-network' is not a network"), "\(bad.stderr)")
    }

    @Test func aRunWritesItsMetricsFileWhole() async throws {
        let server = try FixtureServer()
        server.respond(to: "/hook", status: 503)
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))" }
            sources:
              - { name: t, type: traffic, outputs: [] }
              - { name: bad, type: rss, url: "http://127.0.0.1:1/feed" }
              - { name: f, type: rss, url: "\(server.url("/feed/1.xml?items=4"))", send_baseline: true }
            """, to: "sources.yaml")
        try FileManager.default.createDirectory(atPath: fetchrun.path("textfile"), withIntermediateDirectories: true)
        let run = try await fetchrun.run(["--metrics-file", fetchrun.path("textfile/fetchrun.prom")])
        #expect(run.status == 2, "\(run.stderr)")
        let text = try fetchrun.read("textfile/fetchrun.prom")
        let samples = Self.parse(text)
        // (The traffic adapter's first fetch may find nothing: one fetch, whatever its outcome.)
        #expect(samples.filter { $0.name == "fetchrun_fetches_total" && $0.labels["source"] == "t" }.map(\.value).reduce(0, +) == 1)
        #expect(Self.value(samples, "fetchrun_fetches_total", ["source": "bad", "outcome": "failed"]) == 1)
        #expect(Self.value(samples, "fetchrun_source_consecutive_failures", ["source": "bad"]) == 1)
        // The receiver is down: the four items wait, counted after the run's delivery pass.
        #expect(Self.value(samples, "fetchrun_outbox_pending", ["output": "chat"]) == 4, "\(text)")
        #expect(Self.value(samples, "fetchrun_deliveries_total", ["output": "chat", "outcome": "failed"]) == 1)
        if let problems = try Self.promtoolProblems(text) { Issue.record("promtool check metrics: \(problems)") }
        // Nothing but the file itself is left in the collector's folder.
        #expect(try FileManager.default.contentsOfDirectory(atPath: fetchrun.path("textfile")) == ["fetchrun.prom"])
        // A symbolic link put where the file goes is replaced, not written through.
        try fetchrun.write("not metrics\n", to: "elsewhere.txt")
        try FileManager.default.removeItem(atPath: fetchrun.path("textfile/fetchrun.prom"))
        try FileManager.default.createSymbolicLink(atPath: fetchrun.path("textfile/fetchrun.prom"), withDestinationPath: fetchrun.path("elsewhere.txt"))
        let linked = try await fetchrun.run(["--metrics-file", fetchrun.path("textfile/fetchrun.prom")])
        #expect(linked.status == 2, "\(linked.stderr)")
        #expect(try fetchrun.read("elsewhere.txt") == "not metrics\n")
        let replaced = try FileManager.default.attributesOfItem(atPath: fetchrun.path("textfile/fetchrun.prom"))
        #expect(replaced[.type] as? FileAttributeType == .typeRegular)
        #expect(try fetchrun.read("textfile/fetchrun.prom").contains("fetchrun_fetches_total"))
        // A folder that is not there is said, and the run's own result stands.
        let missing = try await fetchrun.run(["--metrics-file", fetchrun.path("nowhere/fetchrun.prom")])
        #expect(missing.status == 2 && missing.stderr.contains("metrics file \(fetchrun.path("nowhere/fetchrun.prom")): No such file or directory"), "\(missing.stderr)")
    }

    @Test func aWatchListsItsSourcesFromTheStateStoredBeforeFetchingThem() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\nsources:\n  - { name: t, type: traffic, interval: 1h }\n", to: "sources.yaml")
        let run = try await fetchrun.run([])
        #expect(run.status == 0 || run.status == 1, "\(run.stderr)")
        // Not due for an hour: the watch's scrape says what the store holds, and counts nothing.
        let port = try PostgresServer.freePort()
        let watch = try fetchrun.start(["watch", "--listen", "127.0.0.1:\(port)", "--for", "30s"])
        defer { kill(watch.pid, SIGTERM) }
        let samples = try await Self.scrape(port: port, until: "the stored state listed") {
            Self.value($0, "fetchrun_source_last_success_timestamp_seconds", ["source": "t"]) != nil
        }.samples
        let stored = try #require(Self.value(samples, "fetchrun_source_last_success_timestamp_seconds", ["source": "t"]))
        #expect(stored > Date().timeIntervalSince1970 - 120 && stored <= Date().timeIntervalSince1970)
        #expect(Self.value(samples, "fetchrun_source_consecutive_failures", ["source": "t"]) == 0)
        for outcome in ["newData", "noData", "failed"] {
            #expect(Self.value(samples, "fetchrun_fetches_total", ["source": "t", "outcome": outcome]) == 0)
        }
        #expect(Self.value(samples, "fetchrun_new_items_total", ["source": "t"]) == 0)
    }

    @Test func systemdHearsReadyWatchdogAndStoppingInOrder() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\nsources:\n  - { name: t, type: traffic, interval: 1s }\n", to: "sources.yaml")
        let receiver = try NotifyReceiver()
        let run = try await fetchrun.run(["watch", "--for", "4s"], environment: ["NOTIFY_SOCKET": receiver.path, "WATCHDOG_USEC": "2000000"])
        #expect(run.status == 0, "\(run.stderr)")
        let messages = receiver.messages()
        let kinds = NotifyReceiver.kinds(messages)
        #expect(kinds.first == "READY=1", "\(messages)")
        #expect(kinds.last == "STOPPING=1", "\(messages)")
        // A 2 s watchdog over 4 s: a ping at least every second.
        #expect(kinds.filter { $0 == "WATCHDOG=1" }.count >= 3, "\(messages)")
        #expect(messages.first?.contains("STATUS=1 sources, 0 failing") == true, "\(messages)")
    }

    @Test func jsonLogsAreOneObjectALineAndJournaldGetsPriorities() async throws {
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("state_dir: state\nlog_format: json\nsources:\n  - { name: bad, type: rss, url: \"http://127.0.0.1:1/feed\" }\n  - { name: evil, type: rss, url: \"http://127.0.0.1:1/\\e[2J\" }\n", to: "sources.yaml")
        let run = try await fetchrun.run(["-v"])
        #expect(run.status == 3, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["time"] is String && object?["level"] is String && object?["message"] is String, "\(line)")
        }
        #expect(lines.contains { $0.contains("\"source\":\"bad\"") && $0.contains("\"kind\":\"network\"") }, "\(run.stderr)")
        #expect(!run.stderr.unicodeScalars.contains { $0.value == 0x1B })
        // --log-format wins over the config; under journald each line carries its priority.
        let journal = try await fetchrun.run(["-v", "--log-format", "text"], environment: ["JOURNAL_STREAM": "8:1234"])
        for line in journal.stderr.split(separator: "\n") {
            #expect(line.hasPrefix("<6>") || line.hasPrefix("<4>") || line.hasPrefix("<3>"), "\(line)")
        }
    }

    /// The README's alert rules: valid for Prometheus (promtool, which `make test` installs),
    /// and about metrics fetchrun exports.
    @Test func theAlertRulesAreValidAndNameRealMetrics() async throws {
        let rules = ServiceUnitTests.folder.deletingLastPathComponent().appendingPathComponent("monitoring/alerts.yml")
        let text = try String(contentsOf: rules, encoding: .utf8)
        for metric in ["fetchrun_source_consecutive_failures", "fetchrun_source_last_success_timestamp_seconds", "fetchrun_outbox_pending"] {
            #expect(text.contains(metric))
        }
        #expect(text.components(separatedBy: "- alert: ").count - 1 == 3)
        // The dashboard asks for metrics fetchrun exports, nothing else.
        let exported: Set<String> = [
            "fetchrun_fetches_total", "fetchrun_fetch_duration_seconds", "fetchrun_new_items_total", "fetchrun_source_consecutive_failures",
            "fetchrun_source_last_success_timestamp_seconds", "fetchrun_http_responses_total", "fetchrun_outbox_pending", "fetchrun_deliveries_total",
            "fetchrun_download_bytes_total", "fetchrun_leases_total", "fetchrun_sources", "fetchrun_build_info",
            "process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds",
        ]
        let dashboard = try String(contentsOf: rules.deletingLastPathComponent().appendingPathComponent("grafana-dashboard.json"), encoding: .utf8)
        let panels = try #require((try JSONSerialization.jsonObject(with: Data(dashboard.utf8)) as? [String: Any])?["panels"] as? [[String: Any]])
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(expressions.count >= 6)
        let named = try Regex("(fetchrun|process)_[a-z_]+")
        for expression in expressions + [text] {
            for match in expression.matches(of: named) {
                let name = String(expression[match.range])
                let family = name.hasSuffix("_bucket") ? String(name.dropLast(7)) : name
                #expect(exported.contains(family), "\(name) in \(expression)")
            }
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        process.arguments = ["check", "rules", rules.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && output.contains("SUCCESS: 3 rules found"), "\(output)")
    }
}
