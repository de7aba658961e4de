import FetchRunCore
import CLinux
import Foundation
import Synchronization

/// The open file a download writes into, usually `<name>.part`.
///
/// The curl thread writes; any thread may read ``bytesInFile`` for progress. The file is only
/// touched once the response's status is known: a 206 whose range starts at the resume offset
/// is appended, a 200 rewrites the file from its first byte, anything else leaves it alone.
package final class DownloadFile: @unchecked Sendable {
    package let descriptor: Int32
    private let size: Atomic<Int64>
    private let head = Locked<ResponseHead?>(nil)

    /// The status and headers of the response the body came from.
    package struct ResponseHead: Sendable {
        package var status: Int
        /// Names lower-cased.
        package var headers: [String: String]

        /// The whole file's size as announced: `Content-Range`'s total for a 206, else
        /// `Content-Length`.
        package var announcedSize: Int64? {
            status == 206
                ? headers["content-range"].flatMap(ContentRange.init)?.total
                : headers["content-length"].flatMap { Int64($0) }
        }
    }

    // Written on the curl thread only, read after the transfer completed.
    var decision: Decision?
    var writeFailure: String?
    /// Set when a partial response belongs to another version of the file; nothing was written.
    package var validatorMismatch: String?
    var overLimit = false
    /// Where the last writeback started; see ``writebackChunk``.
    private var writebackFrom: Int64 = 0

    /// Every this many bytes, the kernel is asked to start writing them to disk. Without it a
    /// fast download leaves the whole file dirty in memory and its final fsync waits for all of
    /// it; with it, disk writes overlap the transfer and the fsync finds little left to do.
    static let writebackChunk: Int64 = 2 << 20

    enum Decision {
        case append
        case rewrite
        /// Not a body for the file (an error page); it is read and dropped.
        case discard
    }

    /// Called on the curl thread once ``responseHead`` is set; it must return at once.
    private let onResponseHead: @Sendable () -> Void

    /// The size of a finished file already in place that this download may be (see
    /// ``DownloadEntry/adoptsExisting``): a whole-file answer announcing exactly this size
    /// stops the transfer and sets ``matchesExistingFile``.
    package var existingFileSize: Int64?
    /// The server announced the existing file's size: nothing needs downloading.
    package private(set) var matchesExistingFile = false

    /// - Parameters:
    ///   - descriptor: open for writing; the caller keeps ownership and closes it.
    ///   - onResponseHead: told (on curl's thread; it must not block) when the response's
    ///     head is known, so the caller can save its validators before more bytes arrive.
    package init(descriptor: Int32, currentSize: Int64, onResponseHead: @escaping @Sendable () -> Void = {}) {
        self.descriptor = descriptor
        size = Atomic(currentSize)
        self.onResponseHead = onResponseHead
    }

    /// Bytes in the file so far; safe from any thread.
    package var bytesInFile: Int64 { size.load(ordering: .relaxed) }

    /// The response whose body is being written, once its first bytes arrived; safe from any
    /// thread. A downloader saves its validators early from it, so that a process killed
    /// mid-transfer leaves enough behind to resume.
    package var responseHead: ResponseHead? { head.withLock { $0 } }

    /// Called by the write callback; `false` stops the transfer.
    func write(_ bytes: UnsafeRawBufferPointer, maxBytes: Int64) -> Bool {
        guard decision != .discard else { return true }
        let current = size.load(ordering: .relaxed)
        guard current + Int64(bytes.count) <= maxBytes else {
            overLimit = true
            return false
        }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                writeFailure = String(cString: strerror(errno))
                return false
            }
            offset += written
        }
        let end = current + Int64(bytes.count)
        size.store(end, ordering: .relaxed)
        if end - writebackFrom >= Self.writebackChunk {
            // Only a hint: a failure here changes nothing the final fsync would not catch.
            _ = fetchrun_start_writeback(descriptor, writebackFrom, end - writebackFrom)
            writebackFrom = end
        }
        return true
    }

    /// Decides, at the first body bytes, what the response does to the file.
    ///
    /// A 206 is appended only when it continues the same file: its range starts at the resume
    /// offset and its validator (the ETag, or Last-Modified when that is what was sent in
    /// `If-Range`) is the one the part's bytes came with. A server that ignores `If-Range` and
    /// sends a range of a changed file would otherwise leave a file of two versions.
    func decide(status: Int, headers: [String: String], resumeOffset: Int64?, resumeValidator: String? = nil) -> Bool {
        head.withLock { $0 = ResponseHead(status: status, headers: headers) }
        defer { onResponseHead() }
        let contentRangeStart = headers["content-range"].flatMap(ContentRange.init)?.start
        switch status {
        case 206 where resumeOffset != nil && contentRangeStart == resumeOffset:
            if let resumeValidator {
                let isETag = resumeValidator.hasPrefix("\"") || resumeValidator.hasPrefix("W/")
                let answered = headers[isETag ? "etag" : "last-modified"]
                guard answered == resumeValidator else {
                    validatorMismatch = "the server answered the resume with part of a different file (\(isETag ? "ETag" : "Last-Modified") \(answered.map { "'\($0)'" } ?? "missing"), the part was '\(resumeValidator)')"
                    return false
                }
            }
            decision = .append
            return position(at: resumeOffset!)
        case 206:
            writeFailure = "the server sent a range starting at \(contentRangeStart.map(String.init) ?? "an unknown offset"), not the \(resumeOffset ?? 0) asked for"
            return false
        case 200:
            if let existingFileSize, headers["content-length"].flatMap({ Int64($0) }) == existingFileSize {
                matchesExistingFile = true
                decision = .discard
                return false
            }
            decision = .rewrite
            return position(at: 0)
        default:
            decision = .discard
            return true
        }
    }

    /// Cuts the file at `offset` and writes from there: bytes past a resume point are not trusted.
    private func position(at offset: Int64) -> Bool {
        guard ftruncate(descriptor, off_t(offset)) == 0, lseek(descriptor, off_t(offset), SEEK_SET) == off_t(offset) else {
            writeFailure = String(cString: strerror(errno))
            return false
        }
        size.store(offset, ordering: .relaxed)
        writebackFrom = offset
        return true
    }
}
