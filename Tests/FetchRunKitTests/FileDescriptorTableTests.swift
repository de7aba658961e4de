import Glibc
import Testing
@testable import FetchRunKit
@testable import FetchRunTransport

/// Growing the descriptor table ahead of need: it grows, within the process's limit, and
/// leaves nothing open. One test, so that nothing else in this suite grows the table between
/// its steps.
@Suite struct FileDescriptorTableTests {
    @Test func theTableGrowsAsAskedWithinTheLimitAndNothingStaysOpen() throws {
        var limit = rlimit()
        try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let softLimit = Int(clamping: limit.rlim_cur)
        let before = try #require(FileDescriptorTable.size())
        let wanted = min(before * 2, softLimit)
        try #require(wanted > before, "the soft RLIMIT_NOFILE (\(softLimit)) leaves no room to grow a table of \(before)")

        FileDescriptorTable.reserve(wanted)
        #expect(try #require(FileDescriptorTable.size()) >= wanted)
        // The descriptor made to grow it is closed again.
        #expect(fcntl(Int32(wanted - 1), F_GETFD) == -1)

        // Beyond the limit: no trap on the arithmetic, the table grown to the limit (or the
        // kernel's own ceiling, `fs.nr_open`, a million by default), nothing left open.
        FileDescriptorTable.reserve(.max)
        FileDescriptorTable.reserve(0)
        FileDescriptorTable.reserve(-5)
        #expect(try #require(FileDescriptorTable.size()) >= min(softLimit, 1 << 20))
        #expect(fcntl(Int32(clamping: softLimit - 1), F_GETFD) == -1)
    }
}
