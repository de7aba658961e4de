import FetchRunKit
import Foundation

// A mutation fuzzer for the two readers of outside input that need no network: the feed
// parser and the config loader. It starts from seed files, mutates them (bit flips, inserted
// and deleted bytes, repeated and spliced chunks, tokens the formats care about), and runs
// each input through the reader for a bounded time. A crash stops the process with the input
// that caused it left in `<out>/current-<target>`; an input slower than `--slow` is saved in
// `<out>/slow-<target>-<n>`. Without coverage feedback it finds less than libFuzzer would, but
// it builds and runs with the project's ordinary toolchain, in CI's time.
//
// usage: fetchrun-fuzz feed|config --seeds DIR --seconds N [--out DIR] [--slow 1s] [--seed N]

struct Options {
    var target = ""
    var seeds: [String] = []
    var seconds = 30.0
    var out = ".build/fuzz"
    var slow = 1.0
    var randomSeed = UInt64(UInt32.random(in: 0...UInt32.max))

    init(_ arguments: [String]) {
        var rest = arguments.dropFirst()
        target = rest.popFirst() ?? ""
        while let flag = rest.popFirst() {
            let value = rest.popFirst() ?? ""
            switch flag {
            case "--seeds": seeds.append(value)
            case "--seconds": seconds = Double(value) ?? seconds
            case "--out": out = value
            case "--slow": slow = Double(value.replacingOccurrences(of: "s", with: "")) ?? slow
            case "--seed": randomSeed = UInt64(value) ?? randomSeed
            default: fail("unknown option \(flag)")
            }
        }
        guard target == "feed" || target == "config" else { fail("usage: fetchrun-fuzz feed|config --seeds DIR [--seconds N] [--out DIR]") }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("fetchrun-fuzz: \(message)\n".utf8))
    exit(64)
}

/// SplitMix64: reproducible with `--seed`.
struct Random {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(next() % UInt64(bound)) }
}

let tokens: [String: [String]] = [
    "feed": ["<", ">", "/>", "&", "&amp;", "&#x1F;", "&nbsp;", "<![CDATA[", "]]>", "<!--", "-->", "<!DOCTYPE x [<!ENTITY e \"x\">]>",
             "<item>", "</item>", "<entry>", "<title>", "</title>", "xmlns=\"http://www.w3.org/2005/Atom\"", "xml:base=\"../\"",
             " a=\"1\"", "\u{1B}[31m", "\u{9B}", "\r\n", "\0", "é", "\u{FEFF}", "<?xml version=\"1.0\" encoding=\"UTF-16\"?>",
             "9223372036854775807", "-1", "Mon, 31 Feb 99999 25:61:61 +9999", "9999-99-99T99:99:99Z"],
    "config": [":", ": ", "- ", "\n", "  ", "{", "}", "[", "]", "&a", "*a", "!!str", "${X}", "${X:-d}", "$$", "#", "'", "\"",
               "name: ", "type: ", "deadline: ", "9223372036854775807", "-1", "1e308", "1h1h1h", "0.0000001ms", "\t", "\u{1B}",
               "? ", "--- \n", "...", "%YAML 1.1\n", "url: file:", "headers: {A: \"\\r\\n\"}", "latency: 1ms..9999h"],
]

func mutate(_ input: [UInt8], corpus: [[UInt8]], target: String, random: inout Random) -> [UInt8] {
    var bytes = input
    for _ in 0..<(1 + random.below(4)) {
        switch random.below(7) {
        case 0 where !bytes.isEmpty:
            bytes[random.below(bytes.count)] ^= UInt8(1 << random.below(8))
        case 1:
            bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: random.below(bytes.count + 1))
        case 2 where !bytes.isEmpty:
            let start = random.below(bytes.count)
            bytes.removeSubrange(start..<min(bytes.count, start + 1 + random.below(64)))
        case 3 where !bytes.isEmpty:
            let start = random.below(bytes.count)
            let chunk = bytes[start..<min(bytes.count, start + 1 + random.below(256))]
            bytes.insert(contentsOf: Array(repeating: Array(chunk), count: 1 + random.below(8)).joined(), at: random.below(bytes.count + 1))
        case 4:
            let other = corpus[random.below(corpus.count)]
            guard !other.isEmpty else { continue }
            let start = random.below(other.count)
            bytes.insert(contentsOf: other[start..<min(other.count, start + 1 + random.below(512))], at: random.below(bytes.count + 1))
        default:
            let list = tokens[target]!
            bytes.insert(contentsOf: Array(list[random.below(list.count)].utf8), at: random.below(bytes.count + 1))
        }
    }
    return Array(bytes.prefix(1 << 20))
}

let options = Options(CommandLine.arguments)
var corpus: [[UInt8]] = []
for folder in options.seeds {
    for name in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() {
        if let data = FileManager.default.contents(atPath: (folder as NSString).appendingPathComponent(name)), data.count <= 1 << 20 {
            corpus.append(Array(data))
        }
    }
}
if corpus.isEmpty { corpus = [Array((options.target == "feed" ? "<rss version=\"2.0\"><channel><item><title>t</title></item></channel></rss>" : "sources:\n  - name: t\n    type: traffic\n").utf8)] }
try? FileManager.default.createDirectory(atPath: options.out, withIntermediateDirectories: true)
let current = (options.out as NSString).appendingPathComponent("current-\(options.target)")

let loader = ConfigLoader(environment: ["X": "value"])
var random = Random(state: options.randomSeed)
let clock = ContinuousClock()
let end = clock.now + .seconds(options.seconds)
var executions = 0, rejected = 0, slow = 0
var slowest: Duration = .zero
while clock.now < end {
    let input = mutate(corpus[random.below(corpus.count)], corpus: corpus, target: options.target, random: &random)
    // Written first: if the reader crashes, this file is the input that did it.
    _ = FileManager.default.createFile(atPath: current, contents: Data(input))
    let started = clock.now
    switch options.target {
    case "feed":
        if (try? FeedParser(baseURL: "https://user:pw@example.org/feed").parse(Data(input), charset: random.below(2) == 0 ? nil : "iso-8859-1")) == nil { rejected += 1 }
    default:
        do {
            _ = try loader.load(text: String(decoding: input, as: UTF8.self), file: "fuzz.yaml", directory: "/nonexistent")
        } catch {
            rejected += 1
            _ = error.description
        }
    }
    let took = clock.now - started
    slowest = max(slowest, took)
    if took > .seconds(options.slow) {
        slow += 1
        _ = FileManager.default.createFile(atPath: (options.out as NSString).appendingPathComponent("slow-\(options.target)-\(slow)"), contents: Data(input))
    }
    executions += 1
    // Keep some mutants as seeds, so that mutations build on mutations.
    if executions % 16 == 0, corpus.count < 4096 { corpus.append(input) }
}
try? FileManager.default.removeItem(atPath: current)
print("fuzz \(options.target): \(executions) inputs in \(Int(options.seconds))s (seed \(options.randomSeed)), \(rejected) rejected with a message, 0 crashes, \(slow) slower than \(options.slow)s, slowest \(String(format: "%.3f", slowest.seconds))s")
exit(slow == 0 ? 0 : 1)
