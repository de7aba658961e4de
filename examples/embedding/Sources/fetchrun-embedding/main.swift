import FetchRunKit
import Foundation

// Three sources built in code — a feed, a synthetic one and an adapter of this program's own —
// fetched once, then watched for a few fetches. No YAML, no command line of fetchrun's.
//
//   fetchrun-embedding FEED_URL [STATE_DIR]
//
// Exits 0 when every fetch succeeded, 1 when one failed, 64 on a usage error.

/// An adapter of this program's own: one new item per fetch, numbered on from the last one
/// through the state the runner keeps in the snapshot. Conforming to `SourceAdapter` is all it
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

let arguments = CommandLine.arguments.dropFirst()
guard let feedURL = arguments.first, arguments.count <= 2 else {
    FileHandle.standardError.write(Data("usage: fetchrun-embedding FEED_URL [STATE_DIR]\n".utf8))
    exit(64)
}
let statePath = arguments.dropFirst().first
    ?? FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-embedding-\(getpid())").path
let state = StateDirectory(path: statePath)
try state.prepare()

let often = SourceSettings(deadline: .seconds(10), interval: .every(.milliseconds(200)), keep: 50)
let sources = [
    SourceConfig(name: "feed", adapter: RSSAdapter(url: feedURL), settings: often),
    SourceConfig(name: "traffic", adapter: TrafficAdapter(updatesPerFetch: 1...2, seed: 42), settings: often),
    SourceConfig(name: "countdown", adapter: Countdown(start: 3), settings: often),
]
let runner = FetchRunner(store: state.snapshots)

// Once, as `fetchrun run` would, with the kit's own text report.
let report = await runner.run(sources)
print(TextReport().lines(for: report).joined(separator: "\n"))
var failures = report.sources.filter { $0.outcome.failure != nil }.count

// Then watching, until six more fetches have ended: the watcher stops by itself and its
// events end with it. Under a ServiceGroup it would also stop on SIGINT or SIGTERM.
var options = Watcher<ContinuousClock>.Options()
options.maxFetches = 6
options.startSpread = .zero
let watcher = Watcher(sources: sources, runner: runner, clock: ContinuousClock(), options: options)
async let watching: Void = watcher.run()
for await event in watcher.events {
    guard case .fetched(let source, _) = event else { continue }
    if let failure = source.outcome.failure { failures += 1; print("watch  \(source.name): failed, \(failure.message)") }
    else { print("watch  \(source.name): \(source.outcome.name), \(source.newCount) new, \(source.totalItems) in all") }
}
await watching
print("\(await watcher.tallies.values.reduce(0) { $0 + $1.fetches }) watched fetches, \(failures) failed; snapshots in \(statePath)")
exit(failures == 0 ? 0 : 1)
