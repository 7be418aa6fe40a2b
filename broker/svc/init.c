/*
 * svc init [--ttl SECONDS] [-- CMD ARGS...]: the first process of a sandbox (docs/design.md, "Sandbox isolation").
 *
 * - Child subreaper: every orphan below it is reaped.
 * - Forwards 127.0.0.1:4180 to /run/svc/broker.sock and 127.0.0.1:4181 to /run/svc/proxy.sock, each only when the
 *   socket file exists at start. A port already taken (another init in the same network namespace) is skipped with a
 *   note on stderr.
 * - With a command: runs it in its own session and exits with its status (exit code, or 128 + signal; 127 when it
 *   cannot be executed). SIGTERM/SIGINT: SIGTERM to the command's process group, SIGKILL 1.5 s later. SIGHUP, SIGQUIT,
 *   SIGUSR1 and SIGUSR2 are passed on to the group. When the command ends, what is left of its group and every
 *   process it adopted is killed, and init exits once they are gone.
 * - Without a command: runs until SIGTERM/SIGINT or until --ttl passes, then kills every process it can, exit 0.
 * - Never writes to stdout: the command's output is what the host reads.
 * - With --command-fd N instead of a command: a sandbox started ahead of its run (docs/design.md, "Sandbox
 *   provisioning"). N is a socket: once its signals are set up, init writes one byte to it ("R": ready), then reads
 *   it to its end: the working directory, the environment entries, an empty field, then the command, each
 *   NUL-terminated. Nothing read (the host dropped the sandbox): exits 0. The forwarders start after it, when the
 *   run's sockets are in place.
 *
 * Overrides, for tests and for the conformance suite of the sandbox backends (not for users):
 *   SVC_INIT_BROKER_SOCKET, SVC_INIT_PROXY_SOCKET  socket paths (defaults /run/svc/broker.sock, /run/svc/proxy.sock)
 *   SVC_INIT_BROKER_PORT, SVC_INIT_PROXY_PORT      loopback ports (defaults 4180, 4181)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "svc.h"

#define KILL_GRACE_MS 1500

typedef struct {
  handler_t h;
  int fd;
} signals_t;

static pid_t child = -1;      /* the command, leader of its own session and process group */
static int child_status = -1; /* its exit status once reaped */
static int stop_requested;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int status_of(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

static void reap(void) {
  int st;
  pid_t p;
  while ((p = waitpid(-1, &st, WNOHANG)) > 0)
    if (p == child) child_status = status_of(st);
}

/* The command's group; the child itself when it has not reached setsid() yet. */
static void signal_group(int sig) {
  if (child <= 0) return;
  if (kill(-child, sig) != 0 && child_status < 0) kill(child, sig);
}

static void on_signals(handler_t *h, unsigned events) {
  (void)events;
  signals_t *s = (signals_t *)h;
  struct signalfd_siginfo si;
  while (read(s->fd, &si, sizeof si) == (ssize_t)sizeof si) {
    switch (si.ssi_signo) {
      case SIGCHLD: reap(); break;
      case SIGTERM:
      case SIGINT: stop_requested = 1; break;
      default:
        if (child_status < 0) signal_group((int)si.ssi_signo);
    }
  }
  reap(); /* SIGCHLDs coalesce */
}

/* Direct children of this process (its own and the orphans it adopted as subreaper). */
static int kill_children(int sig) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  int found = 0;
  pid_t self = getpid();
  struct dirent *de;
  while ((de = readdir(d))) {
    char *end, path[64], stat[512];
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f) continue;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    /* pid (comm) state ppid ...; comm may hold spaces and parentheses: parse after the last ')'. */
    char *rp = strrchr(stat, ')');
    char state;
    int ppid;
    if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2 || ppid != self || state == 'Z') continue;
    kill((pid_t)pid, sig);
    found++;
  }
  closedir(d);
  return found;
}

