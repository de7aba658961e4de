import Foundation

/// How an entry changes as its downloads go: what a response said, how an attempt ended,
/// and which finished files `keep` lets go.
extension Downloader {
    /// Deletes the files of a source's done downloads beyond the newest `keep`. Only a file
    /// directly inside `directory` is deleted: a row naming another is marked removed and its
    /// file left alone.
    static func prune(_ entries: inout [DownloadEntry], source: String, directory: String, keep: Int) -> [DownloadEntry] {
        let done = entries.indices.filter { entries[$0].source == source && entries[$0].directory == directory && entries[$0].state == .done }
        let newestFirst = done.sorted { (entries[$0].published ?? entries[$0].queuedAt) > (entries[$1].published ?? entries[$1].queuedAt) }
        var removed: [DownloadEntry] = []
        for index in newestFirst.dropFirst(keep) {
            if let file = entries[index].file, DownloadEntry.isPlainName((file as NSString).lastPathComponent),
               (file as NSString).deletingLastPathComponent == directory {
                unlink(file)
            }
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
    /// Why this entry may not be downloaded where it says, or `nil`: its folder must be one of
    /// `folders` (the config's) and its names plain file names, as fetchrun makes them — a row
    /// of the queue could otherwise write or rename a file anywhere.
    func placementProblem(folders: Set<String>) -> String? {
        guard folders.contains(directory) else {
            return "its folder \(TerminalText.safe(directory)) is not a download folder of the config (the queue in the state folder names it; nothing was written)"
        }
        for (what, name) in [("part name", partName), ("file name", suggestedName ?? partName)] where !Self.isPlainName(name) {
            return "its \(what) \(TerminalText.safe(name)) is not a plain file name (the queue in the state folder names it; nothing was written)"
        }
        return nil
    }

    /// Whether `name` is what ``FileNames/sanitised(_:fallback:)`` makes: one file directly
    /// inside a folder.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && FileNames.sanitised(name, fallback: "") == name
    }

    /// The entry after a download attempt ended this way.
    mutating func record(_ outcome: Downloader.Outcome, at now: Date) {
        switch outcome {
        case .done(let path, let bytes, _):
            state = .done
            file = path
            received = bytes
            size = bytes
            failure = nil
            finishedAt = now
        case .failed(let reason, let retryable, let deletePart):
            state = .failed
            failure = reason
            self.retryable = retryable
            attempts += 1
            finishedAt = now
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
