import Foundation
import Testing
@testable import FetchRunKit

/// "New" for feeds longer than `keep`, items that come and go, bad ids and the upgrade.
@Suite struct SeenItemsTests {
    let day: TimeInterval = 86_400

    func items(_ range: Range<Int>) -> [Item] {
        range.reversed().map { item("i\($0)") }
    }

    @Test func aFeedLongerThanKeepThatGainsOneItemHasOneNew() {
        let first = SnapshotMerge(previous: [], seen: nil, fetched: items(0..<500), keep: 200, at: Date())
        #expect(first.items.count == 200)
        let second = SnapshotMerge(previous: first.items, seen: first.seen, fetched: items(0..<501), keep: 200, at: Date())
        #expect(second.newItems.map(\.id) == ["i500"])
        #expect(second.heldCount == 501)
    }

    @Test func reorderedItemsAndOnesBackWithinTheHorizonAreNotNew() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let first = SnapshotMerge(previous: [], seen: nil, fetched: items(0..<300), keep: 10, at: now)
        // i0–i99 drop out of the feed for 30 days, then come back, reordered.
        let gone = SnapshotMerge(previous: first.items, seen: first.seen, fetched: items(100..<300), keep: 10, at: now.addingTimeInterval(day))
        #expect(gone.newItems.isEmpty)
        let back = SnapshotMerge(previous: gone.items, seen: gone.seen, fetched: items(0..<300).shuffled(), keep: 10, at: now.addingTimeInterval(31 * day))
        #expect(back.newItems.isEmpty)
    }

    @Test func anItemGoneLongerThanTheHorizonIsForgotten() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let first = SnapshotMerge(previous: [], seen: nil, fetched: items(0..<20), keep: 5, at: now)
        let gone = SnapshotMerge(previous: first.items, seen: first.seen, fetched: items(10..<20), keep: 5, at: now)
        let later = now.addingTimeInterval(Double(SeenItems.horizonDays + 2) * day)
        // Another fetch past the horizon prunes what left the feed 92 days ago.
        let pruned = SnapshotMerge(previous: gone.items, seen: gone.seen, fetched: items(10..<20), keep: 5, at: later)
        let back = SnapshotMerge(previous: pruned.items, seen: pruned.seen, fetched: items(0..<20), keep: 5, at: later)
        #expect(back.newItems.map(\.id) == items(0..<10).map(\.id))
    }

    @Test func theEarlierIDsAreBoundedAndTheMostRecentlySeenKept() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var seen = SeenItems(identity: .guid, lastFetch: (0..<SeenItems.earlierLimit).map { "old\($0)" })
        seen = seen.recording(fetched: (0..<10).map { "mid\($0)" }, at: now)
        seen = seen.recording(fetched: ["last"], at: now.addingTimeInterval(day))
        #expect(seen.earlier.count == SeenItems.earlierLimit)
        #expect(seen.contains("mid3"))
        #expect(seen.contains("last"))
    }

    @Test func filteredItemsAreSeenToo() {
        let first = SnapshotMerge(previous: [], seen: nil, fetched: items(0..<5), keep: 2, at: Date())
        let second = SnapshotMerge(previous: first.items, seen: first.seen, fetched: items(0..<6), keep: 2, at: Date())
        #expect(second.newItems.map(\.id) == ["i5"])
    }

    @Test func theFirstFetchAfterTheUpgradeDoesNotFlood() {
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        func dated(_ n: Int) -> Item {
            var dated = item("d\(n)")
            dated.published = base.addingTimeInterval(Double(n) * 60)
            return dated
        }
        // A snapshot from before seen sets: it holds the newest 200 of a 500-item feed.
        let feed = (0..<500).reversed().map(dated)
        let upgraded = SnapshotMerge(previous: Array(feed.prefix(200)), seen: nil, fetched: [dated(500)] + feed, keep: 200, at: Date())
        #expect(upgraded.newItems.map(\.id) == ["d500"])
        // Undated: new only before the first item the snapshot knows.
        let undated = items(0..<500)
        let plain = SnapshotMerge(previous: Array(undated.prefix(200)), seen: nil, fetched: [item("fresh")] + undated, keep: 200, at: Date())
        #expect(plain.newItems.map(\.id) == ["fresh"])
        // From then on the set holds the whole feed.
        let next = SnapshotMerge(previous: plain.items, seen: plain.seen, fetched: [item("fresher"), item("fresh")] + undated, keep: 200, at: Date())
        #expect(next.newItems.map(\.id) == ["fresher"])
    }

    @Test func newNeverExceedsWhatTheSourceHolds() {
        let merge = SnapshotMerge(previous: items(0..<3), seen: seen(items(0..<3)), fetched: items(3..<10_003), keep: 200, at: Date())
        #expect(merge.newItems.count == 10_000)
        #expect(merge.heldCount == 10_003)
        #expect(merge.items.count == 200)
    }

    @Test func theStoredFormReadsBackAndHostileTextReadsAsNone() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let seen = SeenItems(identity: .link, lastFetch: ["a", "b"]).recording(fetched: ["c"], at: now)
        var snapshot = Snapshot(source: "s", type: "rss", updatedAt: now, items: [item("c")])
        snapshot.seen = seen
        let read = try Snapshot(json: snapshot.jsonData())
        #expect(read.seen == seen)
        #expect(read == snapshot)
        #expect(SeenItems(identity: "guid", lastFetch: "not base64!", earlier: "") == nil)
        #expect(SeenItems(identity: "guid", lastFetch: Data([1, 2, 3]).base64EncodedString(), earlier: "") == nil)
        #expect(SeenItems(identity: "nonsense", lastFetch: "", earlier: "") == nil)
        // A day far in the future or the past from a hostile file: no trap, pruned or kept.
        let records = Data((0..<8).map { _ in UInt8(0xAB) } + [0xFF, 0xFF, 0xFF, 0xFF]).base64EncodedString()
        let hostile = try #require(SeenItems(identity: "guid", lastFetch: "", earlier: records))
        _ = hostile.recording(fetched: ["x"], at: now)
        // A "seen" member of the wrong shape leaves the snapshot readable, without a set.
        let text = String(decoding: snapshot.jsonData(), as: UTF8.self).replacingOccurrences(of: "\"seen\":{", with: "\"seen\":12,\"was\":{")
        #expect(text.contains("\"seen\":12"))
        #expect(try Snapshot(json: Data(text.utf8)).seen == nil)
    }
}

