/* A small HTTP/1.1 client for the broker: numeric IPv4 or localhost only (no DNS in a static binary). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "svc.h"

static int parse_url(const char *url, struct sockaddr_in *addr, char *host, size_t hostlen, char *prefix, size_t prefixlen) {
  if (strncmp(url, "http://", 7) != 0) return -1;
  const char *h = url + 7;
  const char *colon = strchr(h, ':');
  const char *slash = strchr(h, '/');
  if (!colon || (slash && colon > slash)) return -1;
  size_t n = (size_t)(colon - h);
  if (n == 0 || n >= hostlen) return -1;
  memcpy(host, h, n);
  host[n] = 0;
  int port = atoi(colon + 1);
  if (port <= 0 || port > 65535) return -1;
  snprintf(prefix, prefixlen, "%s", slash ? slash : "");
  size_t pl = strlen(prefix);
  if (pl > 0 && prefix[pl - 1] == '/') prefix[pl - 1] = 0;
  memset(addr, 0, sizeof *addr);
  addr->sin_family = AF_INET;
  addr->sin_port = htons((unsigned short)port);
  const char *ip = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
  return inet_pton(AF_INET, ip, &addr->sin_addr) == 1 ? 0 : -1;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int dechunk(const char *p, size_t n, buf_t *out) {
  const char *end = p + n;
  buf_add(out, "", 0);
  for (;;) {
    char *after;
    unsigned long size = strtoul(p, &after, 16);
    const char *line = strstr(after, "\r\n");
    if (!line || line >= end) return -1;
    p = line + 2;
    if (size == 0) return 0;
    if (p + size > end) return -1;
    buf_add(out, p, size);
    p += size + 2;
    if (p > end) return -1;
  }
}

int broker_call(const char *method, const char *path, const char *body, response_t *res) {
  const char *url = getenv("SVC_BROKER_URL");
  const char *token = getenv("SVC_TOKEN");
  struct sockaddr_in addr;
  char host[256], prefix[256];
  if (parse_url(url, &addr, host, sizeof host, prefix, sizeof prefix) != 0) {
    fprintf(stderr, "svc: SVC_BROKER_URL is not an address svc can use (http://<IPv4 or localhost>:<port>): %s\n", url);
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    fprintf(stderr, "svc: cannot reach the broker at %s: %s\n", url, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  buf_t req = {0};
  char line[1024];
  snprintf(line, sizeof line, "%s %s%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer ", method, prefix, path, host);
  buf_str(&req, line);
  buf_str(&req, token);
  snprintf(line, sizeof line, "\r\nUser-Agent: svc\r\nAccept: application/json\r\nConnection: close\r\n");
  buf_str(&req, line);
  if (body) {
    snprintf(line, sizeof line, "Content-Type: application/json\r\nContent-Length: %zu\r\n", strlen(body));
    buf_str(&req, line);
  }
  buf_str(&req, "\r\n");
  if (body) buf_str(&req, body);
  int failed = write_all(fd, req.data, req.len);
  buf_free(&req);
  buf_t raw = {0};
  char chunk[65536];
  ssize_t n;
  while (!failed && (n = read(fd, chunk, sizeof chunk)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      failed = 1;
      break;
    }
    buf_add(&raw, chunk, (size_t)n);
  }
  close(fd);
  char *head_end = raw.data ? strstr(raw.data, "\r\n\r\n") : NULL;
  if (failed || !head_end || sscanf(raw.data, "HTTP/1.%*d %d", &res->status) != 1) {
    fprintf(stderr, "svc: the broker at %s gave no valid answer\n", url);
    buf_free(&raw);
    return -1;
  }
  *head_end = 0;
  const char *bodyp = head_end + 4;
  size_t bodylen = raw.len - (size_t)(bodyp - raw.data);
  int chunked = 0;
  for (char *h = strstr(raw.data, "\r\n"); h; h = strstr(h + 2, "\r\n")) {
    if (strncasecmp(h + 2, "transfer-encoding:", 18) == 0 && strstr(h + 20, "chunked")) chunked = 1;
  }
  memset(&res->body, 0, sizeof res->body);
  if (chunked ? dechunk(bodyp, bodylen, &res->body) : (buf_add(&res->body, bodyp, bodylen), 0)) {
    fprintf(stderr, "svc: the broker's answer was cut off\n");
    buf_free(&raw);
    return -1;
  }
  buf_free(&raw);
  return 0;
}
