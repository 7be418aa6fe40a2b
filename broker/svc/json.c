/* Just enough JSON: escaping strings for request bodies, and a validating reader for the broker's answers. */
#include <stdio.h>
#include <string.h>
#include "svc.h"

#define MAX_DEPTH 512

/* Control characters, quotes and backslashes are escaped; bytes >= 0x80 pass through, so UTF-8 stays UTF-8. */
void json_put_string(buf_t *b, const char *s, size_t n) {
  static const char hexd[] = "0123456789abcdef";
  buf_add(b, "\"", 1);
  size_t run = 0; /* start of the bytes that need no escape */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char u[6];
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c == '\b') esc = "\\b";
    else if (c == '\f') esc = "\\f";
    else if (c < 0x20) {
      memcpy(u, "\\u00", 4);
      u[4] = hexd[c >> 4];
      u[5] = hexd[c & 15];
    } else continue;
    buf_add(b, s + run, i - run);
    if (esc) buf_str(b, esc);
    else buf_add(b, u, 6);
    run = i + 1;
  }
  buf_add(b, s + run, n - run);
  buf_add(b, "\"", 1);
}

const char *json_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int read_u4(const char *p, const char *end, unsigned *out) {
  if (end - p < 4) return -1;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(p[i]);
    if (h < 0) return -1;
    v = v * 16 + (unsigned)h;
  }
  *out = v;
  return 0;
}

static const char *skip_string(const char *p, const char *end) {
  if (p >= end || *p != '"') return NULL;
  for (p++; p < end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') return p + 1;
    if (c < 0x20) return NULL;
    if (c != '\\') continue;
    if (++p >= end) return NULL;
    if (*p == 'u') {
      unsigned cp;
      if (read_u4(p + 1, end, &cp)) return NULL;
      p += 4;
    } else if (!strchr("\"\\/bfnrt", *p)) {
      return NULL;
    }
  }
  return NULL;
}

static const char *skip_digits(const char *p, const char *end) {
  const char *s = p;
  while (p < end && *p >= '0' && *p <= '9') p++;
  return p > s ? p : NULL;
}

static const char *skip_number(const char *p, const char *end) {
  if (p < end && *p == '-') p++;
  if (p < end && *p == '0') p++;
  else if (!(p = skip_digits(p, end))) return NULL;
  if (p < end && *p == '.' && !(p = skip_digits(p + 1, end))) return NULL;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (!(p = skip_digits(p, end))) return NULL;
  }
  return p;
}

static const char *skip_value(const char *p, const char *end, int depth) {
  p = json_ws(p, end);
  if (p >= end || depth > MAX_DEPTH) return NULL;
  switch (*p) {
    case '"':
      return skip_string(p, end);
    case '{':
    case '[': {
      char close = *p == '{' ? '}' : ']';
      p = json_ws(p + 1, end);
      if (p < end && *p == close) return p + 1;
      for (;;) {
        if (close == '}') {
          if (!(p = skip_string(json_ws(p, end), end))) return NULL;
          p = json_ws(p, end);
          if (p >= end || *p++ != ':') return NULL;
        }
        if (!(p = skip_value(p, end, depth + 1))) return NULL;
        p = json_ws(p, end);
        if (p < end && *p == ',') {
          p++;
          continue;
        }
        if (p < end && *p == close) return p + 1;
        return NULL;
      }
    }
    case 't':
      return (size_t)(end - p) >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
    case 'f':
      return (size_t)(end - p) >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
    case 'n':
      return (size_t)(end - p) >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
    default:
      return skip_number(p, end);
  }
}

const char *json_skip(const char *p, const char *end) { return p ? skip_value(p, end, 0) : NULL; }

static void put_utf8(buf_t *out, unsigned cp) {
  unsigned char b[4];
  size_t n;
  if (cp < 0x80) {
    b[0] = (unsigned char)cp;
    n = 1;
  } else if (cp < 0x800) {
    b[0] = (unsigned char)(0xC0 | (cp >> 6));
    b[1] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    b[0] = (unsigned char)(0xE0 | (cp >> 12));
    b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    b[2] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    b[0] = (unsigned char)(0xF0 | (cp >> 18));
    b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    b[3] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  buf_add(out, b, n);
}

int json_string(const char *p, const char *end, buf_t *out) {
  if (!p) return -1;
  p = json_ws(p, end);
  const char *stop = skip_string(p, end);
  if (!stop) return -1;
  stop--; /* the closing quote */
  buf_add(out, "", 0);
  for (p++; p < stop; p++) {
    const char *run = p;
    while (p < stop && *p != '\\') p++;
    buf_add(out, run, (size_t)(p - run));
    if (p >= stop) break;
    p++;
    switch (*p) {
      case 'n': buf_add(out, "\n", 1); break;
      case 't': buf_add(out, "\t", 1); break;
      case 'r': buf_add(out, "\r", 1); break;
      case 'b': buf_add(out, "\b", 1); break;
      case 'f': buf_add(out, "\f", 1); break;
      case 'u': {
        unsigned cp, lo;
        read_u4(p + 1, stop, &cp);
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          if (stop - p > 6 && p[1] == '\\' && p[2] == 'u' && read_u4(p + 3, stop, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          } else {
            cp = 0xFFFD; /* a lone surrogate has no UTF-8 form */
          }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          cp = 0xFFFD;
        }
        put_utf8(out, cp);
        break;
      }
      default: buf_add(out, p, 1); /* " \ / */
    }
  }
  return 0;
}

const char *json_member(const char *p, const char *end, const char *key) {
  if (!p) return NULL;
  p = json_ws(p, end);
  if (p >= end || *p != '{') return NULL;
  p = json_ws(p + 1, end);
  if (p < end && *p == '}') return NULL;
  buf_t name = {0};
  const char *found = NULL;
  while (!found) {
    name.len = 0;
    if (json_string(p, end, &name) != 0) break;
    p = json_ws(skip_string(json_ws(p, end), end), end);
    if (p >= end || *p++ != ':') break;
    p = json_ws(p, end);
    if (name.len == strlen(key) && !memcmp(name.data, key, name.len)) {
      found = skip_value(p, end, 1) ? p : NULL;
      break;
    }
    if (!(p = skip_value(p, end, 1))) break;
    p = json_ws(p, end);
    if (p >= end || *p++ != ',') break;
    p = json_ws(p, end);
  }
  buf_free(&name);
  return found;
}

const char *json_element(const char *p, const char *end, size_t index) {
  if (!p) return NULL;
  p = json_ws(p, end);
  if (p >= end || *p != '[') return NULL;
  p = json_ws(p + 1, end);
  if (p < end && *p == ']') return NULL;
  for (size_t i = 0;; i++) {
    const char *next = skip_value(p, end, 1);
    if (!next) return NULL;
    if (i == index) return json_ws(p, end);
    p = json_ws(next, end);
    if (p >= end || *p++ != ',') return NULL;
  }
}

int json_is(const char *p, const char *end, const char *literal) {
  if (!p) return 0;
  p = json_ws(p, end);
  size_t n = strlen(literal);
  if ((size_t)(end - p) < n || memcmp(p, literal, n) != 0 || skip_value(p, end, 0) != p + n) return 0;
  p = json_ws(p + n, end);
  return p == end || *p == ',' || *p == '}' || *p == ']';
}
