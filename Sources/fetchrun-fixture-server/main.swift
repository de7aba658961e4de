import Foundation
import FixtureServer

// The fixture server as a program, for benchmarks and trying things by hand.
//
//   fetchrun-fixture-server [--hosts N] [--stats]
//
// Listens on N ports of 127.0.0.1 (default 1) — to an HTTP client, N different hosts, each
// with its own connection limit — prints one base URL per line, then serves until stdin
// closes or it is killed. With --stats it writes the requests served so far to stderr once a
// second (`requests: <n>`), which is how a benchmark counts fetches from outside fetchrun.
var hosts = 1
var stats = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument == "--hosts", let value = arguments.popFirst().flatMap(Int.init), value > 0 {
        hosts = value
    } else if argument == "--stats" {
        stats = true
    } else {
        FileHandle.standardError.write(Data("usage: fetchrun-fixture-server [--hosts N] [--stats]\n".utf8))
        exit(64)
    }
}
let servers = try (0..<hosts).map { _ in try FixtureServer() }
print(servers.map { $0.url("") }.joined(separator: "\n"))
fflush(nil)
if stats {
    Thread.detachNewThread {
        while true {
            Thread.sleep(forTimeInterval: 1)
            let served = servers.reduce(0) { $0 + $1.requests.count }
            FileHandle.standardError.write(Data("requests: \(served)\n".utf8))
        }
    }
}
while readLine() != nil {}
servers.forEach { $0.stop() }
