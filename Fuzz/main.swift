import FetchRunKit
import Foundation

// A mutation fuzzer for fetchrun's readers of outside input (the targets in FuzzTarget.swift:
// feeds, configs, JSON and stored state, web pages, selectors, header values and dates). It
// starts from seed files, mutates them (bit flips, inserted and deleted bytes, repeated and
// spliced chunks, tokens the formats care about), and runs each input through the readers for a
// bounded time or number of inputs. A crash stops the process with the input that caused it left
// in `<out>/current-<target>`; an input slower than `--slow` is saved in `<out>/slow-<target>-<n>`,
// and one a reader read wrongly in `<out>/wrong-<target>-<n>`. Without coverage feedback it finds
// less than libFuzzer would, but it builds and runs with the project's ordinary toolchain, in
// CI's time.
//
// usage: fetchrun-fuzz <target> --seeds DIR [--seconds N] [--inputs N] [--out DIR] [--slow 1s] [--seed N]

struct Options {
    var target = ""
    var seeds: [String] = []
    var seconds = 30.0
    var inputs = Int.max
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
            case "--inputs": inputs = Int(value) ?? inputs
            case "--out": out = value
            case "--slow": slow = Double(value.replacingOccurrences(of: "s", with: "")) ?? slow
            case "--seed": randomSeed = UInt64(value) ?? randomSeed
            default: fail("unknown option \(flag)")
            }
        }
        guard FuzzTarget.named(target) != nil else {
            fail("usage: fetchrun-fuzz \(FuzzTarget.all.map(\.name).joined(separator: "|")) --seeds DIR [--seconds N] [--inputs N] [--out DIR]")
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("fetchrun-fuzz: \(message)\n".utf8))
    exit(64)
}

extension SplitMix64 {
    mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(next() % UInt64(bound)) }
}

func mutate(_ input: [UInt8], corpus: [[UInt8]], tokens list: [String], mutationsAtMost: Int, random: inout SplitMix64) -> [UInt8] {
    var bytes = input
    for _ in 0..<(1 + random.below(mutationsAtMost)) {
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
            bytes.insert(contentsOf: Array(list[random.below(list.count)].utf8), at: random.below(bytes.count + 1))
        }
    }
    return Array(bytes.prefix(1 << 20))
}

let options = Options(CommandLine.arguments)
let target = FuzzTarget.named(options.target)!
var corpus: [[UInt8]] = []
for folder in options.seeds {
    for name in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() {
        guard let data = FileManager.default.contents(atPath: (folder as NSString).appendingPathComponent(name)), data.count <= 1 << 20 else { continue }
        if target.seedsAreLines {
            corpus += data.split(separator: UInt8(ascii: "\n")).map { Array($0) }
        } else {
            corpus.append(Array(data))
        }
    }
}
if corpus.isEmpty { fail("no seeds for \(target.name) in \(options.seeds.joined(separator: ", "))") }
try? FileManager.default.createDirectory(atPath: options.out, withIntermediateDirectories: true)
let current = (options.out as NSString).appendingPathComponent("current-\(target.name)")

// SplitMix64: the same mutations again with the same `--seed`.
var random = SplitMix64(state: options.randomSeed)
let clock = ContinuousClock()
let end = clock.now + .seconds(options.seconds)
var executions = 0, rejected = 0, slow = 0, wrong = 0
var slowest: Duration = .zero
while clock.now < end, executions < options.inputs {
    let input = mutate(corpus[random.below(corpus.count)], corpus: corpus, tokens: target.tokens, mutationsAtMost: target.mutationsAtMost, random: &random)
    // Written first: if the reader crashes, this file is the input that did it.
    _ = FileManager.default.createFile(atPath: current, contents: Data(input))
    let started = clock.now
    switch target.read(input, &random) {
    case .read:
        // Keep some mutants that were read as seeds, so that mutations build on mutations
        // that still get past a reader's first checks.
        if executions % 16 == 0, corpus.count < 4096 { corpus.append(input) }
    case .rejected:
        rejected += 1
    case .wrong(let what):
        wrong += 1
        let saved = (options.out as NSString).appendingPathComponent("wrong-\(target.name)-\(wrong)")
        _ = FileManager.default.createFile(atPath: saved, contents: Data(input))
        FileHandle.standardError.write(Data("fetchrun-fuzz: \(what): \(saved)\n".utf8))
    }
    let took = clock.now - started
    slowest = max(slowest, took)
    if took > .seconds(options.slow) {
        slow += 1
        _ = FileManager.default.createFile(atPath: (options.out as NSString).appendingPathComponent("slow-\(target.name)-\(slow)"), contents: Data(input))
    }
    executions += 1
}
try? FileManager.default.removeItem(atPath: current)
let seconds = (clock.now - (end - .seconds(options.seconds))).components.seconds
print("fuzz \(target.name): \(executions) inputs in \(seconds)s (seed \(options.randomSeed)), \(rejected) rejected with a message, 0 crashes, \(wrong) read wrongly, \(slow) slower than \(options.slow)s, slowest \(String(format: "%.3f", slowest.seconds))s")
exit(slow == 0 && wrong == 0 ? 0 : 1)
