import FetchRunCore
import CLinux

/// How far ahead glibc's allocator makes memory writable for the threads' heaps.
///
/// Every thread that allocates gets a heap of its own (an arena), and by default glibc makes
/// each such heap writable one page at a time as it fills: an `mprotect` call per 4 KB, taking
/// the process's memory-map lock, which the other threads' page faults then wait for. A run of
/// 1,000 feeds grows its heaps by ~27 MB in its first round — the frames of 512 fetches in
/// flight and their curl handles — and made ~6,700 such calls; reserving ahead leaves ~60 and
/// takes 6–8 % off the run's CPU time (Benchmarks/RESULTS.md). A new heap is then writable for
/// its first `pad` bytes at once: address space only, a page still costs memory when first
/// written. The price: a heap that shrinks keeps up to `pad` bytes free at its top.
package enum HeapReserve {
    /// Enough for the busiest thread's heap in a run at the default `max_in_flight` (512).
    package static let typicalPad = 16 << 20

    /// Asks glibc to make each new heap writable `pad` bytes beyond its first request (and to
    /// grow the main heap that far ahead), and to keep as much free at the top of a heap it
    /// trims (`M_TOP_PAD`). A heap that outgrows its pad grows a page at a time again, which
    /// is why the pad covers a busy thread's whole need. Clamped to 0...1 GiB.
    ///
    /// Call it at the start of `main`, before other threads allocate: heaps made earlier grow
    /// a page at a time as before.
    package static func reserveAhead(_ pad: Int) {
        _ = fetchrun_malloc_set_top_pad(Int32(clamping: min(max(pad, 0), 1 << 30)))
    }
}
