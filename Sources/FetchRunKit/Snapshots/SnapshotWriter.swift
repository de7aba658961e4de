import Foundation

/// Saves the snapshots of many concurrent fetches a batch at a time: while one batch is being
/// written, the saves that arrive wait for the next, and each batch of more than one costs a
/// single flush of the file system (``AtomicFile``'s batch write) instead of an
/// fsync per file. Every file stays atomic. A lone save is written as before, with its own
/// fsync: a flush of the whole file system would also wait for unrelated writes (a download).
actor SnapshotWriter {
    private let store: SnapshotStore
    private var pending: [(snapshot: Snapshot, done: CheckedContinuation<Void, any Error>)] = []
    private var writing = false

    init(store: SnapshotStore) {
        self.store = store
    }

    /// Writes `snapshot` atomically and durably, possibly with others.
    /// - Throws: ``SnapshotStoreError`` naming the file and the system's reason.
    /// - Cancellation: the write goes ahead; a half-done write is worse than a late one.
    func save(_ snapshot: Snapshot) async throws {
        try await withCheckedThrowingContinuation { continuation in
            pending.append((snapshot, continuation))
            if !writing {
                writing = true
                Task { await writeWhilePending() }
            }
        }
    }

    private func writeWhilePending() async {
        while !pending.isEmpty {
            let batch = pending
            pending = []
            let store = self.store
            let snapshots = batch.map(\.snapshot)
            let results = await BlockingWork.run { store.save(snapshots) }
            for (entry, failure) in zip(batch, results) {
                if let failure { entry.done.resume(throwing: failure) } else { entry.done.resume() }
            }
        }
        writing = false
    }
}
