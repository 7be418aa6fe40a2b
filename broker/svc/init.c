/*
 * svc init: the first process of a sandbox. Reaps zombies, forwards loopback ports to the host's Unix sockets
 * (the broker and the egress proxy), and runs the command, exiting with its status.
 * Test overrides: SVC_INIT_BROKER_SOCKET, SVC_INIT_PROXY_SOCKET, SVC_INIT_BROKER_PORT, SVC_INIT_PROXY_PORT.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "svc.h"

typedef struct {
  int listener;
  char path[108];
} forward_t;

typedef struct {
  int a, b;
} pair_t;

static volatile sig_atomic_t terminate = 0;
static void on_term(int sig) { (void)sig; terminate = 1; }

/* Relays both ways until both directions are closed; one side's EOF half-closes the other. */
static void *relay(void *arg) {
  pair_t p = *(pair_t *)arg;
  free(arg);
  struct pollfd fds[2] = {{p.a, POLLIN, 0}, {p.b, POLLIN, 0}};
  int open_dir[2] = {1, 1};
  char buf[32768];
  while (open_dir[0] || open_dir[1]) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (!open_dir[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      int to = fds[1 - i].fd;
      if (n <= 0) {
        open_dir[i] = 0;
        fds[i].events = 0;
        fds[i].fd = -1;
        shutdown(to, SHUT_WR);
        continue;
      }
      for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w < 0) {
          if (errno == EINTR) continue;
          open_dir[0] = open_dir[1] = 0;
          break;
        }
        off += w;
      }
    }
  }
  close(p.a);
  close(p.b);
  return NULL;
}

static void *accept_loop(void *arg) {
  forward_t *f = arg;
  for (;;) {
    int c = accept(f->listener, NULL, NULL);
    if (c < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un ua;
    memset(&ua, 0, sizeof ua);
    ua.sun_family = AF_UNIX;
    memcpy(ua.sun_path, f->path, sizeof ua.sun_path - 1);
    if (u < 0 || connect(u, (struct sockaddr *)&ua, sizeof ua) != 0) {
      if (u >= 0) close(u);
      close(c);
      continue;
    }
    pair_t *p = malloc(sizeof *p);
    if (!p) { close(c); close(u); continue; }
    p->a = c;
    p->b = u;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    if (pthread_create(&t, &attr, relay, p) != 0) {
      close(c);
      close(u);
      free(p);
    }
    pthread_attr_destroy(&attr);
  }
}

static void start_forward(const char *env_path, const char *def_path, const char *env_port, int def_port, int required) {
  const char *path = getenv(env_path) ? getenv(env_path) : def_path;
  const char *port_s = getenv(env_port);
  int port = port_s ? atoi(port_s) : def_port;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (required) fprintf(stderr, "svc init: %s is missing; nothing to forward to\n", path);
    return;
  }
  int l = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 128) != 0) {
    /* Another init of the same network namespace already forwards this port. */
    if (l >= 0) close(l);
    return;
  }
  forward_t *f = calloc(1, sizeof *f);
  if (!f) return;
  f->listener = l;
  snprintf(f->path, sizeof f->path, "%s", path);
  pthread_t t;
  if (pthread_create(&t, NULL, accept_loop, f) == 0) pthread_detach(t);
}

static int status_of(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* TERM to the group, KILL 1.5 s later; reaps what it can meanwhile. */
static void stop_group(pid_t group, pid_t child, int *child_status) {
  kill(-group, SIGTERM);
  double until = now_s() + 1.5;
  while (now_s() < until) {
    int st;
    pid_t w = waitpid(-1, &st, WNOHANG);
    if (w == child) *child_status = status_of(st);
    if (w <= 0) usleep(20000);
  }
  kill(-group, SIGKILL);
}

int svc_init(int argc, char **argv) {
  long ttl = 0;
  int i = 0;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--ttl") == 0 && i + 1 < argc) ttl = atol(argv[++i]);
    else if (strcmp(argv[i], "--") == 0) { i++; break; }
    else break;
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  start_forward("SVC_INIT_BROKER_SOCKET", "/run/svc/broker.sock", "SVC_INIT_BROKER_PORT", 4180, 1);
  start_forward("SVC_INIT_PROXY_SOCKET", "/run/svc/proxy.sock", "SVC_INIT_PROXY_PORT", 4181, 0);
  double deadline = ttl > 0 ? now_s() + (double)ttl : 0;

  if (i >= argc) {
    /* No command: keep the sandbox alive until told to stop or the TTL passes. */
    while (!terminate && (deadline == 0 || now_s() < deadline)) {
      int st;
      if (waitpid(-1, &st, WNOHANG) <= 0) usleep(200000);
    }
    kill(-1, SIGKILL);
    return 0;
  }

  pid_t child = fork();
  if (child < 0) {
    perror("svc init: fork");
    return 127;
  }
  if (child == 0) {
    signal(SIGPIPE, SIG_DFL);
    setsid();
    execvp(argv[i], &argv[i]);
    fprintf(stderr, "svc init: cannot run %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  int child_status = -1;
  while (child_status < 0) {
    if (terminate || (deadline > 0 && now_s() >= deadline)) {
      stop_group(child, child, &child_status);
      if (child_status < 0) child_status = 128 + SIGTERM;
      break;
    }
    int st;
    pid_t w = waitpid(-1, &st, 0);
    if (w == child) child_status = status_of(st);
    else if (w < 0 && errno == ECHILD) break;
  }
  return child_status < 0 ? 1 : child_status;
}
