import FetchRunKit
import Foundation

/// `--metrics-file`: the metrics of a one-shot run for node_exporter's textfile collector,
/// written whole or not at all — a temporary file beside the target, synced, then renamed
/// over it — so that the collector never reads half a file.
package enum MetricsFile {
    /// The file is replaced the way snapshots are (``AtomicFile``): its temporary is a dot
    /// file, which the textfile collector does not read (it reads only `*.prom`), and a
    /// symbolic link at `path` is replaced, never written through.
    /// - Throws: ``MetricsFileError`` naming the path when the folder cannot be written.
    package static func write(_ exposition: String, to path: String) throws(MetricsFileError) {
        do {
            try AtomicFile.write(Data(exposition.utf8), to: path)
        } catch {
            throw MetricsFileError(path: path, reason: String(cString: strerror(error.code)))
        }
    }
}

/// Why the metrics file could not be written.
package struct MetricsFileError: Error, Sendable, CustomStringConvertible {
    package var path: String
    package var reason: String
    package var description: String { "metrics file \(path): \(reason)" }
}
