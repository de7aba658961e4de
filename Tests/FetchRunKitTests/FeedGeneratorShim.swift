import FixtureServer

/// The fixture server's generated feeds, as text, for parser tests.
enum FeedGeneratorShim {
    static func feed(_ number: Int) -> (rss: String, atom: String, count: Int) {
        let feed = FeedGenerator.feed(number: number)
        return (FeedGenerator.rss(feed), FeedGenerator.atom(feed), feed.items.count)
    }
}
