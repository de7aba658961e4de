import Logging

/// Writes a finished download's file into its source's snapshot, on the items whose
/// enclosure it is.
///
/// Snapshots are written by whoever fetches their source: a `run` (holding the state
/// directory's lock) or a `watch` (holding the watch lock), which may work side by side. A
/// file is recorded only while no one else can be fetching: the recorder holds — or takes
/// for the moment of the write — both locks. Otherwise it leaves it: the next fetch of the
/// source records every finished file from the queue before it writes the snapshot.
package struct SnapshotRecorder: Sendable {
    /// Which of the two locks the process using it holds already.
    package enum Holder: Sendable {
        /// A `run`: the state directory's lock.
        case run
        /// A `watch`: the watch lock.
        case watch
        /// Neither: a detached `fetchrun transfer`.
        case neither
    }

    package var stateDirectory: StateDirectory
    package var holder: Holder
    package var logger: Logger

    package init(stateDirectory: StateDirectory, holder: Holder, logger: Logger = Logger(label: "fetchrun.downloads")) {
        self.stateDirectory = stateDirectory
        self.holder = holder
        self.logger = logger
    }

    func record(_ entry: DownloadEntry) {
        guard let file = entry.file else { return }
        var taken: [StateLock] = []
        defer { taken.forEach { $0.release() } }
        let needed = [(holder == .run, stateDirectory.lockPath), (holder == .watch, stateDirectory.watchLockPath)]
        for (held, path) in needed where !held {
            guard let lock = stateDirectory.tryLock(path) else {
                logger.debug("\(entry.source) may be fetched now; its snapshot records \(file) at its next fetch")
                return
            }
            taken.append(lock)
        }
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
