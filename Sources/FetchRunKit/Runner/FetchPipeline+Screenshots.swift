import Foundation

extension FetchPipeline {
    /// `commit` with `png` — a rendered page's screenshot (`screenshot: true`) — kept with the
    /// change it records: the PNG in ``screenshots``, its name in the change's history record.
    /// A fetch that records no change keeps none. A PNG that cannot be written is logged and
    /// left out; the change is recorded all the same.
    func keeping(_ png: Data, in commit: FetchCommit, of source: SourceConfig) async -> FetchCommit {
        guard let screenshots, let index = commit.history.records.firstIndex(where: { $0.kind == .change || $0.kind == .item }) else { return commit }
        var history = commit.history
        let name = ScreenshotFolder.name(source: source.name, record: history.records[index])
        do {
            try await BlockingWork.run { try screenshots.save(png, as: name) }
        } catch {
            logger.warning("screenshot not kept: \(error)", metadata: ["source": "\(source.name)"])
            return commit
        }
        history.records[index].screenshot = name
        return FetchCommit(lease: commit.lease, state: commit.state, snapshot: commit.snapshot, deliveries: commit.deliveries, history: history)
    }
}
