import Foundation

/// An output written from the history rather than sent delivery by delivery: when deliveries
/// for it are due, the outbox's sender writes it from the newest records of its sources
/// (``OutputConfig/historySources``) and marks them sent.
package protocol HistoryOutput: Output {
    /// How many records it holds, the newest.
    var entries: Int { get }
    /// Writes `records` (newest first), all at once.
    /// - Throws: ``OutputError`` saying why it was not written.
    func write(_ records: [ChangeRecord], at now: Date) throws
}

/// `type: feed`: a feed file of the last changes of its sources — `path: public/changes.atom`
/// (Atom 1.0) or `public/changes.json` (JSON Feed 1.1), `entries: 50` — rewritten atomically
/// whenever one of them has a change for it, for a cron setup that publishes a static file.
struct FeedFileOutput: ConfigurableOutput, HistoryOutput {
    static let type = "feed"
    static let keys = ["path", "entries", "title"]

    var path: String
    var format: ChangeFeed.Format
    var entries: Int
    var title: String
    var outputName: String

    var batchSize: Int { 500 }
    var target: String { path }

    /// `path` relative to the config's folder; its extension says the format.
    init(options: OutputOptions) throws {
        outputName = options.outputName
        let written = options.string("path") ?? ""
        if !options.contains("path") { options.report("output '\(options.outputName)': missing 'path' (the feed file to write, such as public/changes.atom)") }
        path = written.hasPrefix("/") ? written : URL(fileURLWithPath: options.configDirectory).appendingPathComponent(written).standardizedFileURL.path
        switch (written as NSString).pathExtension.lowercased() {
        case "atom", "xml": format = .atom
        case "json": format = .json
        default:
            format = .atom
            if options.contains("path") { options.report("'path' must end in .atom (Atom) or .json (JSON Feed), not '\(TerminalText.safe(written))'", key: "path") }
        }
        entries = options.integer("entries", in: 1...1_000) ?? 50
        title = options.string("title") ?? "fetchrun: \(options.outputName)"
    }

    /// A sample cannot go to a feed file: what it holds is the history's.
    func send(_ deliveries: [Delivery], through http: any HTTPExchange) async throws {
        throw OutputError("a feed file is written from the history of its sources when they change, not from a sample delivery", scope: .deliveries)
    }

    func write(_ records: [ChangeRecord], at now: Date) throws {
        let bytes = ChangeFeed(title: title, id: "urn:fetchrun:feed:output:\(outputName)").render(records, as: format, fallback: now)
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try AtomicFile.write(Data(bytes), to: path, mode: 0o644)
        } catch {
            throw OutputError("\(path) not written: \(error)")
        }
    }
}
