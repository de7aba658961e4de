import FetchRunKit
import Logging

/// Passes log records to another handler with their message made safe for a terminal: log
/// lines quote plugins' stderr, servers' errors and feed text.
struct TerminalSafeLogHandler: LogHandler {
    private var wrapped: any LogHandler

    init(_ wrapped: any LogHandler) {
        self.wrapped = wrapped
    }

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(TerminalText.safe(event.message.description))"
        wrapped.log(event: event)
    }
}
