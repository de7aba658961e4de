import CLibXML2
import FetchRunKit
import FixtureServer
import Foundation

// Parser throughput: fetchrun's FeedParser beside a bare libxml2 reader pass over the same
// bytes (read every node, look at nothing). One core, from memory.
//
//   fetchrun-parser-benchmark [--feeds N] [--rounds R] [--extra FILE ...] [--dump DIR] [--snapshots] [--page BYTES]
//
// --snapshots times snapshot reading instead: the corpus's items as snapshot files (as
// fetchrun writes them), read by JSONReader beside JSONDecoder.
//
// --page BYTES times a `page` source's work on one generated page of about BYTES (the fixture
// server's /page/1.html): libxml2's htmlReadMemory alone (parse, free) beside what fetchrun
// does with it (parse, copy into HTMLDocument, select `#product` and render its text, and
// select the stories as items' titles and links).
//
// The corpus: N generated feeds as RSS 2.0 and as Atom 1.0 (20-60 KB, 20-50 items each) plus
// any --extra files (the bundled Reuters-style feed, say).

var feedCount = 200, rounds = 7
var extraFiles: [String] = []
var dumpFolder: String?
var snapshotsMode = false
var pageBytes: Int?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--feeds": feedCount = arguments.popFirst().flatMap(Int.init) ?? feedCount
    case "--rounds": rounds = arguments.popFirst().flatMap(Int.init) ?? rounds
    case "--extra": if let path = arguments.popFirst() { extraFiles.append(path) }
    case "--dump": dumpFolder = arguments.popFirst()
    case "--snapshots": snapshotsMode = true
    case "--page": pageBytes = arguments.popFirst().flatMap(Int.init)
    default:
        FileHandle.standardError.write(Data("usage: fetchrun-parser-benchmark [--feeds N] [--rounds R] [--extra FILE ...] [--dump DIR] [--snapshots] [--page BYTES]\n".utf8))
        exit(64)
    }
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

func milliseconds(_ work: () throws -> Int) rethrows -> (ms: Double, result: Int) {
    let start = ContinuousClock.now
    let result = try work()
    let elapsed = ContinuousClock.now - start
    return ((Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * 1000, result)
}

/// One page, and the three ways of reading it that `--page` times.
struct PageWork {
    let page: Data
    let product = try! CSSSelector("#product")
    let stories = try! CSSSelector("li.story"), storyLink = try! CSSSelector("h3 a")

    func libxml2Alone() -> Int {
        page.withUnsafeBytes { buffer in
            let options = Int32(HTML_PARSE_NONET.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue | HTML_PARSE_RECOVER.rawValue)
            guard let document = htmlReadMemory(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count), nil, nil, options) else { return 0 }
            xmlFreeDoc(document)
            return 1
        }
    }

    func watched() throws -> Int {
        let document = try HTMLDocument.parse(page, url: "https://shop.example/page/1.html").document
        return product.select(in: document).map { document.text(of: $0) }.joined(separator: "\n").utf8.count
    }

    func items() throws -> Int {
        let document = try HTMLDocument.parse(page, url: "https://shop.example/page/1.html").document
        return stories.select(in: document).map { entry in
            let link = storyLink.select(in: document, below: entry).first
            return (link.map { document.line(of: $0) } ?? "", link.flatMap { document.nodes[$0].attribute("href") } ?? "")
        }.count
    }
}

if let pageBytes {
    let work = PageWork(page: Data(PageGenerator.page(number: 1, targetBytes: pageBytes).utf8))
    let page = work.page
    let libxml2Alone = work.libxml2Alone, watched = work.watched, items = work.items
    _ = libxml2Alone(); _ = try watched(); _ = try items()
    var alone: [Double] = [], select: [Double] = [], list: [Double] = []
    var selectedBytes = 0, entries = 0
    for _ in 0..<rounds {
        alone.append(milliseconds(libxml2Alone).ms)
        let one = try milliseconds(watched)
        select.append(one.ms)
        selectedBytes = one.result
        let many = try milliseconds(items)
        list.append(many.ms)
        entries = many.result
    }
    print("page: \(page.count) bytes, \(rounds) alternating rounds, median")
    print(String(format: "libxml2 htmlReadMemory alone:         %7.2f ms", median(alone)))
    print(String(format: "fetchrun parse + select #product:     %7.2f ms  (%d bytes of text)  %.2f × libxml2", median(select), selectedBytes, median(select) / median(alone)))
    print(String(format: "fetchrun parse + %4d stories as items: %6.2f ms  %.2f × libxml2", entries, median(list), median(list) / median(alone)))
    exit(0)
}

