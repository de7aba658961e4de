import Foundation

/// What end-to-end suites that run scripts as plugins share.
protocol ScriptedPlugins {}

extension ScriptedPlugins {
    /// Writes an executable `/bin/sh` script into the test's folder.
    func script(_ fetchrun: FetchRunBinary, _ name: String, _ body: String) throws {
        try fetchrun.write("#!/bin/sh\n" + body + "\n", to: name)
        chmod(fetchrun.path(name), 0o755)
    }

    /// The `source` events of an NDJSON run, by source name.
    func sources(_ result: FetchRunBinary.Result) throws -> [String: [String: Any]] {
        var found: [String: [String: Any]] = [:]
        for event in try events(result.stdout) where event["event"] as? String == "source" {
            found[event["source"] as! String] = event
        }
        return found
    }
}
