/* The in-sandbox svc command (docs/sandbox.md): shared declarations. */
#ifndef SVC_H
#define SVC_H
#include <stddef.h>

/* buf.c: a growable byte buffer, always NUL-terminated once anything was added. */
typedef struct {
  char *data;
  size_t len, cap;
} buf_t;

void buf_add(buf_t *b, const void *s, size_t n);
void buf_str(buf_t *b, const char *s);
void buf_free(buf_t *b);
/* The buffer's text; "" when nothing was added. */
const char *buf_text(const buf_t *b);
/* Reads a whole file descriptor; -1 on a read error. */
int buf_read_fd(buf_t *b, int fd);
/* Drops trailing newlines, "\n" and "\r\n". */
void buf_trim_newlines(buf_t *b);

/* json.c: writing strings, and reading values in a span [p, end). Readers return NULL when the text is not JSON. */
void json_put_string(buf_t *b, const char *s, size_t n);
const char *json_ws(const char *p, const char *end);
/* The end of the value starting at p (after white space). */
const char *json_skip(const char *p, const char *end);
/* The value of `key` when p starts an object, else NULL. */
const char *json_member(const char *p, const char *end, const char *key);
/* Element `index` when p starts an array, else NULL. */
const char *json_element(const char *p, const char *end, size_t index);
/* Decodes the string at p into out; -1 when p is not a string. */
int json_string(const char *p, const char *end, buf_t *out);
/* 1 when the value at p is exactly the literal (true, false, null). */
int json_is(const char *p, const char *end, const char *literal);

/* http.c: one HTTP/1.1 request to the broker. */
typedef struct {
  int status;
  buf_t body;
} response_t;

/* Returns 0 when an answer came back (any status), or 1 after printing why there is none. */
int http_call(const char *url, const char *token, const char *method, const char *path, const char *body, size_t body_len, response_t *res);

/* commands.c */
int svc_command(int argc, char **argv);
extern const char svc_help_text[];

/* init.c and forward.c: the sandbox's first process. */
int svc_init(int argc, char **argv);

/* Every epoll registration of init points at one of these. */
typedef struct handler handler_t;
struct handler {
  void (*on_event)(handler_t *self, unsigned events);
};

/* Listens on 127.0.0.1:port and relays each connection to the Unix socket at path. 0 when listening, -1 when not
   (a note is printed on stderr). */
int forward_start(int epfd, const char *path, int port);
/* Frees the connections closed during the last batch of events. */
void forward_collect(void);
#endif