var corpus: [Data] = []
for number in 1...feedCount {
    let feed = FeedGenerator.feed(number: number)
    corpus.append(Data(FeedGenerator.rss(feed).utf8))
    corpus.append(Data(FeedGenerator.atom(feed).utf8))
}
for path in extraFiles {
    guard let data = FileManager.default.contents(atPath: path) else { fatalError("cannot read \(path)") }
    corpus.append(data)
}
let totalBytes = corpus.reduce(0) { $0 + $1.count }

// --dump writes the corpus out, one file per document, for other parsers to read, and stops.
if let dumpFolder {
    try FileManager.default.createDirectory(atPath: dumpFolder, withIntermediateDirectories: true)
    for (index, document) in corpus.enumerated() {
        try document.write(to: URL(fileURLWithPath: dumpFolder).appendingPathComponent(String(format: "%04d.xml", index)))
    }
    print("wrote \(corpus.count) documents to \(dumpFolder)")
    exit(0)
}

// --snapshots: the same corpus as snapshot files, read by JSONReader and by JSONDecoder.
if snapshotsMode {
    let parser = FeedParser(baseURL: "https://news.example.org/feed")
    let files = corpus.enumerated().map { index, document in
        Snapshot(source: "s\(index)", type: "rss", updatedAt: Date(), items: (try? parser.parse(document).items) ?? [], validators: HTTPValidators(etag: "\"\(index)\"")).jsonData()
    }
    let bytes = Double(files.reduce(0) { $0 + $1.count })
    func pass(_ read: (Data) throws -> Snapshot) -> Double {
        let start = ContinuousClock.now
        var items = 0
        for file in files { items += ((try? read(file))?.items.count) ?? 0 }
        precondition(items > 0)
        let elapsed = ContinuousClock.now - start
        return bytes / 1_048_576 / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    var decoderSpeeds: [Double] = [], readerSpeeds: [Double] = []
    for _ in 0..<rounds {
        decoderSpeeds.append(pass { try SnapshotCoding.decoder.decode(Snapshot.self, from: $0) })
        readerSpeeds.append(pass { try Snapshot(json: $0) })
    }
    print("snapshots: \(files.count) files, \(String(format: "%.1f", bytes / 1_048_576)) MiB, \(rounds) alternating rounds, median")
    print(String(format: "JSONDecoder:  %7.1f MB/s  (%.1f ms per 1,000 files)", median(decoderSpeeds), 1000 * bytes / 1_048_576 / median(decoderSpeeds) / Double(files.count) * 1000))
    print(String(format: "JSONReader:   %7.1f MB/s  (%.1f ms per 1,000 files)", median(readerSpeeds), 1000 * bytes / 1_048_576 / median(readerSpeeds) / Double(files.count) * 1000))
    print(String(format: "speed-up:     %7.1f ×", median(readerSpeeds) / median(decoderSpeeds)))
    exit(0)
}

/// Every node of every document through xmlTextReaderRead, and nothing else.
@MainActor func rawReaderPass() -> Int {
    var nodes = 0
    for document in corpus {
        document.withUnsafeBytes { buffer in
            let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_COMPACT.rawValue)
            let reader = xmlReaderForMemory(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count), nil, nil, options)!
            while xmlTextReaderRead(reader) == 1 { nodes += 1 }
            xmlFreeTextReader(reader)
        }
    }
    return nodes
}

@MainActor func fetchrunParserPass() -> Int {
    var items = 0
    let parser = FeedParser(baseURL: "https://news.example.org/feed")
    for document in corpus {
        items += (try? parser.parse(document).items.count) ?? 0
    }
    return items
}

/// MB/s of one pass, timed.
@MainActor func speed(_ pass: () -> Int) -> (megabytesPerSecond: Double, result: Int) {
    let clock = ContinuousClock()
    let start = clock.now
    let result = pass()
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (Double(totalBytes) / 1_048_576 / seconds, result)
}

_ = rawReaderPass()
_ = fetchrunParserPass()
// Rounds alternate between the two, so a busy moment on a shared machine hits both alike.
var rawSpeeds: [Double] = [], oursSpeeds: [Double] = []
var nodes = 0, items = 0
for _ in 0..<rounds {
    let raw = speed(rawReaderPass)
    let ours = speed(fetchrunParserPass)
    rawSpeeds.append(raw.megabytesPerSecond)
    oursSpeeds.append(ours.megabytesPerSecond)
    nodes = raw.result
    items = ours.result
}
print("corpus: \(corpus.count) documents, \(String(format: "%.1f", Double(totalBytes) / 1_048_576)) MiB, \(rounds) alternating rounds, median")
print(String(format: "libxml2 reader pass:  %7.1f MB/s  (%d nodes)", median(rawSpeeds), nodes))
print(String(format: "fetchrun FeedParser:  %7.1f MB/s  (%d items)", median(oursSpeeds), items))
print(String(format: "ratio:                %7.1f %%", 100 * median(oursSpeeds) / median(rawSpeeds)))
