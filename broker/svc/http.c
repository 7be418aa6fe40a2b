/*
 * A small HTTP/1.1 client for the broker. The binary is static, so there is no DNS: SVC_BROKER_URL must be
 * http://<numeric IPv4 or localhost>[:port][/prefix]. Answers may use Content-Length, chunked encoding, or end at EOF.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "svc.h"

#define MAX_HEAD (64 * 1024)

typedef struct {
  struct sockaddr_in addr;
  char host[64];   /* for the Host header: as written in the URL, with the port */
  char prefix[512]; /* path prefix without a trailing slash */
} target_t;

static int parse_url(const char *url, target_t *t) {
  if (strncasecmp(url, "http://", 7) != 0) return -1;
  const char *h = url + 7;
  size_t hl = strcspn(h, ":/?#");
  if (hl == 0 || hl >= 32) return -1;
  char name[32];
  memcpy(name, h, hl);
  name[hl] = 0;
  const char *p = h + hl;
  long port = 80;
  if (*p == ':') {
    char *after;
    p++;
    if (*p < '0' || *p > '9') return -1;
    port = strtol(p, &after, 10);
    if (port < 1 || port > 65535 || after - p > 5) return -1;
    p = after;
  }
  if (*p && *p != '/') return -1;
  size_t pl = strlen(p);
  while (pl > 0 && p[pl - 1] == '/') pl--;
  if (pl >= sizeof t->prefix) return -1;
  memcpy(t->prefix, p, pl);
  t->prefix[pl] = 0;
  memset(&t->addr, 0, sizeof t->addr);
  t->addr.sin_family = AF_INET;
  t->addr.sin_port = htons((unsigned short)port);
  const char *ip = strcasecmp(name, "localhost") == 0 ? "127.0.0.1" : name;
  if (inet_pton(AF_INET, ip, &t->addr.sin_addr) != 1) return -1;
  snprintf(t->host, sizeof t->host, "%s:%ld", name, port);
  return 0;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The value of a header in the head block (lines after the status line), or NULL. */
static const char *header(const char *head, const char *name, size_t *len) {
  size_t nl = strlen(name);
  for (const char *line = strstr(head, "\r\n"); line; line = strstr(line, "\r\n")) {
    line += 2;
    if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
      const char *v = line + nl + 1;
      while (*v == ' ' || *v == '\t') v++;
      const char *e = strstr(v, "\r\n");
      if (!e) e = v + strlen(v);
      while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
      *len = (size_t)(e - v);
      return v;
    }
  }
  return NULL;
}

enum { BODY_EOF, BODY_LENGTH, BODY_CHUNKED };

typedef struct {
  int mode;
  size_t length;  /* BODY_LENGTH: bytes expected */
  size_t pos;     /* BODY_CHUNKED: where the next chunk line starts in raw */
  int done;
} body_state_t;

/* Decodes the complete chunks in raw[pos..]; sets done after the last chunk. -1 on a malformed chunk line. */
static int dechunk(const buf_t *raw, body_state_t *st, buf_t *out) {
  const char *base = raw->data;
  while (!st->done) {
    const char *line = base + st->pos, *end = base + raw->len;
    const char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
    if (!eol) return (size_t)(end - line) > 1024 ? -1 : 0;
    size_t size = 0;
    const char *q = line;
    int digits = 0;
    for (int h; q < eol && (h = (*q >= '0' && *q <= '9') ? *q - '0' : (*q >= 'a' && *q <= 'f') ? *q - 'a' + 10 : (*q >= 'A' && *q <= 'F') ? *q - 'A' + 10 : -1) >= 0; q++) {
      if (++digits > 15) return -1;
      size = size * 16 + (size_t)h;
    }
    if (digits == 0 || (q < eol && *q != ';' && *q != ' ' && *q != '\t')) return -1;
    const char *data = eol + 2;
    if (size == 0) {
      /* Trailer lines up to an empty line. */
      const char *t = data;
      for (;;) {
        const char *e = memmem(t, (size_t)(end - t), "\r\n", 2);
        if (!e) return 0;
        if (e == t) {
          st->done = 1;
          break;
        }
        t = e + 2;
      }
      break;
    }
    if ((size_t)(end - data) < size + 2) return 0;
    if (data[size] != '\r' || data[size + 1] != '\n') return -1;
    buf_add(out, data, size);
    st->pos = (size_t)(data + size + 2 - base);
  }
  return 0;
}

