/*
 * Port forwarding for svc init: 127.0.0.1:<port> to a Unix socket, one fresh Unix connection per TCP connection.
 * Everything runs on init's single epoll loop with non-blocking sockets. Each direction has its own buffer; when a
 * side reaches EOF and its buffered bytes are written, the other side is half-closed (shutdown SHUT_WR). A
 * connection ends when both directions are closed, or at the first error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include "svc.h"

#define RELAY_BUF 32768
#define PUMP_ROUNDS 16

typedef struct conn conn_t;

typedef struct {
  handler_t h;
  conn_t *c;
  int fd;
  unsigned registered; /* epoll events currently asked for; 0 = not in the epoll set */
} end_t;

/* Direction d moves bytes read from e[d] into buf[d], then writes them to e[1 - d]. */
struct conn {
  end_t e[2];
  size_t off[2], len[2];
  char eof[2];  /* e[d] reached EOF */
  char shut[2]; /* writing to e[d] was shut down */
  char dead;
  conn_t *next_dead;
  char buf[2][RELAY_BUF];
};

typedef struct {
  handler_t h;
  int fd;
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} listener_t;

static int epfd = -1;
static conn_t *dead_list;
static int spare_fd = -1; /* closed to accept (and drop) a connection when out of descriptors */

static void watch(end_t *e, unsigned want) {
  if (want == e->registered) return;
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = want;
  ev.data.ptr = e;
  if (want == 0) epoll_ctl(epfd, EPOLL_CTL_DEL, e->fd, NULL);
  else epoll_ctl(epfd, e->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, e->fd, &ev);
  e->registered = want;
}

static void conn_end(conn_t *c) {
  if (c->dead) return;
  for (int s = 0; s < 2; s++) {
    watch(&c->e[s], 0);
    close(c->e[s].fd);
  }
  c->dead = 1;
  c->next_dead = dead_list;
  dead_list = c;
}

void forward_collect(void) {
  while (dead_list) {
    conn_t *c = dead_list;
    dead_list = c->next_dead;
    free(c);
  }
}

static int transient(void) { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

/* Moves what can be moved without blocking, then asks epoll for what each side waits on. */
static void pump(conn_t *c) {
  for (int round = 0, progress = 1; progress && round < PUMP_ROUNDS; round++) {
    progress = 0;
    for (int d = 0; d < 2; d++) {
      int from = c->e[d].fd, to = c->e[1 - d].fd;
      if (c->len[d] == 0 && !c->eof[d]) {
        ssize_t n = recv(from, c->buf[d], RELAY_BUF, 0);
        if (n > 0) {
          c->off[d] = 0;
          c->len[d] = (size_t)n;
          progress = 1;
        } else if (n == 0) {
          c->eof[d] = 1;
          progress = 1;
        } else if (!transient()) {
          conn_end(c);
          return;
        }
      }
      if (c->len[d] > 0) {
        ssize_t w = send(to, c->buf[d] + c->off[d], c->len[d], MSG_NOSIGNAL);
        if (w > 0) {
          c->off[d] += (size_t)w;
          c->len[d] -= (size_t)w;
          progress = 1;
        } else if (w < 0 && !transient()) {
          conn_end(c);
          return;
        }
      }
      if (c->eof[d] && c->len[d] == 0 && !c->shut[1 - d]) {
        shutdown(to, SHUT_WR);
        c->shut[1 - d] = 1;
      }
    }
  }
  if (c->shut[0] && c->shut[1]) {
    conn_end(c);
    return;
  }
  for (int s = 0; s < 2; s++) {
    unsigned want = 0;
    if (!c->eof[s] && c->len[s] == 0) want |= EPOLLIN;
    if (c->len[1 - s] > 0) want |= EPOLLOUT;
    watch(&c->e[s], want);
  }
}

static void on_end(handler_t *h, unsigned events) {
  (void)events;
  end_t *e = (end_t *)h;
  if (!e->c->dead) pump(e->c);
}

static int unix_connect(const char *path) {
  int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (u < 0) return -1;
  struct sockaddr_un ua;
  memset(&ua, 0, sizeof ua);
  ua.sun_family = AF_UNIX;
  memcpy(ua.sun_path, path, strlen(path));
  /* A blocking connect, bounded: a Unix connect only waits when the listener's backlog is full. */
  struct timeval tv = {5, 0};
  setsockopt(u, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc;
  while ((rc = connect(u, (struct sockaddr *)&ua, sizeof ua)) != 0 && errno == EINTR) {
  }
  if (rc != 0 || fcntl(u, F_SETFL, O_NONBLOCK) != 0) {
    close(u);
    return -1;
  }
  return u;
}

static void on_accept(handler_t *h, unsigned events) {
  (void)events;
  listener_t *l = (listener_t *)h;
  for (int i = 0; i < 64; i++) {
    int t = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (t < 0) {
      if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
        /* Out of descriptors: take the connection off the queue and drop it, rather than spin on it. */
        close(spare_fd);
        int drop = accept(l->fd, NULL, NULL);
        if (drop >= 0) close(drop);
        spare_fd = open("/", O_RDONLY | O_CLOEXEC);
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    int one = 1;
    setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int u = unix_connect(l->path);
    conn_t *c = u >= 0 ? calloc(1, sizeof *c) : NULL;
    if (!c) {
      if (u >= 0) close(u);
      close(t);
      continue;
    }
    int fds[2] = {t, u};
    for (int s = 0; s < 2; s++) {
      c->e[s].h.on_event = on_end;
      c->e[s].c = c;
      c->e[s].fd = fds[s];
    }
    pump(c);
  }
}

int forward_start(int ep, const char *path, int port) {
  epfd = ep;
  if (spare_fd < 0) spare_fd = open("/", O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  listener_t *l = calloc(1, sizeof *l);
  if (!l) return -1;
  if (strlen(path) >= sizeof l->path) {
    fprintf(stderr, "svc init: the socket path %s is too long; port %d is not forwarded\n", path, port);
    free(l);
    return -1;
  }
  memcpy(l->path, path, strlen(path));
  l->h.on_event = on_accept;
  l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN;
  ev.data.ptr = l;
  if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(l->fd, SOMAXCONN) != 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, l->fd, &ev) != 0) {
    if (errno == EADDRINUSE)
      fprintf(stderr, "svc init: 127.0.0.1:%d is already in use (another svc init forwards it?); not forwarding it to %s\n", port, path);
    else
      fprintf(stderr, "svc init: cannot listen on 127.0.0.1:%d: %s; not forwarding it to %s\n", port, strerror(errno), path);
    if (l->fd >= 0) close(l->fd);
    free(l);
    return -1;
  }
  return 0;
}
