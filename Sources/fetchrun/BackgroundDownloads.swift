import FetchRunKit
import Foundation

/// Watch mode's downloads: a downloader running beside the fetch loop for as long as the
/// watch runs, started as soon as this process can take the transfer lock.
///
/// If a detached `fetchrun transfer` holds the lock at start, it does the downloading; once it
/// has drained the queue and exited, the next fetch that queues something takes over here.
actor BackgroundDownloads {
    private let queue: DownloadQueue
    private let makeDownloader: @Sendable () -> Downloader
    private var downloader: Downloader?
    private var task: Task<DownloadTally, Never>?
    private var toldAboutHolder = false

    init(queue: DownloadQueue, makeDownloader: @escaping @Sendable () -> Downloader) {
        self.queue = queue
        self.makeDownloader = makeDownloader
    }

    /// Starts downloading if no other process is, else wakes the running downloader.
    func kick() async {
        if let downloader {
            await downloader.wake()
            return
        }
        let lock: StateLock
        do {
            lock = try queue.lockTransfers()
        } catch {
            if !toldAboutHolder {
                toldAboutHolder = true
                Console.error(error.isLocked
                    ? "downloads are left to the transfer already running (process \(queue.transferHolder.map(String.init) ?? "?"))"
                    : error.description)
            }
            return
        }
        let downloader = makeDownloader()
        self.downloader = downloader
        task = Task {
            let tally = await downloader.run(.untilCancelled)
            withExtendedLifetime(lock) {}
            return tally
        }
    }

    /// Stops the downloads; partial files stay and resume at the next start.
    func stop() async -> DownloadTally? {
        task?.cancel()
        return await task?.value
    }
}
