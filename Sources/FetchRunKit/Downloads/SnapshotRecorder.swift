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

    /// Records the finished files of `entries`, one load and one write per source: a feed
    /// with a long back catalogue finishes hundreds of downloads a second, and each write
    /// reads and writes the source's whole snapshot.
    func record(_ entries: [DownloadEntry]) {
        var filesBySource: [String: [String: String]] = [:]
        for entry in entries {
            guard let file = entry.file else { continue }
            filesBySource[entry.source, default: [:]][entry.url] = file
        }
        guard !filesBySource.isEmpty else { return }
        var taken: [StateLock] = []
        defer { taken.forEach { $0.release() } }
        let needed = [(holder == .run, stateDirectory.lockPath), (holder == .watch, stateDirectory.watchLockPath)]
        for (held, path) in needed where !held {
            guard let lock = stateDirectory.tryLock(path) else {
                logger.debug("\(filesBySource.count) source(s) may be fetched now; their snapshots record \(entries.count) finished file(s) at their next fetch")
                return
            }
            taken.append(lock)
        }
        let store = stateDirectory.snapshots
        for (source, files) in filesBySource.sorted(by: { $0.key < $1.key }) {
            guard case .loaded(var snapshot) = store.load(source: source, moveCorruptAside: false) else { continue }
            let updated = snapshot.items.map { $0.withDownloadedFiles(files) }
            guard updated != snapshot.items else { continue }
            snapshot.items = updated
            do {
                try store.save(snapshot)
            } catch {
                logger.warning("\(error)")
            }
        }
    }
}
