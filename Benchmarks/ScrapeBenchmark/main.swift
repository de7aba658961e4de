// How long building /metrics takes in-process, without HTTP or a client around it:
// N sources recorded once, then per round M fetches recorded and one exposition built.
//
//   fetchrun-scrape-benchmark [--sources N] [--fetches-between M] [--rounds R]
//
// The watch benchmark (`Benchmarks/monitoring.sh`) measures the whole process's CPU, which
// moves by a few tenths of a second between runs; this isolates the scrape's own cost.
import FetchRunKit
import FetchRunMonitor
import Foundation
import NIOCore

var sources = 10_000, fetchesBetween = 330, rounds = 60
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst().flatMap({ Int($0) }), value >= 0 else {
        FileHandle.standardError.write(Data("usage: fetchrun-scrape-benchmark [--sources N] [--fetches-between M] [--rounds R]\n".utf8))
        exit(64)
    }
    switch flag {
    case "--sources": sources = value
    case "--fetches-between": fetchesBetween = value
    case "--rounds": rounds = max(1, value)
    default:
        FileHandle.standardError.write(Data("unknown option \(flag)\n".utf8))
        exit(64)
    }
}

let metrics = MonitorMetrics()
let recorder = FetchMetrics(factory: metrics.factory, sourceCount: sources)
let names = (0..<sources).map { "source-\($0)" }

func recordFetch(_ index: Int, round: Int) {
    var state = SourceState(name: names[index])
    state.consecutiveFailures = round % 3
    state.lastSuccess = Date(timeIntervalSince1970: 1_700_000_000 + Double(round) * 30.5)
    var report = SourceReport(name: names[index], type: "traffic", outcome: round % 2 == 0 ? .noData : .newData([]), totalItems: 3, duration: .milliseconds(12))
    report.newCount = round % 2
    recorder.recordFetch(report, state: state)
}

// As a watch does: every source's series made at start, then its first fetch.
recorder.prepare(sources: names, states: [:])
for index in 0..<sources { recordFetch(index, round: 0) }
func exposition() -> Int { metrics.expositionBuffers().reduce(0) { $0 + $1.readableBytes } }
var bytes = exposition()
let clock = ContinuousClock()
var durations: [Duration] = []
var recording = Duration.zero, recorded = 0
var next = 0
for round in 1...rounds {
    let recordingStart = clock.now
    for _ in 0..<min(fetchesBetween, sources) {
        recordFetch(next, round: round)
        next = (next + 1) % max(1, sources)
        recorded += 1
    }
    recording += clock.now - recordingStart
    let start = clock.now
    bytes = exposition()
    durations.append(clock.now - start)
}
durations.sort()
func ms(_ duration: Duration) -> String { String(format: "%.2f ms", Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000) }
let perFetch = recorded == 0 ? "-" : String(format: "%.2f µs", (Double(recording.components.seconds) * 1e6 + Double(recording.components.attoseconds) / 1e12) / Double(recorded))
print("\(sources) sources, \(fetchesBetween) fetches between scrapes, \(rounds) scrapes of \(bytes) bytes: min \(ms(durations[0])), median \(ms(durations[durations.count / 2])), max \(ms(durations[durations.count - 1])); recording a fetch's figures: \(perFetch)")
