import Foundation
import PackagePlugin

/// Writes the version a target is built as, before every build, from one place: the release
/// from the `VERSION` file at the package's root and, for the command line, the commit it is
/// built from (`git rev-parse`; `unknown` outside a checkout). `scripts/version-swift.sh` does the
/// writing, and leaves the file alone when nothing changed, so a build recompiles nothing for it.
///
/// - FetchRunTransport gets `FetchRunVersion.current` (the User-Agent, `--version`, metrics).
/// - fetchrun gets `BuildCommit.current`: only the thin command line is rebuilt after a commit.
@main
struct VersionInfo: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("Version")
        let root = context.package.directoryURL
        let kind = target.name == "FetchRunTransport" ? "release" : "commit"
        return [
            .prebuildCommand(
                displayName: "fetchrun \(kind) for \(target.name)",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [root.appendingPathComponent("scripts/version-swift.sh").path, kind, root.path, output.path],
                outputFilesDirectory: output
            ),
        ]
    }
}
