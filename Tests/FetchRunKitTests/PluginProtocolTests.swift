import Foundation
import Testing
@testable import FetchRunKit

@Suite struct PluginProtocolTests {
    /// stdout past the limit is never kept: a plugin that is stopped for it, or a command
    /// output that runs on, costs `outputLimit` bytes of memory however much it writes.
    @Test(arguments: [PluginProcess.OutputOverflow.stop, .discard])
    func aFloodOfStdoutKeepsAtMostTheLimit(_ overflow: PluginProcess.OutputOverflow) async throws {
        let process = PluginProcess(executable: "/bin/sh", arguments: ["-c", "head -c 33554432 /dev/zero; exit 3"], input: Data(), outputLimit: 65_536, outputOverflow: overflow)
        let result = try await process.run()
        #expect(result.outputExceeded)
        #expect(result.stdout.count == 65_536)
        switch overflow {
        case .stop:
            #expect(result.exitStatus != 3)
        case .discard:
            // It ran to its end: its exit status is its answer.
            #expect(result.exitStatus == 3 && result.stdoutBytes == 33_554_432)
        }
    }

    @Test func itemsAndStateFromLines() throws {
        let output = Data("""
            {"id":"a","title":"A","published":"2026-11-22T06:00:00Z","extra":{"n":3,"big":1e30,"ok":true,"half":0.5,"list":[1]}}

            {"state":{"cursor":"c1"}}
            """.utf8)
        let (items, state) = try PluginProtocol.parse(output)
        #expect(items.map(\.id) == ["a"])
        // Numbers past Int64's range print as Double does instead of trapping.
        #expect(items[0].extra == ["n": "3", "big": "1e+30", "ok": "true", "half": "0.5"])
        #expect(state == .object(["cursor": .string("c1")]))
    }

    @Test func badLinesNameTheirNumber() {
        #expect {
            _ = try PluginProtocol.parse(Data("{\"id\":\"a\",\"title\":\"A\"}\n[1]\n".utf8))
        } throws: { error in
            (error as? FetchFailure)?.message.hasPrefix("plugin output line 2 is not a JSON object") == true
        }
        #expect(throws: FetchFailure.self) { try PluginProtocol.parse(Data("{\"state\":1}\n{\"state\":2}\n".utf8)) }
    }

    /// Nesting is read by fetchrun's JSON reader, to its depth limit: a line nested past it is
    /// refused by number, and one within it is read (JSONDecoder took 0.7 s for 400 levels).
    @Test func deeplyNestedLinesAreReadToTheLimitAndRefusedPastIt() throws {
        func line(depth: Int) -> String {
            #"{"id":"deep","title":"t","extra":{"n":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}}"
        }
        let within = try PluginProtocol.parse(Data((line(depth: JSONReader.maximumDepth - 3) + "\n").utf8))
        #expect(within.items.map(\.id) == ["deep"])
        #expect {
            _ = try PluginProtocol.parse(Data(("{\"id\":\"a\",\"title\":\"A\"}\n" + line(depth: JSONReader.maximumDepth + 1)).utf8))
        } throws: { error in
            (error as? FetchFailure)?.message.hasPrefix("plugin output line 2 is not a JSON object") == true
        }
    }
}
