import FetchRunKit
import Foundation
import Logging

/// Prints download events as they happen: a line per finished or failed file on stdout, a
/// live board (a bar per download, a total) redrawn in place on stderr when stderr is a
/// terminal — never in a pipe — or, with `--format json`, `download` events with progress at
/// most once a second per download.
///
/// Anything else a command prints while downloads run goes through ``out(_:)`` and
/// ``error(_:)``, so that it lands above the board instead of being overdrawn by it.
final class DownloadConsole: Sendable {
    private enum Message {
        case event(DownloadEvent)
        case out([String])
        case error(String)
    }

    private let messages: AsyncStream<Message>
    private let continuation: AsyncStream<Message>.Continuation
    private let format: OutputFormat
    /// The time JSON progress lines are spaced by.
    private let clock: any FetchClock = SystemClock()

    init(format: OutputFormat) {
        (messages, continuation) = AsyncStream<Message>.makeStream()
        self.format = format
    }

    /// Prints what arrives until ``finish()`` — the caller runs it beside its work, and waits
    /// for it after finishing.
    func printUntilFinished() async {
        let format = self.format, stream = messages
        let environment = ProcessInfo.processInfo.environment
        let live = format == .text && isatty(STDERR_FILENO) == 1 && environment["TERM"] != "dumb"
        let report = DownloadReport(style: Console.stdoutStyle)
        let board = DownloadReport(style: TerminalStyle.forStream(STDERR_FILENO, environment: environment))
        var drawnLines = 0
        var running: [DownloadProgress] = []
        var lastJSONProgress: [String: ContinuousClock.Instant] = [:]
        func erase() {
            guard drawnLines > 0 else { return }
            FileHandle.standardError.write(Data("\u{1B}[\(drawnLines)A\u{1B}[J".utf8))
            drawnLines = 0
        }
        func draw() {
            let lines = board.board(running, width: Self.terminalWidth())
            guard !lines.isEmpty else { return }
            FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
            drawnLines = lines.count
        }
        for await message in stream {
            let event: DownloadEvent
            switch message {
            case .event(let downloadEvent):
                event = downloadEvent
            case .out(let lines):
                if live { erase() }
                Console.out(lines)
                if live { draw() }
                continue
            case .error(let text):
                if live { erase() }
                Console.error(text)
                if live { draw() }
                continue
            }
            switch (format, event) {
            case (.json, .progress(let list)):
                let now = clock.now
                let due = list.filter { progress in lastJSONProgress[progress.url].map { now - $0 >= .seconds(1) } ?? true }
                for progress in due { lastJSONProgress[progress.url] = now }
                Console.out(DownloadReport.jsonLines(for: .progress(due)))
            case (.json, _):
                Console.out(DownloadReport.jsonLines(for: event))
            case (.text, .progress(let list)):
                running = list
                if live {
                    erase()
                    draw()
                }
            case (.text, _):
                guard let line = report.line(for: event) else { continue }
                if case .done(let entry) = event { running.removeAll { $0.url == entry.url } }
                if case .failed(let entry) = event { running.removeAll { $0.url == entry.url } }
                if live { erase() }
                Console.out([line])
                if live { draw() }
            }
        }
        if live { erase() }
    }

    var sink: @Sendable (DownloadEvent) -> Void {
        { [continuation] event in continuation.yield(.event(event)) }
    }

    /// Prints result lines on stdout, in order with the download events.
    func out(_ lines: [String]) {
        continuation.yield(.out(lines))
    }

    /// Prints a message on stderr, in order with the download events.
    func error(_ text: String) {
        continuation.yield(.error(text))
    }

    /// Ends ``printUntilFinished()`` once every message so far is printed (and the board cleared).
    func finish() {
        continuation.finish()
    }

    private static func terminalWidth() -> Int {
        var size = winsize()
        return ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
    }
}

extension DownloadConsole {
    /// Runs `service` until it has drained the queue or the command's graceful shutdown (a
    /// signal) stops it, printing its events; then, in text, one summary line. The caller has
    /// taken the transfer lock.
    /// - Returns: what was downloaded.
    static func download(with service: DownloadService, format: OutputFormat) async -> DownloadTally {
        let console = DownloadConsole(format: format)
        async let printed: Void = console.printUntilFinished()
        async let finished = console.show(service.events)
        do {
            try await service.run()
        } catch {
            console.error("downloads: \(error)")
        }
        let (tally, interrupted, duration) = await finished ?? (DownloadTally(), false, .zero)
        console.finish()
        await printed
        if format == .text {
            Console.out([DownloadReport(style: Console.stdoutStyle).summary(tally, duration: duration)])
        }
        if interrupted {
            Console.error("downloads stopped; partial files resume at the next run, watch or transfer")
        }
        return tally
    }

    /// Prints a download service's events as they come; returns what its last one said.
    func show(_ events: AsyncStream<DownloadService.Event>) async -> (DownloadTally, interrupted: Bool, duration: Duration)? {
        var finished: (DownloadTally, interrupted: Bool, duration: Duration)?
        for await event in events {
            switch event {
            case .download(let downloadEvent):
                sink(downloadEvent)
            case .transferElsewhere(let pid):
                error("downloads are left to the transfer already running (process \(pid.map(String.init) ?? "?"))")
            case .unusable(let problem):
                error(problem.description)
            case .finished(let tally, let interrupted, let duration):
                finished = (tally, interrupted, duration)
            }
        }
        return finished
    }
}
