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

// Starts `path` with `argv` as a child tied to the calling thread: in a process group of its
// own, stdin from /dev/null, stdout and stderr to `log_fd`, no other descriptor, default
// signal handling, and SIGKILL as soon as the thread that started it ends — with the process,
// however it ends (prctl PR_SET_PDEATHSIG). Only system calls run between fork and exec. The
// child's pid, or -1 with errno set.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
static inline int fetchrun_spawn_tied(const char *path, char *const argv[], char *const envp[], int log_fd) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have ended between fork and prctl: then no signal would ever come.
    if (getppid() != parent) _exit(127);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) _exit(127);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int defaults[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT};
    for (unsigned i = 0; i < sizeof defaults / sizeof defaults[0]; i++) signal(defaults[i], SIG_DFL);
    execve(path, argv, envp);
    _exit(127);
}
#endif
