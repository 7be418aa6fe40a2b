#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "svc.h"

void buf_add(buf_t *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) { fputs("svc: out of memory\n", stderr); exit(1); }
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void buf_str(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }

void buf_free(buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* Writes s as a JSON string literal; bytes >= 0x80 pass through (UTF-8 stays UTF-8). */
void buf_json_string(buf_t *b, const char *s, size_t n) {
  buf_add(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    switch (c) {
      case '"': buf_add(b, "\\\"", 2); break;
      case '\\': buf_add(b, "\\\\", 2); break;
      case '\n': buf_add(b, "\\n", 2); break;
      case '\r': buf_add(b, "\\r", 2); break;
      case '\t': buf_add(b, "\\t", 2); break;
      default:
        if (c < 0x20) {
          snprintf(esc, sizeof esc, "\\u%04x", c);
          buf_add(b, esc, 6);
        } else {
          buf_add(b, (const char *)&s[i], 1);
        }
    }
  }
  buf_add(b, "\"", 1);
}

/* Reads all of stdin and drops trailing newlines (\n and \r\n). */
int read_stdin(buf_t *out) {
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) buf_add(out, chunk, n);
  if (ferror(stdin)) return -1;
  if (!out->data) buf_add(out, "", 0);
  while (out->len > 0 && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == '\r')) out->data[--out->len] = 0;
  return 0;
}
