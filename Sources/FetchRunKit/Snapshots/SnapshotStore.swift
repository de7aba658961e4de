import Foundation

/// The snapshot files of a state directory: `<state_dir>/snapshots/<name>.json`.
///
/// Writes are atomic (a temporary file in the same folder, fsync, rename, fsync of the folder),
/// so a crash leaves either the old snapshot or the new one, never half of one. Each source
/// has its own file, so fetches of different sources never contend.
public struct SnapshotStore: Sendable {
    /// What reading a source's snapshot found.
    public enum LoadResult: Sendable {
        case missing
        case loaded(Snapshot)
        /// The file could not be read as a snapshot. It was moved to `movedTo` (`nil` when
        /// moving was not allowed, as in a dry run); the source starts from an empty baseline.
        case corrupt(reason: String, movedTo: String?)
    }

    public let directory: String

    public init(stateDirectory: String) {
        directory = (stateDirectory as NSString).appendingPathComponent("snapshots")
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
            let snapshot = try Self.decoder.decode(Snapshot.self, from: data)
            if snapshot.version > Snapshot.currentVersion {
                reason = "snapshot version \(snapshot.version) is newer than this fetchrun understands (\(Snapshot.currentVersion))"
            } else if snapshot.source != source {
                reason = "it belongs to source '\(snapshot.source)'"
            } else {
                return .loaded(snapshot)
            }
        } catch {
            reason = Self.describe(error)
        }
        return moveAside(path, reason: reason, allowed: moveCorruptAside)
    }

    /// Snapshots are written by fetchrun and hold at most `keep` capped items: 256 MiB is far
    /// past any real one.
    static let maximumFileBytes = 256 << 20

    private func moveAside(_ path: String, reason: String, allowed: Bool) -> LoadResult {
        guard allowed else { return .corrupt(reason: reason, movedTo: nil) }
        let stamp = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withYear, .withMonth, .withDay, .withTime, .withTimeZone])
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

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        // Our own RFC 3339 reader: Foundation's `.iso8601` goes through ICU and was most of
        // the cost of reading a thousand snapshots.
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = DateParser.rfc3339(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 date: \(text)")
            }
            return date
        }
        return decoder
    }()

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context):
            return "not valid JSON" + (context.codingPath.isEmpty ? "" : " at \(context.codingPath.map(\.stringValue).joined(separator: "."))")
        case DecodingError.keyNotFound(let key, _):
            return "missing field '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "wrong type at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        default:
            return "\(error)"
        }
    }
}

/// A file operation on the state directory that failed.
public struct SnapshotStoreError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var code: Int32

    public var description: String {
        "cannot \(operation) \(path): \(String(cString: strerror(code)))"
    }
}

/// Writes files so that readers see the old content or the new, never a mix.
enum AtomicFile {
    static func write(_ data: Data, to path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = (folder as NSString).appendingPathComponent(".\((path as NSString).lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SnapshotStoreError(path: path, operation: "write", code: errno) }
        var failure: Int32?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(descriptor) != 0 { failure = errno }
        close(descriptor)
        if failure == nil, rename(temporary, path) != 0 { failure = errno }
        if let failure {
            unlink(temporary)
            throw SnapshotStoreError(path: path, operation: "write", code: failure)
        }
        // The rename is durable only once the folder's entry is on disk too.
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }
}
