import FetchRunKit
import Foundation
import Logging
import Synchronization

/// How log records are written on stderr (`--log-format`, `log_format:`).
enum LogFormat: String, Sendable, CaseIterable {
    /// Lines for people; under journald (`JOURNAL_STREAM` set) each starts with its syslog
    /// priority, `<4>`, so that journald keeps the level.
    case text
    /// One JSON object per line: `time` (RFC 3339), `level`, `message`, and the record's
    /// fields (`source`, `output`, `host`, `kind`, …).
    case json

    /// The format in force: `--log-format` at start, or the config's `log_format:` once read.
    /// Records logged before the config is read use the command line's.
    static let current = Mutex(LogFormat.text)
}

/// Writes log records on stderr in the ``LogFormat`` in force, with text from outside made
/// safe for a terminal and capped (plugins' stderr, servers' errors and feed text reach logs).
struct ConsoleLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .warning
    var metadata: Logger.Metadata = [:]
    /// journald reads stderr: the priority prefix keeps each record's level.
    let underJournal: Bool
    private let text: StreamLogHandler

    init(label: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.label = label
        underJournal = environment["JOURNAL_STREAM"] != nil
        text = StreamLogHandler.standardError(label: label)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let message = TerminalText.safe(event.message.description)
        var fields = metadata
        if let own = event.metadata { fields.merge(own) { $1 } }
        switch LogFormat.current.withLock({ $0 }) {
        case .json:
            write(Self.jsonLine(level: event.level, message: message, fields: fields, at: Date()))
        case .text where underJournal:
            let rendered = fields.isEmpty ? "" : " " + fields.sorted { $0.key < $1.key }.map { "\($0.key)=\(TerminalText.safe("\($0.value)"))" }.joined(separator: " ")
            write("<\(Self.syslogPriority(event.level))>\(event.level) \(label):\(rendered) \(message)")
        case .text:
            var event = event
            event.message = "\(message)"
            var handler = text
            handler.logLevel = logLevel
            handler.metadata = metadata
            handler.log(event: event)
        }
    }

    private func write(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// One record as a JSON object on one line.
    static func jsonLine(level: Logger.Level, message: String, fields: Logger.Metadata, at time: Date) -> String {
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        json.key("time"); json.value(time)
        json.key("level"); json.value(level.rawValue)
        json.key("message"); json.value(message)
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) where !["time", "level", "message"].contains(key) {
            json.key(key); json.value(TerminalText.safe("\(value)"))
        }
        json.endObject()
        return json.string
    }

    /// syslog's priority for a level, as journald reads it from a `<N>` prefix.
    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