/* Outside a PID namespace of its own (tests on a host), this process's descendants: the subreaper adopts them one
   generation at a time, so kill, reap, and look again until none is left, for up to ~1 s of one that will not die.
   Returning before they are gone would hand them, still running, to the host's init. */
static void kill_descendants(void) {
  for (int round = 0; round < 1000; round++) {
    reap();
    if (kill_children(SIGKILL) == 0) return;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

/* Without a command: stop everything left. As PID 1 of a namespace that is kill(-1). */
static void kill_everything(void) {
  if (getpid() == 1) {
    kill(-1, SIGKILL);
    reap();
    return;
  }
  kill_descendants();
}

static int parse_port(const char *name, int def) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end;
  long p = strtol(v, &end, 10);
  if (*end || p < 1 || p > 65535) {
    fprintf(stderr, "svc init: %s is not a port number; using %d\n", name, def);
    return def;
  }
  return (int)p;
}

static const char *socket_path(const char *name, const char *def) {
  const char *v = getenv(name);
  return v && *v ? v : def;
}

static int init_usage(const char *why) {
  fprintf(stderr, "svc init: %s\nsvc: usage: svc init [--ttl <seconds>] [--command-fd <fd> | -- cmd args...]\n", why);
  return 2;
}

/* The message of --command-fd, split in place: the directory, the environment (NULL-ended) and the command
   (NULL-ended). 0 when parsed, 1 when nothing came, -1 when malformed. */
static int read_command(int fd, buf_t *msg, char **cwd, char ***env, char ***cmd) {
  if (buf_read_fd(msg, fd) != 0) return -1;
  close(fd);
  if (msg->len == 0) return 1;
  if (msg->data[msg->len - 1] != 0) return -1;
  size_t fields = 0;
  for (size_t k = 0; k < msg->len; k++) fields += msg->data[k] == 0;
  char **all = calloc(fields + 2, sizeof *all);
  if (!all) return -1;
  size_t n = 0;
  for (char *p = msg->data; p < msg->data + msg->len; p += strlen(p) + 1) all[n++] = p;
  /* all: cwd, env..., "", cmd...; the empty field becomes the environment's end. */
  size_t sep = 1;
  while (sep < n && all[sep][0]) sep++;
  if (sep + 1 >= n) return -1; /* no separator, or no command after it */
  for (size_t k = 1; k < sep; k++)
    if (!strchr(all[k], '=')) return -1;
  *cwd = all[0];
  all[sep] = NULL;
  *env = all + 1;
  *cmd = all + sep + 1;
  return 0;
}

int svc_init(int argc, char **argv) {
  long long ttl_ms = 0;
  int command_fd = -1;
  int i = 0;
  while (i < argc) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if (!strcmp(a, "--command-fd")) {
      char *end;
      long n = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
      if (n < 3 || n > 1024 || *end) return init_usage("--command-fd needs a descriptor number from 3");
      command_fd = (int)n;
      i += 2;
      continue;
    }
    if (!strcmp(a, "--ttl") || !strncmp(a, "--ttl=", 6)) {
      const char *v = a[5] == '=' ? a + 6 : (i + 1 < argc ? argv[++i] : NULL);
      char *end;
      long n = v ? strtol(v, &end, 10) : -1;
      if (!v || !*v || *end || n < 0 || n > 100L * 365 * 86400) return init_usage("--ttl needs a number of seconds");
      ttl_ms = (long long)n * 1000;
      i++;
      continue;
    }
    if (a[0] == '-' && a[1]) return init_usage("unknown option");
    break; /* the command, without -- */
  }
  char **cmd = i < argc ? argv + i : NULL;
  if (command_fd >= 0 && cmd) return init_usage("--command-fd takes no command");

  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t set, old;
  sigemptyset(&set);
  int handled[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  for (size_t k = 0; k < sizeof handled / sizeof handled[0]; k++) sigaddset(&set, handled[k]);
  sigprocmask(SIG_BLOCK, &set, &old);
  struct sigaction ign, old_pipe;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old_pipe);

  int epfd = epoll_create1(EPOLL_CLOEXEC);
  signals_t sig = {{on_signals}, signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)};
  if (epfd < 0 || sig.fd < 0) {
    perror("svc init: epoll/signalfd");
    return 1;
  }
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN;
  ev.data.ptr = &sig;
  epoll_ctl(epfd, EPOLL_CTL_ADD, sig.fd, &ev);

  if (command_fd >= 0) {
    /* Everything is in place (mounts, this process, its signal handling): one byte tells the host so, on the same
       socket the command comes back on. */
    while (write(command_fd, "R", 1) < 0 && errno == EINTR) {
    }
    buf_t msg = {0};
    char *cwd, **env;
    int got = read_command(command_fd, &msg, &cwd, &env, &cmd);
    if (got == 1) return 0;
    if (got != 0) {
      fputs("svc init: the command sent on --command-fd is malformed\n", stderr);
      return 127;
    }
    if (chdir(cwd) != 0) {
      fprintf(stderr, "svc init: cannot change to %s: %s\n", cwd, strerror(errno));
      return 1;
    }
    /* msg stays allocated: environ points into it for the rest of the process. */
    clearenv();
    for (char **e = env; *e; e++) putenv(*e);
  }

  const char *broker = socket_path("SVC_INIT_BROKER_SOCKET", "/run/svc/broker.sock");
  const char *proxy = socket_path("SVC_INIT_PROXY_SOCKET", "/run/svc/proxy.sock");
  if (access(broker, F_OK) != 0) fprintf(stderr, "svc init: %s does not exist; svc commands will not reach the service\n", broker);
  else forward_start(epfd, broker, parse_port("SVC_INIT_BROKER_PORT", 4180));
  if (access(proxy, F_OK) == 0) forward_start(epfd, proxy, parse_port("SVC_INIT_PROXY_PORT", 4181));

  if (cmd) {
    child = fork();
    if (child < 0) {
      perror("svc init: fork");
      return 127;
    }
    if (child == 0) {
      sigaction(SIGPIPE, &old_pipe, NULL);
      sigprocmask(SIG_SETMASK, &old, NULL);
      setsid();
      execvp(cmd[0], cmd);
      fprintf(stderr, "svc init: cannot run %s: %s\n", cmd[0], strerror(errno));
      _exit(127);
    }
  }

  long long ttl_at = ttl_ms > 0 ? now_ms() + ttl_ms : 0, kill_at = 0;
  int stopping = 0;
  struct epoll_event events[64];
  for (;;) {
    if (cmd && child_status >= 0) {
      /* The command ended: nothing of it may outlive init (in a sandbox the namespace would end it anyway). */
      kill(-child, SIGKILL);
      /* As PID 1 the kernel kills and waits for the rest when init exits. */
      if (getpid() != 1) kill_descendants();
      return child_status;
    }
    long long now = now_ms();
    if (!stopping && (stop_requested || (ttl_at && now >= ttl_at))) {
      if (!cmd) {
        kill_everything();
        return 0;
      }
      stopping = 1;
      signal_group(SIGTERM);
      kill_at = now + KILL_GRACE_MS;
    }
    if (kill_at && now >= kill_at) {
      signal_group(SIGKILL);
      kill_at = 0;
    }
    long long wait = -1;
    if (!stopping && ttl_at) wait = ttl_at - now;
    if (kill_at) wait = kill_at - now;
    if (wait > 0x7fffffff) wait = 0x7fffffff;
    int n = epoll_wait(epfd, events, 64, wait < 0 ? -1 : (int)wait);
    for (int k = 0; k < n; k++) {
      handler_t *h = events[k].data.ptr;
      h->on_event(h, events[k].events);
    }
    forward_collect();
  }
}
