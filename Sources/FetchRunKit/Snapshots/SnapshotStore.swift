import Foundation

/// The snapshot files of a state directory: `<state_dir>/snapshots/<name>.json`.
///
/// Writes are atomic (a temporary file in the same folder, fsync, rename, fsync of the folder),
/// so a crash leaves either the old snapshot or the new one, never half of one. Each source
/// has its own file, so fetches of different sources never contend.
package struct SnapshotStore: Sendable {
    /// What reading a source's snapshot found.
    public enum LoadResult: Sendable {
        case missing
        case loaded(Snapshot)
        /// The file could not be read as a snapshot. It was moved to `movedTo` (`nil` when
        /// moving was not allowed, as in a dry run); the source starts from an empty baseline.
        case corrupt(reason: String, movedTo: String?)
    }

    public let directory: String
    /// The time a file moved aside is stamped with.
    package var clock: any FetchClock

    public init(stateDirectory: String) {
        self.init(stateDirectory: stateDirectory, clock: SystemClock())
    }

    package init(stateDirectory: String, clock: any FetchClock) {
        directory = (stateDirectory as NSString).appendingPathComponent("snapshots")
        self.clock = clock
    }

    public func path(for source: String) -> String {
        (directory as NSString).appendingPathComponent(source + ".json")
    }

    /// Reads a source's snapshot. A file that is not a valid snapshot is moved aside to
    /// `<name>.json.corrupt-<time>` when `moveCorruptAside` is set, and reported.
    public func load(source: String, moveCorruptAside: Bool = true) -> LoadResult {
        let path = path(for: source)
        let data: Data
        do {
            data = try SafeFile.read(path, maxBytes: Self.maximumFileBytes)
        } catch {
            if error.code == ENOENT { return .missing }
            // A link, a FIFO, a device or a monster planted in the state folder is moved aside
            // like any other unreadable snapshot; a permission problem is left where it is.
            var info = stat()
            let isDirectory = lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
            guard error.code == nil || error.code == ELOOP, !isDirectory else { return .corrupt(reason: "cannot read \(path): \(error)", movedTo: nil) }
            return moveAside(path, reason: error.description, allowed: moveCorruptAside)
        }
        let reason: String
        do {
            let snapshot = try Snapshot(json: data)
            if snapshot.version > Snapshot.currentVersion {
                reason = "snapshot version \(snapshot.version) is newer than this fetchrun understands (\(Snapshot.currentVersion))"
            } else if snapshot.source != source {
                reason = "it belongs to source '\(snapshot.source)'"
            } else {
                return .loaded(snapshot)
            }
        } catch {
            reason = error.description
        }
        return moveAside(path, reason: reason, allowed: moveCorruptAside)
    }

    /// Snapshots are written by fetchrun and hold at most `keep` capped items: 256 MiB is far
    /// past any real one.
    static let maximumFileBytes = 256 << 20

    private func moveAside(_ path: String, reason: String, allowed: Bool) -> LoadResult {
        guard allowed else { return .corrupt(reason: reason, movedTo: nil) }
        let stamp = ISO8601DateFormatter.string(from: clock.date, timeZone: .gmt, formatOptions: [.withYear, .withMonth, .withDay, .withTime, .withTimeZone])
        let aside = path + ".corrupt-" + stamp
        return rename(path, aside) == 0
            ? .corrupt(reason: reason, movedTo: aside)
            : .corrupt(reason: reason + "; moving it aside failed: \(String(cString: strerror(errno)))", movedTo: nil)
    }

    /// Writes a snapshot atomically, replacing the previous one.
    /// - Throws: ``SnapshotStoreError`` naming the file and the system's reason.
    public func save(_ snapshot: Snapshot) throws {
        try AtomicFile.write(snapshot.jsonData(), to: path(for: snapshot.source))
    }

    /// Writes snapshots atomically, one flush for all of them when there are several
    /// (``AtomicFile``); each file is written or not on its own.
    /// - Returns: per snapshot, in order, `nil` or why it was not written.
    func save(_ snapshots: [Snapshot]) -> [SnapshotStoreError?] {
        if snapshots.count == 1 {
            do {
                try save(snapshots[0])
                return [nil]
            } catch {
                return [error as? SnapshotStoreError ?? SnapshotStoreError(path: path(for: snapshots[0].source), operation: "write", code: EIO)]
            }
        }
        return AtomicFile.write(snapshots.map { (data: $0.jsonData(), path: path(for: $0.source)) })
    }

    /// Deletes a source's snapshot; `false` when there was none.
    public func remove(source: String) throws -> Bool {
        let path = path(for: source)
        guard unlink(path) == 0 else {
            if errno == ENOENT { return false }
            throw SnapshotStoreError(path: path, operation: "delete", code: errno)
        }
        return true
    }

    /// Names of the sources that have a snapshot, sorted.
    public func sourceNames() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.map { String($0.dropLast(5)) }.sorted()
    }
}

/// A file operation on the state directory that failed.
package struct SnapshotStoreError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var code: Int32

    public var description: String {
        "cannot \(operation) \(path): \(String(cString: strerror(code)))"
    }
}
