import ArgumentParser
import FetchRunCluster
import FetchRunKit
import Foundation
import Logging

/// `--config`: which config file.
struct ConfigOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp("The config file (default: $FETCHRUN_CONFIG, else ./sources.yaml).", valueName: "file"), completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    var path: String {
        config ?? ProcessInfo.processInfo.environment["FETCHRUN_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? "sources.yaml"
    }

    /// Checks that every name in `names` is a source of `config`, or prints which are not (and
    /// what the config has) and exits 64.
    func requireSources(_ names: [String], in config: FetchConfig) throws {
        let unknown = names.filter { name in !config.sources.contains { $0.name == name } && !config.rejectedSources.contains { $0.name == name } }
        guard unknown.isEmpty else {
            throw CommandFailure(ExitStatus.usage, "unknown source\(unknown.count == 1 ? "" : "s") \(unknown.map { "'\($0)'" }.joined(separator: ", ")); \(path) has: \(config.sources.map(\.name).joined(separator: ", "))")
        }
    }

    /// Loads the config, or prints every problem and exits 65.
    /// - Parameter keepingValidSources: a source with problems of its own is left out (see
    ///   ``FetchConfig/rejectedSources``) rather than failing the command, when another is valid.
    func load(keepingValidSources: Bool = true) async throws -> FetchConfig {
        var loader = ConfigLoader()
        loader.keepsValidSources = keepingValidSources
        do {
            return try await loader.load(path: path)
        } catch {
            throw CommandFailure(ExitStatus.invalidConfig, error.diagnostics.map(\.description) + (error.diagnostics.count > 1 ? ["\(error.diagnostics.count) problems in \(path)"] : []))
        }
    }

    /// SIGHUP: the config again, for a service that is running. A config with problems (a bad
    /// source included) is not applied: its problems are printed, with the fact that `still`
    /// (what the service goes on doing) keeps the previous config, and the result is `nil`.
    func reload(still: String) async -> FetchConfig? {
        do {
            return try await ConfigLoader().load(path: path)
        } catch {
            Console.error(
                ["SIGHUP: \(path) has \(error.diagnostics.count) problem\(error.diagnostics.count == 1 ? "" : "s"); \(still) with the previous config"]
                    + error.diagnostics.map(\.description)
            )
            return nil
        }
    }

    /// The line that says what a reload changed.
    func reportReloaded(added: [String], removed: [String], changed: [String], outputs: [OutputConfig]) {
        func names(_ list: [String]) -> String { list.isEmpty ? "none" : list.joined(separator: ", ") }
        Console.error("SIGHUP: reloaded \(path): added \(names(added)), removed \(names(removed)), changed \(names(changed)); outputs: \(names(outputs.map(\.name)))")
    }

    /// What a reload leaves as it was at start — `http:`, and `downloads:` for a service that
    /// downloads: what it set up once, which waits for the next start.
    static func sectionsNeedingARestart(from started: FetchConfig, to reloaded: FetchConfig, downloads: Bool) -> [String] {
        var sections: [String] = []
        if reloaded.http != started.http { sections.append("http") }
        if downloads, reloaded.downloads != started.downloads { sections.append("downloads") }
        return sections
    }
}