@Suite struct ItemIdentityTests {
    @Test func theSameGuidOnEveryItemIsToldApartByLinkThenPosition() {
        let items = [
            Item(id: "same", title: "A", link: "https://example.test/a"),
            Item(id: "same", title: "B", link: "https://example.test/b"),
            Item(id: "same", title: "C", link: "https://example.test/b"),
            Item(id: "same #4", title: "D"),
            Item(id: "same", title: "E"),
        ]
        let ids = ItemIdentity.guid.identify(items).map(\.id)
        #expect(ids == ["same", "same https://example.test/b", "same #3", "same #4", "same #5"])
        #expect(Set(ids).count == ids.count)
        // A feed holding the id a position would take: still apart.
        let clash = ItemIdentity.guid.identify([item("x"), item("x #2"), item("x")]).map(\.id)
        #expect(Set(clash).count == 3)
    }

    @Test func eachIdentityKeysItsWay() {
        let one = Item(id: "guid-1", title: "Title", link: "https://example.test/1", summary: "text")
        #expect(ItemIdentity.guid.identify([one]).first?.id == "guid-1")
        #expect(ItemIdentity.link.identify([one]).first?.id == "https://example.test/1")
        #expect(ItemIdentity.title.identify([one]).first?.id == "Title")
        let content = ItemIdentity.content.identify([one]).first?.id
        var edited = one
        edited.summary = "other text"
        #expect(content?.hasPrefix("content:") == true)
        #expect(ItemIdentity.content.identify([edited]).first?.id != content)
        // A guid that changes with the title: by link it is one item.
        var retitled = one
        retitled.id = "guid-2"
        retitled.title = "New title"
        #expect(ItemIdentity.link.identify([retitled]).first?.id == ItemIdentity.link.identify([one]).first?.id)
    }

    @Test func aLongKeyIsCutAndHashedWithinTheIDLimit() {
        let long = Item(id: "x", title: String(repeating: "t", count: 900), link: "https://example.test/" + String(repeating: "l", count: 5_000))
        let ids = ItemIdentity.link.identify([long, long]).map(\.id)
        #expect(ids.allSatisfy { $0.utf8.count <= ItemLimits.standard.id })
        #expect(ids[0] != ids[1])
    }

    @Test func theConfigSaysWhatIdentifiesItemsAndARefusalSaysWhere() throws {
        let config = try ConfigLoader(environment: [:]).load(
            text: "defaults:\n  identity: link\nsources:\n  - { name: a, type: random-news }\n  - { name: b, type: random-news, identity: content }\n",
            file: "sources.yaml", directory: "/"
        )
        #expect(config.sources.map(\.settings.identity) == [.link, .content])
        #expect(throws: ConfigError.self) {
            try ConfigLoader(environment: [:]).load(text: "sources:\n  - { name: a, type: random-news, identity: uuid }\n", file: "sources.yaml", directory: "/")
        }
        do {
            _ = try ConfigLoader(environment: [:]).load(text: "sources:\n  - { name: a, type: random-news, identity: uuid }\n", file: "sources.yaml", directory: "/")
        } catch {
            #expect("\(error)".contains("sources.yaml:2:"))
            #expect("\(error)".contains("guid, link, title, content"))
        }
    }
}
