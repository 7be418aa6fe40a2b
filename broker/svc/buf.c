/* A growable byte buffer and the stdin/file reading built on it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "svc.h"

void buf_add(buf_t *b, const void *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
      fputs("svc: out of memory\n", stderr);
      exit(1);
    }
    b->data = d;
    b->cap = cap;
  }
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void buf_str(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }

void buf_free(buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

const char *buf_text(const buf_t *b) { return b->data ? b->data : ""; }

int buf_read_fd(buf_t *b, int fd) {
  char chunk[65536];
  buf_add(b, "", 0);
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) buf_add(b, chunk, (size_t)n);
    else if (n == 0) return 0;
    else if (errno == EBADF) return 0; /* no stdin at all reads as empty */
    else if (errno != EINTR) return -1;
  }
}

void buf_trim_newlines(buf_t *b) {
  while (b->len > 0 && b->data[b->len - 1] == '\n') {
    b->len--;
    if (b->len > 0 && b->data[b->len - 1] == '\r') b->len--;
    b->data[b->len] = 0;
  }
}
