#define _GNU_SOURCE
#include "CLinux.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <malloc.h>

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

int clinux_socket(int family) {
    return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

int clinux_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int clinux_set_reuseaddr(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
}

int clinux_socket_error(int fd) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return errno;
    return err;
}

ssize_t clinux_send(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_NOSIGNAL);
}

void clinux_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

void clinux_set_thread_name(const char *name) {
    char short_name[16];
    strncpy(short_name, name, sizeof short_name - 1);
    short_name[sizeof short_name - 1] = 0;
    pthread_setname_np(pthread_self(), short_name);
}

int clinux_malloc_trim(void) { return malloc_trim(0); }

int clinux_malloc_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }

int clinux_affinity_cpu_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
    return CPU_COUNT(&set);
}
