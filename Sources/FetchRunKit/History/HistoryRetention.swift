/// `history:` of a source or of `defaults:`: how much of the source's history is kept.
///
/// `history: { keep: 1000, max_age: 90d }` (the default) keeps a source's newest 1,000 changes
/// and none older than 90 days; `history: off` records nothing for it. Both bounds hold per
/// source, so a store's history is at most `keep` records per source.
package struct HistoryRetention: Sendable, Hashable {
    /// Whether anything is recorded.
    package var isEnabled: Bool
    /// The newest records kept per source; older ones are pruned as new ones are written.
    package var keep: Int
    /// How long a record is kept; pruned at the next commit an hour or more after it expired.
    package var maxAge: Duration

    package static let standard = HistoryRetention(isEnabled: true, keep: 1_000, maxAge: .seconds(90 * 86_400))
    package static let off = HistoryRetention(isEnabled: false, keep: standard.keep, maxAge: standard.maxAge)
    /// The most records per source `keep` may ask for.
    package static let maximumKeep = 100_000

    package init(isEnabled: Bool, keep: Int, maxAge: Duration) {
        self.isEnabled = isEnabled
        self.keep = keep
        self.maxAge = maxAge
    }
}
