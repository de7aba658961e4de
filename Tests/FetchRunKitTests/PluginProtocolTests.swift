import Foundation
import Testing
@testable import FetchRunKit

@Suite struct PluginProtocolTests {
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
}
