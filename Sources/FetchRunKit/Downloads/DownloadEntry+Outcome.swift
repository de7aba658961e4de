import Foundation

/// How an entry changes as its downloads go: what a response said, how an attempt ended,
/// and which finished files `keep` lets go.
extension Downloader {
    /// Deletes the files of a source's done downloads beyond the newest `keep`.
    static func prune(_ entries: inout [DownloadEntry], source: String, directory: String, keep: Int) -> [DownloadEntry] {
        let done = entries.indices.filter { entries[$0].source == source && entries[$0].directory == directory && entries[$0].state == .done }
        let newestFirst = done.sorted { (entries[$0].published ?? entries[$0].queuedAt) > (entries[$1].published ?? entries[$1].queuedAt) }
        var removed: [DownloadEntry] = []
        for index in newestFirst.dropFirst(keep) {
            if let file = entries[index].file { unlink(file) }
            entries[index].state = .removed
            removed.append(entries[index])
        }
        return removed
    }

    /// Keeps what a response said about the file: the validator a resume needs, its size, its name.
    static func remember(_ head: DownloadFile.ResponseHead, in entry: inout DownloadEntry) {
        guard head.status == 200 || head.status == 206 else { return }
        if head.status == 200 {
            let etag = head.headers["etag"].flatMap { $0.hasPrefix("W/") ? nil : $0 }
            entry.validator = etag ?? head.headers["last-modified"]
        }
        if let size = head.announcedSize { entry.size = size }
        if let disposition = head.headers["content-disposition"].flatMap(FileNames.fromContentDisposition) {
            entry.suggestedName = disposition
        }
    }

    /// Bytes of an entry's partial file on disk now (what `fetchrun downloads` shows for one
    /// another process is downloading).
    public static func partSize(of entry: DownloadEntry) -> Int64 {
        fileSize(entry.partPath)
    }

    static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }
}

extension DownloadEntry {
    /// The entry after a download attempt ended this way.
    mutating func record(_ outcome: Downloader.Outcome) {
        switch outcome {
        case .done(let path, let bytes, _):
            state = .done
            file = path
            received = bytes
            size = bytes
            failure = nil
            finishedAt = Date()
        case .failed(let reason, let retryable, let deletePart):
            state = .failed
            failure = reason
            self.retryable = retryable
            attempts += 1
            finishedAt = Date()
            if deletePart {
                unlink(partPath)
                received = 0
                validator = nil
            } else {
                received = Downloader.fileSize(partPath)
            }
        case .cancelled:
            state = .queued
            received = Downloader.fileSize(partPath)
        }
    }
}
