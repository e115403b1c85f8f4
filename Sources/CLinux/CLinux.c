#define _GNU_SOURCE
#include "CLinux.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <errno.h>

const uint32_t CLINUX_EPOLLIN = EPOLLIN;
const uint32_t CLINUX_EPOLLOUT = EPOLLOUT;
const uint32_t CLINUX_EPOLLERR = EPOLLERR;
const uint32_t CLINUX_EPOLLHUP = EPOLLHUP;
const uint32_t CLINUX_EPOLLRDHUP = EPOLLRDHUP;
const uint32_t CLINUX_EPOLLET = EPOLLET;
const int CLINUX_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
const int CLINUX_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
const int CLINUX_EPOLL_CTL_DEL = EPOLL_CTL_DEL;

int clinux_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int clinux_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int clinux_epoll_wait(int epfd, clinux_epoll_event *out, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n;
    do {
        n = epoll_wait(epfd, evs, max, timeout_ms);
    } while (n < 0 && errno == EINTR);
    for (int i = 0; i < n; i++) {
        out[i].events = evs[i].events;
        out[i].data = evs[i].data.u64;
    }
    return n;
}

int clinux_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int clinux_eventfd_signal(int fd) {
    uint64_t one = 1;
    return (int)write(fd, &one, sizeof one);
}

int clinux_eventfd_drain(int fd) {
    uint64_t v;
    return (int)read(fd, &v, sizeof v);
}

int clinux_accept4(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
