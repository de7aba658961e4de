import Foundation

/// The item ids a source has seen, beyond the items its snapshot keeps: what makes "new" exact
/// for a feed longer than `keep`.
///
/// It always holds every id of the source's last fetch (up to the item cap, 10,000), so an item
/// that moves down a long feed is never new again; and the ids of earlier fetches that dropped
/// out of the feed since, each with the day it was last seen, for ``horizonDays`` and at most
/// ``earlierLimit`` of them (the most recently seen win) — so an item that drops out and comes
/// back within the horizon is not new either.
///
/// Ids are kept as 64-bit FNV-1a hashes (``Item/fnv1a(_:)``): a 10,000-item feed costs 80 KB, not
/// its ids' megabytes. It travels inside the snapshot, so both stores write it atomically with
/// the items, and a `reset` clears it with them. A snapshot written before fetchrun kept one
/// has none: see ``SnapshotMerge`` for how the first fetch after the upgrade decides.
package struct SeenItems: Sendable, Hashable {
    /// How long an id that left the feed is remembered.
    package static let horizonDays = 90
    /// How many ids that left the feed are remembered at most.
    package static let earlierLimit = 10_000

    /// What identified the items when the set was made (``ItemIdentity``): under another
    /// identity the same items have other ids.
    package var identity: ItemIdentity
    /// The hashes of every id of the last fetch.
    package private(set) var lastFetch: Set<UInt64>
    /// Hashes of ids that left the feed, with the day (since 1970) each was last seen.
    package private(set) var earlier: [UInt64: UInt32]

    package init(identity: ItemIdentity, lastFetch ids: some Sequence<String> = [String](), earlier: [UInt64: UInt32] = [:]) {
        self.identity = identity
        self.lastFetch = Set(ids.map(Item.fnv1a))
        self.earlier = earlier
    }

    package func contains(_ id: String) -> Bool {
        contains(hash: Item.fnv1a(id))
    }

    /// Whether the set holds the id whose ``Item/fnv1a(_:)`` is `hash`.
    package func contains(hash: UInt64) -> Bool {
        lastFetch.contains(hash) || earlier[hash] != nil
    }

    /// The set after a fetch that returned `ids` at `now`: those become the last fetch; the
    /// previous fetch's that are gone are stamped with today and kept with the earlier ones,
    /// within the horizon and the limit.
    package func recording(fetched ids: [String], at now: Date) -> SeenItems {
        recording(fetchedHashes: Set(ids.map(Item.fnv1a)), at: now)
    }

    /// ``recording(fetched:at:)`` for ids already hashed.
    package func recording(fetchedHashes fetched: Set<UInt64>, at now: Date) -> SeenItems {
        let today = Self.day(of: now)
        var earlier = self.earlier
        for hash in lastFetch where !fetched.contains(hash) { earlier[hash] = today }
        for hash in fetched { earlier[hash] = nil }
        // Days are compared in Int: a hostile stored day may be anything a UInt32 holds.
        let oldest = Int(today) - Self.horizonDays
        earlier = earlier.filter { Int($0.value) >= oldest }
        if earlier.count > Self.earlierLimit {
            let kept = earlier.sorted { ($0.value, $0.key) > ($1.value, $1.key) }.prefix(Self.earlierLimit)
            earlier = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
        }
        var next = self
        next.lastFetch = fetched
        next.earlier = earlier
        return next
    }

    static func day(of date: Date) -> UInt32 {
        UInt32(clamping: Int(max(0, min(date.timeIntervalSince1970, 4e9)) / 86_400))
    }

    // MARK: Stored form

    /// The last fetch's hashes as base64 of 8-byte big-endian values, sorted (the same set is
    /// the same text, so an unchanged set leaves the snapshot unchanged).
    var lastFetchText: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(lastFetch.count * 8)
        for hash in lastFetch.sorted() { Self.append(hash, to: &bytes) }
        return Data(bytes).base64EncodedString()
    }

    /// The earlier ids as base64 of 12-byte records: the hash, then the day (big-endian).
    package var earlierText: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(earlier.count * 12)
        for (hash, day) in earlier.sorted(by: { $0.key < $1.key }) {
            Self.append(hash, to: &bytes)
            for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: day >> UInt32(shift))) }
        }
        return Data(bytes).base64EncodedString()
    }

    /// Reads the stored form. Anyone who can write the state can write it: text that is not
    /// base64 of whole records reads as `nil` (the set is rebuilt as after an upgrade), and
    /// more hashes than the limits allow are cut to them.
    package init?(identity: String, lastFetch: String, earlier: String) {
        guard let identity = ItemIdentity(rawValue: identity),
              let last = Data(base64Encoded: lastFetch), last.count % 8 == 0,
              let earlierBytes = Data(base64Encoded: earlier), earlierBytes.count % 12 == 0
        else { return nil }
        self.identity = identity
        let lastBytes = [UInt8](last.prefix(ItemLimits.standard.itemsPerFetch * 8))
        self.lastFetch = Set(stride(from: 0, to: lastBytes.count, by: 8).map { Self.read(lastBytes, at: $0) })
        let records = [UInt8](earlierBytes.prefix(Self.earlierLimit * 12))
        var stamped: [UInt64: UInt32] = [:]
        for offset in stride(from: 0, to: records.count, by: 12) {
            let day = records[(offset + 8)..<(offset + 12)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            stamped[Self.read(records, at: offset)] = day
        }
        self.earlier = stamped
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    private static func read(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        bytes[offset..<(offset + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
