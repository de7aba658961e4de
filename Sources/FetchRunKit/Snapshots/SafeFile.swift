import Foundation

/// Opens files that someone else may have planted in a folder fetchrun uses.
///
/// Reading never blocks on a FIFO or a device, never reads past a size cap and (unless asked
/// to) never follows a symbolic link. Opening for writing never follows a symbolic link and
/// refuses anything but a regular file with one name — a hard link planted to another file
/// would otherwise get that file written, or truncated, when fetchrun runs as root. Failures
/// say which of these it was, instead of a generic "cannot read".
package enum SafeFile {
    package struct ReadError: Error, Sendable, CustomStringConvertible {
        /// The system's error number; `nil` when the file is there but refused (not a
        /// regular file, too big, more than one name).
        package var code: Int32?
        package var description: String
    }

    /// Opens (and with `O_CREAT` in `flags`, creates) a file for writing, refusing symbolic
    /// links, hard links and anything that is not a regular file.
    /// - Returns: the descriptor, close-on-exec; the caller closes it.
    /// - Throws: ``ReadError`` saying what was found at `path`.
    static func openForWriting(_ path: String, flags: Int32, mode: mode_t = 0o644) throws(ReadError) -> Int32 {
        let descriptor = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode)
        guard descriptor >= 0 else {
            let code = errno
            throw ReadError(code: code, description: code == ELOOP ? "it is a symbolic link, which fetchrun does not follow" : String(cString: strerror(code)))
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            close(descriptor)
            throw ReadError(code: code, description: String(cString: strerror(code)))
        }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFREG, info.st_nlink <= 1 else {
            close(descriptor)
            throw ReadError(code: nil, description: kind == S_IFREG ? "it has \(info.st_nlink) names (a hard link), which fetchrun does not write through" : "it is \(describe(kind)), not a regular file")
        }
        // Back to blocking: the descriptor is a regular file's, and callers may flock it.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return descriptor
    }

    /// Whether anything is at `path`: one `stat`, cheap enough for the calling thread.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Removes temporary files a killed process left in `folder`: names that start with `.`,
    /// contain `.tmp-<pid>-` and whose process is gone. Files of live processes stay.
    /// ``StateDirectory/prepare()`` calls it, once per command.
    ///
    /// The folder is opened without following a link, and leftovers are removed relative to
    /// that descriptor: a folder swapped for a link after the caller checked it is not swept,
    /// so nothing is removed elsewhere. Names are read and passed back as bytes, so a leftover
    /// whose name is not UTF-8 is removed too, and no string is made for the other entries.
    /// - Returns: how many were removed.
    @discardableResult
    static func removeLeftoverTemporaries(in folder: String) -> Int {
        let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return 0 }
        // The stream owns the descriptor from here on: `closedir` closes it.
        guard let directory = fdopendir(descriptor) else {
            close(descriptor)
            return 0
        }
        defer { closedir(directory) }
        var removed = 0
        while let entry = readdir(directory) {
            let unlinked = withUnsafeBytes(of: &entry.pointee.d_name) { name -> Bool in
                guard name.first == UInt8(ascii: "."), let pid = leftoverOwner(named: name),
                      pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { return false }
                return unlinkat(descriptor, name.baseAddress!.assumingMemoryBound(to: CChar.self), 0) == 0
            }
            if unlinked { removed += 1 }
        }
        return removed
    }

    /// The process id in a temporary file's name (`.<name>.tmp-<pid>-<random>`, the first
    /// `.tmp-` in it), read from the name's bytes up to its terminating zero; `nil` for any
    /// other name, and for a number that is not a valid pid.
    static func leftoverOwner(named name: UnsafeRawBufferPointer) -> pid_t? {
        let length = name.firstIndex(of: 0) ?? name.count
        let marker = Array(".tmp-".utf8)
        var start = 0
        while start + marker.count <= length, !marker.indices.allSatisfy({ name[start + $0] == marker[$0] }) { start += 1 }
        guard start + marker.count <= length else { return nil }
        var pid: pid_t = 0
        var index = start + marker.count
        while index < length, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(name[index]) {
            // A name may carry any number of digits; more than a pid holds is no pid.
            let (shifted, overflowedShift) = pid.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAdd) = shifted.addingReportingOverflow(pid_t(name[index] - UInt8(ascii: "0")))
            guard !overflowedShift, !overflowedAdd else { return nil }
            pid = sum
            index += 1
        }
        return index > start + marker.count && pid > 0 ? pid : nil
    }

    /// The whole file at `path`.
    /// - Parameters:
    ///   - maxBytes: a larger file is refused.
    ///   - followSymlinks: `false` refuses a symbolic link (`O_NOFOLLOW`); files fetchrun
    ///     writes itself are never links, so one found there was planted.
    /// - Throws: ``ReadError`` saying what the path is, or what the system said.
    package static func read(_ path: String, maxBytes: Int, followSymlinks: Bool = false) throws(ReadError) -> Data {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followSymlinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else {
            let code = errno
            switch code {
            case ENOENT: throw ReadError(code: ENOENT, description: "no such file")
            case EACCES: throw ReadError(code: code, description: "this user may not read it (\(String(cString: strerror(code))))")
            case ELOOP: throw ReadError(code: code, description: followSymlinks ? "too many levels of symbolic links" : "it is a symbolic link, which fetchrun does not follow here")
            default: throw ReadError(code: code, description: String(cString: strerror(code)))
            }
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw ReadError(code: errno, description: String(cString: strerror(errno))) }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFREG else { throw ReadError(code: nil, description: "it is \(describe(kind)), not a regular file") }
        guard info.st_size <= maxBytes else {
            throw ReadError(code: nil, description: "it is \(ByteSizeText.format(Int64(info.st_size))), larger than the \(ByteSizeText.format(Int64(maxBytes))) this file may be")
        }
        var data = Data(count: Int(info.st_size))
        var filled = 0
        while filled < data.count {
            let count = data.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ReadError(code: errno, description: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            filled += count
        }
        // A file that shrank while read is read as it now is.
        if filled < data.count { data.removeSubrange(filled...) }
        return data
    }

    /// "a directory", "a FIFO", "a character device"… for messages.
    static func describe(_ kind: mode_t) -> String {
        switch kind {
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO (named pipe)"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        case S_IFLNK: return "a symbolic link"
        case S_IFREG: return "a regular file"
        default: return "not a regular file"
        }
    }
}
