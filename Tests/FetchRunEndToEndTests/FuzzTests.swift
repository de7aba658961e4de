import Foundation
import Testing
import TestSupport

/// Every reader of outside input, fed mutated inputs by the built `fetchrun-fuzz` (the tool
/// behind `make fuzz`) for a few hundred inputs each, from a fixed seed: a trap in a reader ends
/// the fuzzer with a signal, and a reader that reads an input wrongly makes it exit 1. (How
/// long an input takes is left to `make fuzz`: a timed test would flake on a busy machine.)
@Suite struct FuzzTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fuzzer = URL(fileURLWithPath: FetchRunBinary.path).deletingLastPathComponent().appendingPathComponent("fetchrun-fuzz").path

    @Test(arguments: ["feed", "config", "json", "page", "selector", "header", "message"])
    func aReaderTakesMutatedInputWithoutATrap(target: String) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fetchrun-fuzz-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("output").path
        let seeds = Self.packageRoot.appendingPathComponent("Fuzz/seeds/\(target)").path
        let arguments = [target, "--seeds", seeds, "--inputs", "600", "--seed", "20261127", "--out", folder.path,
                         // Not a timing test: finding slow inputs is for `make fuzz`.
                         "--seconds", "120", "--slow", "120"]
        let child = try ChildProcess(executable: Self.fuzzer, arguments: arguments, environment: ProcessInfo.processInfo.environment,
                                     directory: folder.path, stdout: output, stderr: output)
        await child.waitForExit(timeout: .seconds(180))
        let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let left = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        #expect(child.terminationStatus == 0, "fetchrun-fuzz \(target): \(printed.suffix(2_000)) — inputs left: \(left)")
        #expect(printed.contains("fuzz \(target): 600 inputs"), "\(printed.suffix(500))")
    }
}
