/* The in-sandbox svc command: shared declarations. */
#ifndef SVC_H
#define SVC_H
#include <stddef.h>

typedef struct {
  char *data;
  size_t len, cap;
} buf_t;

void buf_add(buf_t *b, const char *s, size_t n);
void buf_str(buf_t *b, const char *s);
void buf_json_string(buf_t *b, const char *s, size_t n);
void buf_free(buf_t *b);

/* JSON reading: returns a pointer to the value of `key` in the top-level object, or NULL. */
const char *json_field(const char *json, const char *key);
/* Decodes a JSON string value at p into out (allocated); returns 0 on success. */
int json_string(const char *p, buf_t *out);
int json_true(const char *p);
int json_is_null(const char *p);

typedef struct {
  int status;
  buf_t body;
} response_t;

/* One request to $SVC_BROKER_URL; returns 0 when an answer came back, -1 with a message printed otherwise. */
int broker_call(const char *method, const char *path, const char *body, response_t *res);

int svc_init(int argc, char **argv);
int read_stdin(buf_t *out);
#endif
