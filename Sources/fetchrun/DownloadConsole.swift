import FetchRunKit
import Foundation

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

    private let continuation: AsyncStream<Message>.Continuation
    private let printer: Task<Void, Never>

    init(format: OutputFormat) {
        let (stream, continuation) = AsyncStream<Message>.makeStream()
        self.continuation = continuation
        let environment = ProcessInfo.processInfo.environment
        let live = format == .text && isatty(STDERR_FILENO) == 1 && environment["TERM"] != "dumb"
        let report = DownloadReport(style: Console.stdoutStyle)
        let board = DownloadReport(style: TerminalStyle.forStream(STDERR_FILENO, environment: environment))
        printer = Task {
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
                    let now = ContinuousClock.now
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

    /// Waits until every event so far is printed, and clears the board.
    func finish() async {
        continuation.finish()
        await printer.value
    }

    private static func terminalWidth() -> Int {
        var size = winsize()
        return ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
    }
}

extension Downloader {
    /// A downloader as every command builds one: its own HTTP client (downloads never hold
    /// back fetches), the config's limits, events printed by `console`.
    init(config: FetchConfig, stateDirectory: StateDirectory, holdsStateLock: Bool, console: DownloadConsole) {
        // The downloader keeps to `per_host` itself; curl must not queue what it starts, or
        // the wait would count towards the stall limit.
        var http = HTTPClient.Configuration()
        http.maxConnectionsPerHost = max(http.maxConnectionsPerHost, config.downloads.maxPerHost)
        self.init(
            queue: stateDirectory.downloads, http: HTTPClient(configuration: http), limits: config.downloads,
            snapshots: SnapshotRecorder(stateDirectory: stateDirectory, holdsStateLock: holdsStateLock),
            onEvent: console.sink
        )
    }
}

extension DownloadConsole {
    /// Downloads the queue in `mode` with progress printed, until done or `stop` yields; then,
    /// in text, one summary line.
    static func download(
        config: FetchConfig, stateDirectory: StateDirectory, holdsStateLock: Bool, transferLock: StateLock,
        mode: Downloader.Mode, format: OutputFormat, stop: AsyncStream<Int32>? = nil
    ) async -> DownloadTally {
        let console = DownloadConsole(format: format)
        let downloader = Downloader(config: config, stateDirectory: stateDirectory, holdsStateLock: holdsStateLock, console: console)
        let started = ContinuousClock.now
        let work = Task { await downloader.run(mode, transferLock: transferLock) }
        let stopper = Task {
            guard let stop else { return false }
            for await _ in stop {
                work.cancel()
                return true
            }
            return false
        }
        let tally = await work.value
        stopper.cancel()
        await console.finish()
        if format == .text {
            Console.out([DownloadReport(style: Console.stdoutStyle).summary(tally, duration: ContinuousClock.now - started)])
        }
        if await stopper.value {
            Console.error("downloads stopped; partial files resume at the next run, watch or transfer")
        }
        return tally
    }
}
