import Logging

/// Writes a finished download's file into its source's snapshot, on the items whose
/// enclosure it is.
///
/// Snapshots belong to the process holding the state directory's lock. A process that holds
/// it (`run`, `watch`) records at once; a detached `fetchrun transfer` takes the lock for the
/// moment of the write when it is free, and otherwise leaves it: the next fetch of the source
/// records every finished file from the queue before it writes the snapshot.
package struct SnapshotRecorder: Sendable {
    package var stateDirectory: StateDirectory
    /// The caller holds the state lock already.
    package var holdsStateLock: Bool
    package var logger: Logger

    package init(stateDirectory: StateDirectory, holdsStateLock: Bool, logger: Logger = Logger(label: "fetchrun.downloads")) {
        self.stateDirectory = stateDirectory
        self.holdsStateLock = holdsStateLock
        self.logger = logger
    }

    func record(_ entry: DownloadEntry) {
        guard let file = entry.file else { return }
        var lock: StateLock?
        if !holdsStateLock {
            guard let taken = try? stateDirectory.lock() else {
                logger.debug("state directory busy; \(entry.source)'s snapshot records \(file) at its next fetch")
                return
            }
            lock = taken
        }
        defer { lock?.release() }
        let store = stateDirectory.snapshots
        guard case .loaded(var snapshot) = store.load(source: entry.source, moveCorruptAside: false) else { return }
        let files = [entry.url: file]
        let updated = snapshot.items.map { $0.withDownloadedFiles(files) }
        guard updated != snapshot.items else { return }
        snapshot.items = updated
        do {
            try store.save(snapshot)
        } catch {
            logger.warning("\(error)")
        }
    }
}
