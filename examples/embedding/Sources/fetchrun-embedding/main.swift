import FetchRunKit
import Foundation
import Logging
import ServiceLifecycle

// Three sources built in code — a feed, a synthetic one and an adapter of this program's own —
// fetched once, then watched for a few fetches. No YAML, no command line of fetchrun's.
//
//   fetchrun-embedding FEED_URL [STATE_DIR]
//
// Exits 0 when every fetch succeeded, 1 when one failed, 64 on a usage error.

/// An adapter of this program's own: one new item per fetch, numbered on from the last one
/// through the state the engine keeps in the snapshot. Conforming to `SourceAdapter` is all it
/// takes; only adapters that a config file names need `ConfigurableAdapter`.
struct Countdown: SourceAdapter {
    var start: Int

    func fetch(_ context: FetchContext) async throws -> FetchOutput {
        let left = (context.previous?.adapterState?["left"]?.intValue ?? start + 1) - 1
        guard left > 0 else { return FetchOutput(items: [], adapterState: .object(["left": .number(0)])) }
        let item = Item(id: "\(context.sourceName)-\(left)", title: "\(left) to go", published: Date())
        return FetchOutput(items: [item], adapterState: .object(["left": .number(Double(left))]))
    }
}

func describe(_ source: SourceReport) -> String {
    if let failure = source.outcome.failure { return "\(source.name): failed, \(failure.message)" }
    return "\(source.name): \(source.outcome.name), \(source.newCount) new, \(source.totalItems) in all"
}

let arguments = CommandLine.arguments.dropFirst()
guard let feedURL = arguments.first, arguments.count <= 2 else {
    FileHandle.standardError.write(Data("usage: fetchrun-embedding FEED_URL [STATE_DIR]\n".utf8))
    exit(64)
}
let statePath = arguments.dropFirst().first
    ?? FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-embedding-\(getpid())").path

let often = SourceSettings(deadline: .seconds(10), interval: .every(.milliseconds(200)), keep: 50)
let engine = try await FetchEngine(sources: [
    SourceConfig(name: "feed", adapter: RSSAdapter(url: feedURL), settings: often),
    SourceConfig(name: "traffic", adapter: TrafficAdapter(updatesPerFetch: 1...2, seed: 42), settings: often),
    SourceConfig(name: "countdown", adapter: Countdown(start: 3), settings: often),
], stateDirectory: statePath)

// Once, as `fetchrun run` would: every source at once, each within its deadline.
let report = await engine.run()
for source in report.sources { print("run    " + describe(source)) }
print("run    \(report.result.rawValue): \(report.newItemCount) new items")
var failures = report.sources.filter { $0.outcome.failure != nil }.count

// Then watching, until six more fetches have ended: the watcher stops by itself, the group
// with it (the HTTP client and the outbox's delivery run beside it), and its events end.
var options = Watcher.Options()
options.maxFetches = 6
options.startSpread = .zero
let watcher = await engine.watcher(options: options)
let group = ServiceGroup(configuration: ServiceGroupConfiguration(
    services: engine.services.map { .init(service: $0) } + [.init(service: watcher, successTerminationBehavior: .gracefullyShutdownGroup)],
    logger: Logger(label: "fetchrun-embedding")
))
async let watching: Void = group.run()
var watched = 0
for await event in watcher.events {
    guard case .fetched(let source, _) = event else { continue }
    watched += 1
    if source.outcome.failure != nil { failures += 1 }
    print("watch  " + describe(source))
}
try await watching
print("\(watched) watched fetches, \(failures) failed; state in \(statePath)")
exit(failures == 0 ? 0 : 1)
