#ifndef FETCHRUN_CLINUX_SHIM_H
#define FETCHRUN_CLINUX_SHIM_H
// Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not
// define. Each wrapper keeps the call's own name and meaning.
#define _GNU_SOURCE 1
#include <fcntl.h>

// Starts writeback of a file range without waiting for it (SYNC_FILE_RANGE_WRITE).
static inline int fetchrun_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}
#endif
