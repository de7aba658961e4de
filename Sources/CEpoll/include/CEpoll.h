#ifndef FETCHRUN_CEPOLL_H
#define FETCHRUN_CEPOLL_H
// The curl loop's epoll set and its eventfd wake-up, with plain types only. <sys/epoll.h> and
// <sys/eventfd.h> stay in epoll.c: seen by Swift beside its Glibc module they clash with it
// (fd_set), as <spawn.h> does in CLinux.

// Readiness and interest, as bits.
#define FETCHRUN_EPOLL_READABLE 1
#define FETCHRUN_EPOLL_WRITABLE 2
#define FETCHRUN_EPOLL_ERROR 4

// epoll_create1(EPOLL_CLOEXEC): the set, or -1 with errno.
int fetchrun_epoll_create(void);

// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK): the descriptor, or -1 with errno.
int fetchrun_eventfd_create(void);

// Watches `fd` for `interest` (READABLE and/or WRITABLE; an error or hang-up is always
// reported): added to the set, or — `known`, already in it — what it is watched for changed;
// the other way when the set disagrees. 0, or -1 with errno.
int fetchrun_epoll_watch(int epoll, int fd, int interest, int known);

// Stops watching `fd`. 0, or -1 with errno.
int fetchrun_epoll_unwatch(int epoll, int fd);

// epoll_wait: up to `capacity` ready descriptors into `fds`, with their readiness bits (a
// hang-up reads as READABLE) into `readiness`. The count, 0 when `timeout_ms` passed, or -1
// with errno (EINTR included).
int fetchrun_epoll_wait(int epoll, int *fds, int *readiness, int capacity, int timeout_ms);

#endif
