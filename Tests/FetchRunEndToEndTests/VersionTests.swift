import Foundation
import TestSupport
import Testing

/// The version comes from one place, the VERSION file: `--version` prints it with the commit
/// the binary was built from, and the changelog's newest entry is that version.
@Suite struct VersionTests {
    static let root = FeedEndpointTests.packageRoot

    static var version: String {
        get throws { try String(contentsOf: root.appendingPathComponent("VERSION"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    @Test func versionPrintsTheVersionFileAndTheCommit() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("version-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("out").path
        let git = try ChildProcess(executable: "/usr/bin/git", arguments: ["-C", Self.root.path, "rev-parse", "--short=12", "HEAD"], environment: ["PATH": "/usr/bin:/bin", "HOME": folder.path], directory: folder.path, stdout: out)
        await git.waitForExit(timeout: .seconds(30))
        let commit = git.terminationStatus == 0 ? (try String(contentsOfFile: out, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines) : "unknown"
        let fetchrun = try FetchRunBinary()
        let result = try await fetchrun.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == "\(try Self.version) (commit \(commit))\n", "\(result.stdout)")
        #expect(try Self.version.split(separator: ".").count == 3)
    }

    @Test func theChangelogsNewestEntryIsTheVersionAndEveryEntrySaysWhatChanged() throws {
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let entries = changelog.components(separatedBy: "\n## [").dropFirst().map { "## [" + $0 }
        #expect(entries.first?.hasPrefix("## [\(try Self.version)] - ") == true, "\(entries.first ?? "")")
        #expect(entries.last?.hasPrefix("## [0.1.0] - ") == true)
        for entry in entries {
            let sections = entry.components(separatedBy: "\n").filter { $0.hasPrefix("### ") }
            #expect(!sections.isEmpty && sections.allSatisfy { ["### Added", "### Changed", "### Fixed", "### Removed", "### Deprecated", "### Security"].contains($0) }, "\(entry.prefix(40))")
        }
    }
}
