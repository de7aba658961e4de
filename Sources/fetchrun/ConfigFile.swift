import FetchRunKit
import Foundation

/// Reading and changing the config file's text, for the commands that add sources.
enum ConfigFile {
    static func readText(_ path: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw CommandFailure(ExitStatus.invalidConfig, "\(path): cannot read the config file: \(error.localizedDescription)")
        }
    }

    /// `text` with `sources` appended, checked by loading it as the config it would become.
    static func append(_ sources: [ConfigEditor.NewSource], to text: String, path: String) throws -> String {
        try appendLoading(sources, to: text, path: path).text
    }

    /// ``append(_:to:path:)``, with the config the text loads as.
    static func appendLoading(_ sources: [ConfigEditor.NewSource], to text: String, path: String) throws -> (text: String, config: FetchConfig) {
        let updated: String
        do {
            updated = try ConfigEditor.appending(sources, to: text)
        } catch {
            throw CommandFailure(ExitStatus.invalidConfig, "\(path): \(error)")
        }
        let directory = (URL(fileURLWithPath: path).standardizedFileURL.path as NSString).deletingLastPathComponent
        // The file may already hold a source with problems of its own; the new ones must load.
        var loader = ConfigLoader()
        loader.keepsValidSources = true
        do throws(ConfigError) {
            let config = try loader.load(text: updated, file: path, directory: directory)
            let problems = config.rejectedSources.filter { rejected in sources.contains { $0.name == rejected.name } }
            guard problems.isEmpty else { throw ConfigError(problems.flatMap(\.diagnostics)) }
            return (updated, config)
        } catch {
            throw CommandFailure(ExitStatus.invalidConfig, error.diagnostics.map(\.description) + ["\(path): the config with the new sources would not load; nothing written"])
        }
    }

    static func write(_ text: String, to path: String) throws {
        do {
            try ConfigEditor.write(text, to: path)
        } catch {
            throw CommandFailure(ExitStatus.invalidConfig, "\(error)")
        }
    }
}
