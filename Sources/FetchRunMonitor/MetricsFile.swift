import FetchRunKit
import Foundation

/// `--metrics-file`: the metrics of a one-shot run for node_exporter's textfile collector,
/// written whole or not at all — a temporary file beside the target, synced, then renamed
/// over it — so that the collector never reads half a file.
public enum MetricsFile {
    /// - Throws: an error naming the path when the folder cannot be written.
    public static func write(_ exposition: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        // A dot file: the textfile collector reads only `*.prom`.
        let temporary = folder + "/.\(url.lastPathComponent).\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw MetricsFileError(path: path, reason: String(cString: strerror(errno))) }
        var failure: Int32 = 0
        let bytes = Array(exposition.utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        close(descriptor)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw MetricsFileError(path: path, reason: String(cString: strerror(failure)))
        }
    }
}

/// Why the metrics file could not be written.
public struct MetricsFileError: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "metrics file \(path): \(reason)" }
}
