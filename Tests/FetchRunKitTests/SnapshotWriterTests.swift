import Foundation
import Testing
@testable import FetchRunKit

/// Snapshots written in batches: one flush for many files, each file still on its own.
@Suite struct SnapshotWriterTests {
    func snapshot(_ source: String) -> Snapshot {
        Snapshot(source: source, type: "scripted", updatedAt: Date(), items: [item("\(source)-1")], validators: nil, adapterState: nil)
    }

    @Test func aBatchWritesEveryFileAndOneFailureStaysItsOwn() throws {
        let store = try temporaryStateDirectory().snapshots
        // Something in the way of one file: a folder where its snapshot belongs.
        try FileManager.default.createDirectory(atPath: store.path(for: "blocked"), withIntermediateDirectories: true)
        let results = store.save([snapshot("a"), snapshot("blocked"), snapshot("b")])
        #expect(results[0] == nil && results[2] == nil)
        #expect(results[1]?.description.contains("blocked.json") == true)
        for name in ["a", "b"] {
            guard case .loaded(let loaded) = store.load(source: name) else { Issue.record("\(name) not written"); continue }
            #expect(loaded.items.map(\.id) == ["\(name)-1"])
        }
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).filter { $0.contains(".tmp-") }.isEmpty)
    }

    @Test func concurrentSavesAllLand() async throws {
        let store = try temporaryStateDirectory().snapshots
        let writer = SnapshotWriter(store: store)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask { try await writer.save(snapshot("s\(index)")) }
            }
            try await group.waitForAll()
        }
        #expect(store.sourceNames().count == 50)
    }
}
