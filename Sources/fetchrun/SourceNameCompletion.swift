import ArgumentParser
import FetchRunKit
import Foundation

/// Shell completion of source names (`--source`, `show`, `reset`, `status`): the names in the
/// config the command line points at — `-c FILE`, `--config FILE` or `--config=FILE` among the
/// words typed so far — else `$FETCHRUN_CONFIG`, else `./sources.yaml`.
enum SourceNameCompletion {
    static let kind = CompletionKind.custom { words, _, prefix in
        names(in: configPath(in: words)).filter { $0.hasPrefix(prefix) }
    }

    static func configPath(in words: [String]) -> String {
        for (index, word) in words.enumerated() {
            if word == "-c" || word == "--config", index + 1 < words.count { return words[index + 1] }
            if word.hasPrefix("--config=") { return String(word.dropFirst("--config=".count)) }
        }
        return ProcessInfo.processInfo.environment["FETCHRUN_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? "sources.yaml"
    }

    /// Every source the config names, valid or not; none when it cannot be read.
    static func names(in path: String) -> [String] {
        var loader = ConfigLoader()
        loader.keepsValidSources = true
        guard let config = try? loader.load(path: path) else { return [] }
        return config.sources.map(\.name) + config.rejectedSources.map(\.name)
    }
}
