import Foundation
import Synchronization

/// The state directory: its snapshots and the lock that keeps one fetchrun at a time in it.
package struct StateDirectory: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public var snapshots: SnapshotStore { SnapshotStore(stateDirectory: path) }

    /// The enclosure download queue, `<state_dir>/downloads/`.
    public var downloads: DownloadQueue { DownloadQueue(stateDirectory: path) }

    var lockPath: String { (path as NSString).appendingPathComponent("lock") }
    var watchLockPath: String { (path as NSString).appendingPathComponent("watch.lock") }

    /// Takes the watch lock (`flock` on `<state_dir>/watch.lock`): one `watch` per state
    /// directory. Runs, resets and transfers do not need it; they work beside a watch, which
    /// takes each source's lease in the state database before fetching it, as they do.
    /// - Throws: ``StateDirectoryError/locked(path:holder:)`` when another watch holds it.
    public func lockForWatch() throws(StateDirectoryError) -> StateLock {
        switch StateLock.acquire(watchLockPath) {
        case .success(let lock): return lock
        case .failure(.held(let holder)): throw .locked(path: watchLockPath, holder: holder)
        case .failure(.unusable(let reason)): throw .unusable(path: watchLockPath, reason: reason)
        }
    }

    /// Takes a lock only if no other process holds it, for a moment's work; `nil` when held.
    func tryLock(_ path: String) -> StateLock? {
        if case .success(let lock) = StateLock.acquire(path) { return lock }
        return nil
    }

    /// Creates the directory and its `snapshots/` folder if needed and checks they can be written.
    /// - Throws: ``StateDirectoryError/unusable(path:reason:)``.
    ///
    /// The state directory itself may be a symbolic link (the user's choice); the folders
    /// fetchrun makes inside it may not be: one planted there would send every write elsewhere.
    /// Temporary files that a killed process left behind in `snapshots/` and `downloads/` are
    /// removed.
    public func prepare() throws(StateDirectoryError) {
        for folder in [path, snapshots.directory] {
            if mkdir(folder, 0o755) != 0, errno != EEXIST {
                throw .unusable(path: folder, reason: "cannot create it: \(String(cString: strerror(errno)))")
            }
            var info = stat()
            let found = folder == path ? stat(folder, &info) : lstat(folder, &info)
            guard found == 0, info.st_mode & S_IFMT == S_IFDIR else {
                let kind = found == 0 ? SafeFile.describe(info.st_mode & S_IFMT) : "missing"
                throw .unusable(path: folder, reason: "it exists and is not a directory (it is \(kind)\(kind == "a symbolic link" ? "; fetchrun does not follow links inside the state directory" : ""))")
            }
            if access(folder, W_OK) != 0 {
                let cause = String(cString: strerror(errno))
                throw .unusable(path: folder, reason: errno == EACCES || errno == EROFS || errno == EPERM
                    ? "it is read-only (\(cause)): run and watch record every fetch there; status, show and outputs can still read it"
                    : "it cannot be written: \(cause)")
            }
        }
        SafeFile.removeLeftoverTemporaries(in: snapshots.directory)
        // Temporaries of the queue.json an earlier fetchrun wrote; a link in place of the
        // folder is refused where the folder is used.
        var info = stat()
        if lstat(downloads.directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            SafeFile.removeLeftoverTemporaries(in: downloads.directory)
        }
    }

    /// Takes the state directory's lock (`flock` on `<state_dir>/lock`), waiting at most
    /// `patience` for another holder to let go — enough to ride out a `fetchrun transfer`
    /// recording a finished file in a snapshot, not enough to queue behind a run.
    ///
    /// The lock is held until the returned ``StateLock`` is released or deinitialised — or
    /// the process ends, whatever way it ends, since the kernel drops `flock` locks then.
    /// - Throws: ``StateDirectoryError/locked(path:holder:)`` when another process still holds
    ///   it, ``StateDirectoryError/unusable(path:reason:)`` when the lock file cannot be opened.
    public func lock(patience: Duration = .zero) throws(StateDirectoryError) -> StateLock {
        let giveUp = ContinuousClock.now + patience
        while true {
            switch StateLock.acquire(lockPath) {
            case .success(let lock):
                return lock
            case .failure(.held(let holder)):
                guard ContinuousClock.now < giveUp else { throw .locked(path: path, holder: holder) }
                usleep(20_000)
            case .failure(.unusable(let reason)):
                throw .unusable(path: path, reason: reason)
            }
        }
    }
}

/// A held state-directory lock. Keep it alive for as long as the directory is in use:
/// its deinit closes the descriptor, which drops the `flock`.
package final class StateLock: Sendable {
    private let descriptor: Int32
    private let released = Atomic(false)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Drops the lock now rather than at deinit; later calls do nothing.
    public func release() {
        if !released.exchange(true, ordering: .acquiringAndReleasing) { close(descriptor) }
    }

    enum Failure: Error {
        /// Another process holds it; its pid when it wrote one.
        case held(holder: Int32?)
        case unusable(reason: String)
    }

    /// Takes an exclusive `flock` on `path` without waiting, and writes our pid into the file
    /// for the message another process prints.
    ///
    /// The lock file is never opened through a symbolic or hard link and never truncated: the
    /// pid is written over the start of the file, padded to a fixed width.
    static func acquire(_ path: String) -> Result<StateLock, Failure> {
        let descriptor: Int32
        do {
            descriptor = try SafeFile.openForWriting(path, flags: O_RDWR | O_CREAT)
        } catch {
            return .failure(.unusable(reason: "cannot open its lock file \(path): \(error.description)"))
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = readHolder(descriptor)
            close(descriptor)
            if code == EWOULDBLOCK { return .failure(.held(holder: holder)) }
            return .failure(.unusable(reason: "cannot lock it: \(String(cString: strerror(code)))"))
        }
        let digits = String(getpid())
        let pid = digits + String(repeating: " ", count: max(0, 11 - digits.count)) + "\n"
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        return .success(StateLock(descriptor: descriptor))
    }

    /// The pid written into a lock file, if a process holds it; `nil` when it is free.
    static func holder(of path: String) -> Int32? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        // A shared lock we can take means no one holds the exclusive one.
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 { return nil }
        return readHolder(descriptor) ?? 0
    }

    private static func readHolder(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 12)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    deinit {
        release()
    }
}

/// Why the state directory cannot be used.
package enum StateDirectoryError: Error, Sendable, CustomStringConvertible {
    case unusable(path: String, reason: String)
    case locked(path: String, holder: Int32?)

    public var description: String {
        switch self {
        case .unusable(let path, let reason):
            return "state directory \(path): \(reason)"
        case .locked(let path, let holder):
            let who = holder.map { "process \($0)" } ?? "another fetchrun"
            if (path as NSString).lastPathComponent == "watch.lock" {
                return "a watch is already running on \((path as NSString).deletingLastPathComponent) (\(who)); one watch per state directory (run, status and show work beside it)"
            }
            return "state directory \(path) is in use by \(who); one run at a time per state directory"
        }
    }
}
