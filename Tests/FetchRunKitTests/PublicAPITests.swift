import Foundation
import Testing

/// The embedding API stays small and documented: `scripts/public-api --check` compares the
/// top-level public declarations of the library targets with the list in
/// docs/architecture.md, and fails past the limit of 45.
@Suite struct PublicAPITests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theDocumentedPublicAPIIsTheCodesAndWithinItsLimit() throws {
        let process = Process()
        process.executableURL = Self.packageRoot.appendingPathComponent("scripts/public-api")
        process.arguments = ["--check"]
        let errors = Pipe(), output = Pipe()
        process.standardError = errors
        process.standardOutput = output
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let summary = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(message)")
        #expect(summary.contains("public API: "), "\(summary)")
    }
}
