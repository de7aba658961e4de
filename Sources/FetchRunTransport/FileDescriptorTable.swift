import FetchRunCore
import Foundation
import Glibc

/// The process's table of file descriptors, grown ahead of need.
///
/// The kernel grows a process's descriptor table as descriptors are opened (to 128, 256, 512,
/// 1,024 slots and so on), and while the process has more than one thread each growth waits for
/// an RCU grace period (`expand_files` calls `synchronize_rcu`) in whichever thread opened the
/// descriptor. In a run of 1,000 feeds that is the curl thread opening its 256th and 512th
/// connections, each `socket` call blocked 8–16 ms in the middle of the first round, while
/// every other transfer waits for that thread. A process with a single thread grows its table
/// without waiting.
package enum FileDescriptorTable {
    /// Descriptors a run at the default `max_in_flight` (512) uses: a connection per fetch in
    /// flight, the state database's files, the listening socket and the rest.
    package static let typicalNeed = 1024

    /// Grows the table to hold at least `count` descriptors — at most the soft `RLIMIT_NOFILE`,
    /// beyond which none can be opened — by duplicating a descriptor to the highest number and
    /// closing it again. Opens and leaves open nothing.
    ///
    /// Call it at the start of `main`, before any other thread exists: later it still grows the
    /// table, but waits for the grace period itself. Does nothing when the table is that large
    /// already or no descriptor can be duplicated (the process at its limit).
    package static func reserve(_ count: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        // RLIM_INFINITY is the largest rlim_t; an Int32 descriptor number bounds it either way.
        let highest = min(count, Int(clamping: limit.rlim_cur), Int(Int32.max)) - 1
        guard highest > 2 else { return }
        let source = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { return }
        // F_DUPFD takes the lowest free number at or above `highest`: the table grows to hold it.
        let duplicate = fcntl(source, F_DUPFD_CLOEXEC, Int32(highest))
        if duplicate >= 0 { close(duplicate) }
        close(source)
    }

    /// How many descriptors the table holds now (`FDSize` in `/proc/self/status`), or `nil`
    /// where that cannot be read. For the tests.
    static func size() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("FDSize:") {
            return Int(line.dropFirst("FDSize:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