/// `--state-dir`: overrides the config's `state_dir`.
struct StateOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The state directory, overriding the config's state_dir.", valueName: "dir"))
    var stateDir: String?

    @Option(help: ArgumentHelp("PostgreSQL state shared by workers (postgres://user@host/db), overriding the config's state.", valueName: "url"))
    var state: String?

    /// `--state`, else the config's `state:`; `nil` when state lives in a folder.
    func postgresURL(for config: FetchConfig) -> String? {
        if stateDir != nil, state == nil { return nil }
        return state ?? config.stateURL
    }

    /// `--state-dir`, made absolute against the working directory.
    private var overridden: StateDirectory? {
        stateDir.map { StateDirectory(path: URL(fileURLWithPath: $0).standardizedFileURL.path) }
    }

    func directory(for config: FetchConfig) -> StateDirectory {
        overridden ?? StateDirectory(path: config.stateDirectory)
    }

    /// For commands that need only the state directory: `--state-dir` alone is enough,
    /// otherwise the config (which must then load) says where state lives.
    func directory(loading configOptions: ConfigOptions) async throws -> StateDirectory {
        if let overridden { return overridden }
        return directory(for: try await configOptions.load())
    }

    /// Creates the state directory if needed and takes its lock — or, for a watch, the watch
    /// lock — or prints why not and exits 73 / 75.
    func prepareAndLock(_ directory: StateDirectory, forWatch: Bool = false) async throws -> StateLock {
        // Waiting for the lock sleeps its thread: off the cooperative pool.
        let taken = await BlockingWork.run {
            Result { () throws(StateDirectoryError) in
                try directory.prepare()
                // A transfer holds the state lock for a moment now and then, to record a finished file.
                return forWatch ? try directory.lockForWatch() : try directory.lock(patience: .milliseconds(500))
            }
        }
        do {
            return try taken.get()
        } catch {
            throw CommandFailure(ExitStatus.forStateDirectory(error), error.description)
        }
    }
}

extension StateOptions {
    /// Opens the state directory's store (taken as prepared and locked), saying on stderr when
    /// a damaged database was moved aside and rebuilt; exits 73 when it cannot be used.
    func openStore(in directory: StateDirectory) async throws -> SQLiteStateStore {
        do {
            let (store, note) = try await SQLiteStateStore.open(in: directory)
            if let note { Console.error(note) }
            return store
        } catch {
            throw CommandFailure(error.isLocked ? ExitStatus.stateDirectoryLocked : ExitStatus.stateDirectoryUnusable, error.description)
        }
    }

    /// The store of `config` for the commands that read what is recorded (`status`, `show`,
    /// `outputs`, `reset`): PostgreSQL when `state:` (or `--state`) names it — run while
    /// `body` runs —, else the state directory's `state.db`; `nil` when there is none yet.
    /// Exits 73 when it cannot be used.
    func withRecordedState<T>(of config: FetchConfig, creating: Bool = false, _ body: (any SourceStateStore) async throws -> T) async throws -> T? {
        do {
            if let url = postgresURL(for: config) {
                let store = try PostgresStateStore(url: url)
                return try await withRunning(store.client) {
                    try await store.prepare()
                    return try await body(store)
                }
            }
            let directory = directory(for: config)
            let store = creating ? try await openStore(in: directory) : try await SQLiteStateStore.openExisting(in: directory)
            guard let store else { return nil }
            return try await body(store)
        } catch let error as StateStoreError {
            throw CommandFailure(error.isLocked ? ExitStatus.stateDirectoryLocked : ExitStatus.stateDirectoryUnusable, error.description)
        }
    }
}

/// `--format` and `-v`: how results and logs are written.
struct OutputOptions: ParsableArguments {
    @Option(help: "Output format: text, or json (one JSON object per line).")
    var format: OutputFormat = .text

    @Flag(name: .shortAndLong, help: "More log output on stderr (-v: info, -vv: debug).")
    var verbose: Int

    @Option(help: "Log format on stderr: text, or json (one JSON object per line); overrides log_format: in the config.")
    var logFormat: LogFormat?

    func bootstrapLogging() {
        let level: Logger.Level = verbose >= 2 ? .debug : verbose == 1 ? .info : .warning
        if let logFormat { LogFormat.current.withLock { $0 = logFormat } }
        LoggingSystem.bootstrap { label in
            var handler = ConsoleLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// The config's `log_format:`, unless `--log-format` chose already.
    func adoptLogFormat(of config: FetchConfig) {
        guard logFormat == nil, let name = config.logFormat, let format = LogFormat(rawValue: name) else { return }
        LogFormat.current.withLock { $0 = format }
    }
}

extension OutputFormat: ExpressibleByArgument {}
extension LogFormat: ExpressibleByArgument {}
