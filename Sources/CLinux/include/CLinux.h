#ifndef CLINUX_H
#define CLINUX_H
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* An unpacked copy of struct epoll_event (the kernel's is packed on x86_64). */
typedef struct {
    uint32_t events;
    uint64_t data;
} clinux_epoll_event;

int clinux_epoll_create(void);
int clinux_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
int clinux_epoll_wait(int epfd, clinux_epoll_event *events, int max, int timeout_ms);
int clinux_eventfd(void);
int clinux_eventfd_signal(int fd);
int clinux_eventfd_drain(int fd);
int clinux_accept4(int fd, struct sockaddr *addr, socklen_t *len);

/* A non-blocking, close-on-exec TCP socket of the given family (AF_INET / AF_INET6). */
int clinux_socket(int family);
int clinux_set_nodelay(int fd);
int clinux_set_reuseaddr(int fd);
/* SO_ERROR of the socket (0 when none); errno when getsockopt itself fails. */
int clinux_socket_error(int fd);
/* send() with MSG_NOSIGNAL so a closed peer yields EPIPE, never SIGPIPE. */
ssize_t clinux_send(int fd, const void *buf, size_t len);
void clinux_ignore_sigpipe(void);
/* Names the calling thread (truncated to 15 bytes) so loops show up in top/gdb. */
void clinux_set_thread_name(const char *name);

/* glibc's malloc_trim(0): hands free heap pages of every arena back to the kernel. 1 when
   some memory was released. */
int clinux_malloc_trim(void);
/* mallopt(M_MMAP_THRESHOLD, bytes): blocks of at least this size are mapped on their own
   and unmapped when freed. 1 on success. */
int clinux_malloc_mmap_threshold(int bytes);

extern const uint32_t CLINUX_EPOLLIN;
extern const uint32_t CLINUX_EPOLLOUT;
extern const uint32_t CLINUX_EPOLLERR;
extern const uint32_t CLINUX_EPOLLHUP;
extern const uint32_t CLINUX_EPOLLRDHUP;
/* CPUs in this thread's affinity mask (sched_getaffinity, CPU_COUNT); -1 when it cannot be read. */
int clinux_affinity_cpu_count(void);

extern const uint32_t CLINUX_EPOLLET;
extern const int CLINUX_EPOLL_CTL_ADD;
extern const int CLINUX_EPOLL_CTL_MOD;
extern const int CLINUX_EPOLL_CTL_DEL;
#endif
