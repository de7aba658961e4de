#include "CEpoll.h"
#include <errno.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

int fetchrun_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int fetchrun_eventfd_create(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int fetchrun_epoll_watch(int epoll, int fd, int interest, int known) {
    struct epoll_event event = {0};
    if (interest & FETCHRUN_EPOLL_READABLE) event.events |= EPOLLIN;
    if (interest & FETCHRUN_EPOLL_WRITABLE) event.events |= EPOLLOUT;
    event.data.fd = fd;
    if (epoll_ctl(epoll, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event) == 0) return 0;
    // Known but gone (a closed descriptor leaves the set by itself, and its number comes back),
    // or there when not known: the other operation applies.
    if (errno != (known ? ENOENT : EEXIST)) return -1;
    return epoll_ctl(epoll, known ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event);
}

int fetchrun_epoll_unwatch(int epoll, int fd) {
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
}

int fetchrun_epoll_wait(int epoll, int *fds, int *readiness, int capacity, int timeout_ms) {
    struct epoll_event events[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epoll, events, capacity, timeout_ms);
    for (int index = 0; index < count; index++) {
        int bits = 0;
        if (events[index].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) bits |= FETCHRUN_EPOLL_READABLE;
        if (events[index].events & EPOLLOUT) bits |= FETCHRUN_EPOLL_WRITABLE;
        if (events[index].events & EPOLLERR) bits |= FETCHRUN_EPOLL_ERROR;
        fds[index] = events[index].data.fd;
        readiness[index] = bits;
    }
    return count;
}
