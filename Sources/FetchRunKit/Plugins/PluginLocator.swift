import Foundation

/// Finds adapter plugins: `fetchrun-adapter-<type>` in the config's `plugins/` folder, then on
/// `PATH` — the convention git, kubectl and cargo use for their subcommands.
package enum PluginLocator {
    package static let prefix = "fetchrun-adapter-"

    /// The plugin for `type`, or `nil`.
    package static func find(_ type: String, configDirectory: String, environment: [String: String]) -> String? {
        for folder in folders(configDirectory: configDirectory, environment: environment) {
            let path = (folder as NSString).appendingPathComponent(prefix + type)
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Every plugin there is, by type; the first found for a type wins, as in `find`.
    package static func all(configDirectory: String, environment: [String: String]) -> [(type: String, path: String)] {
        var found: [(type: String, path: String)] = []
        for folder in folders(configDirectory: configDirectory, environment: environment) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            for name in names.sorted() where name.hasPrefix(prefix) && name.count > prefix.count {
                let type = String(name.dropFirst(prefix.count))
                let path = (folder as NSString).appendingPathComponent(name)
                guard !found.contains(where: { $0.type == type }), FileManager.default.isExecutableFile(atPath: path) else { continue }
                found.append((type, path))
            }
        }
        return found
    }

    /// A program name looked up on `PATH`, as a shell would; `nil` when it is not there.
    static func searchPath(for program: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard !program.isEmpty, !program.contains("/") else { return nil }
        for folder in (environment["PATH"] ?? "").split(separator: ":") {
            let path = (String(folder) as NSString).appendingPathComponent(program)
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    private static func folders(configDirectory: String, environment: [String: String]) -> [String] {
        [(configDirectory as NSString).appendingPathComponent("plugins")] + (environment["PATH"] ?? "").split(separator: ":").map(String.init)
    }
}
