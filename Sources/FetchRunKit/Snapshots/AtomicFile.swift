import CLinux
import Foundation

/// Writes files so that readers see the old content or the new, never a mix: the new content
/// goes to a temporary file in the same folder, is made durable, and is renamed over the old.
package enum AtomicFile {
    /// One file: temporary file, fsync, rename, fsync of the folder.
    /// - Parameter mode: the new file's permissions, set before it takes the old one's place
    ///   (a config holding secrets never shows them with wider permissions, even briefly).
    package static func write(_ data: Data, to path: String, mode: mode_t? = nil) throws(SnapshotStoreError) {
        let temporary = try writeTemporary(data, for: path, sync: true, mode: mode)
        try replace(path, with: temporary)
        syncFolder(of: path)
    }

    /// Many files in one folder at the price of one flush: every temporary file is written,
    /// one `syncfs` makes them all durable, then each is renamed into place and the folder is
    /// synced once. Each file is still atomic — a reader or a crash sees its old content or
    /// its new — but a batch of a thousand costs one flush instead of a thousand.
    /// - Returns: per file, in order, `nil` or why it was not written (the others are).
    static func write(_ files: [(data: Data, path: String)]) -> [SnapshotStoreError?] {
        guard let folder = files.first.map({ ($0.path as NSString).deletingLastPathComponent }) else { return [] }
        var results = [SnapshotStoreError?](repeating: nil, count: files.count)
        var temporaries = [String?](repeating: nil, count: files.count)
        for (index, file) in files.enumerated() {
            do {
                temporaries[index] = try writeTemporary(file.data, for: file.path, sync: false)
            } catch {
                results[index] = error
            }
        }
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let flushed = folderDescriptor >= 0 && fetchrun_syncfs(folderDescriptor) == 0
        let flushFailure = flushed ? nil : errno
        for (index, temporary) in temporaries.enumerated() {
            guard let temporary else { continue }
            if let flushFailure {
                unlink(temporary)
                results[index] = SnapshotStoreError(path: files[index].path, operation: "write", code: flushFailure)
                continue
            }
            do {
                try replace(files[index].path, with: temporary)
            } catch {
                results[index] = error
            }
        }
        if folderDescriptor >= 0 {
            // The renames are durable only once the folder's entries are on disk too.
            fsync(folderDescriptor)
            close(folderDescriptor)
        }
        return results
    }

    /// Writes `data` to a new temporary file beside `path`, named so that a killed process's
    /// leftovers are recognised (``SafeFile/removeLeftoverTemporaries(in:)``); with `sync`,
    /// fsyncs it.
    private static func writeTemporary(_ data: Data, for path: String, sync: Bool, mode: mode_t? = nil) throws(SnapshotStoreError) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = (folder as NSString).appendingPathComponent(".\((path as NSString).lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode.map { $0 & 0o600 } ?? 0o644)
        guard descriptor >= 0 else { throw SnapshotStoreError(path: path, operation: "write", code: errno) }
        var failure: Int32?
        if let mode, fchmod(descriptor, mode & 0o7777) != 0 { failure = errno }
        if failure == nil { data.withUnsafeBytes { buffer in
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
        } }
        if failure == nil, sync, fsync(descriptor) != 0 { failure = errno }
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw SnapshotStoreError(path: path, operation: "write", code: failure)
        }
        return temporary
    }

    private static func replace(_ path: String, with temporary: String) throws(SnapshotStoreError) {
        guard rename(temporary, path) == 0 else {
            let failure = errno
            unlink(temporary)
            throw SnapshotStoreError(path: path, operation: "write", code: failure)
        }
    }

    private static func syncFolder(of path: String) {
        let folderDescriptor = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }
}