/* Reads the answer: status, then the body per its framing. 0 ok, -1 cut off or malformed (with a message). */
static int read_answer(int fd, const char *url, response_t *res) {
  buf_t raw = {0};
  char chunk[65536];
  size_t head_len = 0;
  body_state_t st = {0};
  int have_head = 0, rc = -1, eof = 0;
  const char *why = "the broker closed the connection without an answer";
  buf_add(&raw, "", 0);
  for (;;) {
    if (!eof) {
      ssize_t n = recv(fd, chunk, sizeof chunk, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == ECONNRESET && !have_head && raw.len == 0) goto bad; /* reset before any answer */
        fprintf(stderr, "svc: lost the connection to the broker at %s: %s\n", url, strerror(errno));
        goto out;
      }
      if (n == 0) eof = 1;
      else buf_add(&raw, chunk, (size_t)n);
    }
    while (!have_head) {
      char *e = memmem(raw.data, raw.len, "\r\n\r\n", 4);
      if (!e) {
        if (raw.len > MAX_HEAD) {
          why = "the broker's answer has an oversized head";
          goto bad;
        }
        break;
      }
      *e = 0;
      int major, minor, status;
      if (sscanf(raw.data, "HTTP/%d.%d %3d", &major, &minor, &status) != 3 || status < 100 || status > 599) {
        why = "the broker's answer is not HTTP";
        goto bad;
      }
      head_len = (size_t)(e - raw.data) + 4;
      if (status < 200 && status != 101) {
        /* 100 Continue and other interim answers: drop them. */
        memmove(raw.data, raw.data + head_len, raw.len - head_len);
        raw.len -= head_len;
        raw.data[raw.len] = 0;
        continue;
      }
      res->status = status;
      size_t vl;
      const char *te = header(raw.data, "transfer-encoding", &vl);
      const char *cl = header(raw.data, "content-length", &vl);
      if (te && strcasestr(te, "chunked") && strcasestr(te, "chunked") < te + vl) {
        st.mode = BODY_CHUNKED;
        st.pos = head_len;
      } else if (cl) {
        char *after;
        errno = 0;
        unsigned long long n = strtoull(cl, &after, 10);
        if (errno || after == cl || (size_t)(after - cl) != vl) {
          why = "the broker's answer has a bad Content-Length";
          goto bad;
        }
        st.mode = BODY_LENGTH;
        st.length = (size_t)n;
      } else {
        st.mode = BODY_EOF;
      }
      if (status == 204 || status == 304) {
        st.mode = BODY_LENGTH;
        st.length = 0;
      }
      have_head = 1;
    }
    if (have_head) {
      if (st.mode == BODY_LENGTH && raw.len - head_len >= st.length) {
        buf_add(&res->body, raw.data + head_len, st.length);
        rc = 0;
        goto out;
      }
      if (st.mode == BODY_CHUNKED) {
        if (dechunk(&raw, &st, &res->body) != 0) {
          why = "the broker's chunked answer is malformed";
          goto bad;
        }
        if (st.done) {
          rc = 0;
          goto out;
        }
      }
      if (st.mode == BODY_EOF && eof) {
        buf_add(&res->body, raw.data + head_len, raw.len - head_len);
        rc = 0;
        goto out;
      }
    }
    if (eof) {
      if (have_head) why = "the broker's answer was cut off";
      goto bad;
    }
  }
bad:
  fprintf(stderr, "svc: %s (%s)\n", why, url);
out:
  buf_free(&raw);
  if (rc == 0) buf_add(&res->body, "", 0);
  return rc;
}

int http_call(const char *url, const char *token, const char *method, const char *path, const char *body, size_t body_len, response_t *res) {
  target_t t;
  memset(res, 0, sizeof *res);
  if (parse_url(url, &t) != 0) {
    fprintf(stderr, "svc: cannot reach the broker at %s: svc only takes http://<IPv4 address or localhost>:<port> addresses\n", url);
    return 1;
  }
  for (const char *c = token; *c; c++) {
    if ((unsigned char)*c < 0x21 || *c == 0x7f) {
      fputs("svc: SVC_TOKEN holds characters that cannot be sent in a header\n", stderr);
      return 1;
    }
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fprintf(stderr, "svc: cannot reach the broker at %s: %s\n", url, strerror(errno));
    return 1;
  }
  int rc;
  while ((rc = connect(fd, (struct sockaddr *)&t.addr, sizeof t.addr)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    fprintf(stderr, "svc: cannot reach the broker at %s: %s\n", url, strerror(errno));
    close(fd);
    return 1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  buf_t req = {0};
  char line[128];
  buf_str(&req, method);
  buf_str(&req, " ");
  buf_str(&req, t.prefix);
  buf_str(&req, path);
  buf_str(&req, " HTTP/1.1\r\nHost: ");
  buf_str(&req, t.host);
  buf_str(&req, "\r\nAuthorization: Bearer ");
  buf_str(&req, token);
  snprintf(line, sizeof line, "\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n", body_len);
  buf_str(&req, line);
  buf_str(&req, "Accept: application/json\r\nUser-Agent: svc\r\nConnection: close\r\n\r\n");
  if (body_len) buf_add(&req, body, body_len);
  /* A broker that answers early (a refused body) may close before reading it all: its answer still counts. */
  send_all(fd, req.data, req.len);
  buf_free(&req);
  rc = read_answer(fd, url, res);
  close(fd);
  if (rc != 0) {
    buf_free(&res->body);
    return 1;
  }
  return 0;
}
