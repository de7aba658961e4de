#ifndef FETCHRUN_CLINUX_SHIM_H
#define FETCHRUN_CLINUX_SHIM_H
// Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not
// define. Each wrapper keeps the call's own name and meaning.
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <malloc.h>
#include <string.h>
#include <stdio.h>

// Sets how much memory beyond a request glibc's malloc makes writable when it makes a heap,
// and keeps when it trims one (mallopt M_TOP_PAD); 1 on success.
static inline int fetchrun_malloc_set_top_pad(int bytes) {
    return mallopt(M_TOP_PAD, bytes);
}

// Starts writeback of a file range without waiting for it (SYNC_FILE_RANGE_WRITE).
static inline int fetchrun_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

// Finds a byte sequence in a buffer (memmem).
static inline void *fetchrun_memmem(const void *haystack, size_t haystack_length, const void *needle, size_t needle_length) {
    return memmem(haystack, haystack_length, needle, needle_length);
}

// Renames without replacing an existing file, atomically (renameat2 RENAME_NOREPLACE).
static inline int fetchrun_rename_noreplace(int from_folder, const char *from, int to_folder, const char *to) {
    return renameat2(from_folder, from, to_folder, to, RENAME_NOREPLACE);
}

// The two posix_spawn file actions below are declared here rather than through <spawn.h>:
// under _GNU_SOURCE that header pulls in definitions (fd_set) that clash with the ones other
// modules see. `actions` is a posix_spawn_file_actions_t.
extern int posix_spawn_file_actions_addchdir_np(void *actions, const char *path);
extern int posix_spawn_file_actions_addclosefrom_np(void *actions, int lowest);

// Makes a spawned process start in `path` (posix_spawn_file_actions_addchdir_np, glibc 2.29).
static inline int fetchrun_spawn_addchdir(void *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

// Makes a spawned process close every descriptor from `lowest` up, atomically with the spawn
// (posix_spawn_file_actions_addclosefrom_np, glibc 2.34).
static inline int fetchrun_spawn_addclosefrom(void *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

// Flushes the whole file system holding `fd` to disk (syncfs), declared here as the spawn
// actions are: one flush for a batch of files instead of an fsync each.
extern int syncfs(int fd);
static inline int fetchrun_syncfs(int fd) {
    return syncfs(fd);
}
#endif
