/* Just enough JSON reading for the broker's answers: find a top-level field, decode a string. */
#include <stdlib.h>
#include <string.h>
#include "svc.h"

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
  return p;
}

static const char *skip_string(const char *p) {
  if (*p != '"') return NULL;
  for (p++; *p; p++) {
    if (*p == '\\') {
      if (!*++p) return NULL;
    } else if (*p == '"') {
      return p + 1;
    }
  }
  return NULL;
}

static const char *skip_value(const char *p, int depth) {
  p = ws(p);
  if (depth > 200) return NULL;
  if (*p == '"') return skip_string(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        p = skip_string(ws(p));
        if (!p) return NULL;
        p = ws(p);
        if (*p++ != ':') return NULL;
      }
      p = skip_value(p, depth + 1);
      if (!p) return NULL;
      p = ws(p);
      if (*p == ',') { p++; continue; }
      if (*p == close) return p + 1;
      return NULL;
    }
  }
  while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') p++;
  return p;
}

const char *json_field(const char *json, const char *key) {
  const char *p = ws(json);
  if (*p != '{') return NULL;
  p = ws(p + 1);
  size_t klen = strlen(key);
  while (*p == '"') {
    const char *end = skip_string(p);
    if (!end) return NULL;
    int match = (size_t)(end - p - 2) == klen && strncmp(p + 1, key, klen) == 0;
    p = ws(end);
    if (*p++ != ':') return NULL;
    p = ws(p);
    if (match) return p;
    p = skip_value(p, 0);
    if (!p) return NULL;
    p = ws(p);
    if (*p == ',') p = ws(p + 1);
  }
  return NULL;
}

static int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static void put_utf8(buf_t *out, unsigned cp) {
  char b[4];
  if (cp < 0x80) { b[0] = (char)cp; buf_add(out, b, 1); }
  else if (cp < 0x800) { b[0] = (char)(0xC0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3F)); buf_add(out, b, 2); }
  else if (cp < 0x10000) { b[0] = (char)(0xE0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[2] = (char)(0x80 | (cp & 0x3F)); buf_add(out, b, 3); }
  else { b[0] = (char)(0xF0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); buf_add(out, b, 4); }
}

static int read_u4(const char *p, unsigned *cp) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hex(p[i]);
    if (h < 0) return -1;
    v = v * 16 + (unsigned)h;
  }
  *cp = v;
  return 0;
}

int json_string(const char *p, buf_t *out) {
  if (!p || *p != '"') return -1;
  buf_add(out, "", 0);
  for (p++; *p && *p != '"'; p++) {
    if (*p != '\\') { buf_add(out, p, 1); continue; }
    p++;
    switch (*p) {
      case 'n': buf_add(out, "\n", 1); break;
      case 't': buf_add(out, "\t", 1); break;
      case 'r': buf_add(out, "\r", 1); break;
      case 'b': buf_add(out, "\b", 1); break;
      case 'f': buf_add(out, "\f", 1); break;
      case 'u': {
        unsigned cp;
        if (read_u4(p + 1, &cp)) return -1;
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && p[1] == '\\' && p[2] == 'u') {
          unsigned lo;
          if (read_u4(p + 3, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          }
        }
        put_utf8(out, cp);
        break;
      }
      case 0: return -1;
      default: buf_add(out, p, 1);
    }
  }
  return *p == '"' ? 0 : -1;
}

int json_true(const char *p) { return p && strncmp(p, "true", 4) == 0; }
int json_is_null(const char *p) { return !p || strncmp(p, "null", 4) == 0; }
