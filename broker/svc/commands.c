/*
 * The client commands (docs/sandbox.md): each one is a single request to $SVC_BROKER_URL with the run's
 * token. Exit codes: 0 ok, 1 the call failed (a missing state key and `svc fail` too), 2 usage error.
 * Order of checks: arguments (2), then the environment (1), then stdin, then the call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "svc.h"

#define DEFAULT_FAIL_REASON "the script reported a failure"

const char svc_help_text[] =
    "svc: the run's link to the service, from inside its sandbox\n"
    "\n"
    "  svc state get <key>                       print a value of the job's state (exit 1 when missing)\n"
    "  svc state set <key> [value|-]             set a state value (stdin when - or omitted)\n"
    "  svc state list                            print every key and value as one JSON object\n"
    "  svc output set <key> [value|-]            set a run output (text that parses as JSON stays JSON)\n"
    "  svc step <name...>                        mark a step on the run's timeline\n"
    "  svc summary [text|-]                      set the Markdown summary of a scripted run\n"
    "  svc fail [reason...]                      record that the run failed, and exit 1\n"
    "  svc llm [--model utility|agent] [--schema <file>] [--system <text>] [--max-tokens <n>] [prompt...|-]\n"
    "                                            one model call without tools; prints its answer\n"
    "  svc mcp tools [server]                    list the MCP tools this job may use, as JSON\n"
    "  svc mcp call <server> <tool> [json|-]     call an MCP tool (arguments {} when omitted)\n"
    "  svc help                                  this list\n"
    "  svc init [--ttl <seconds>] [-- cmd...]    the sandbox's first process (started by the service)\n"
    "\n"
    "Exit codes: 0 ok, 1 the call failed, 2 usage error. [value|-] reads stdin when - is given or the value is\n"
    "omitted (trailing newlines dropped). svc needs SVC_BROKER_URL and SVC_TOKEN, which a run's sandbox sets.\n";

static int usage(const char *line) {
  fprintf(stderr, "svc: usage: %s\n", line);
  return 2;
}

static const char *broker_url, *broker_token;

/* 0 when the sandbox's variables are there, else 1 with the message docs/sandbox.md gives. */
static int check_env(void) {
  broker_url = getenv("SVC_BROKER_URL");
  broker_token = getenv("SVC_TOKEN");
  if (broker_url && *broker_url && broker_token && *broker_token) return 0;
  fputs("svc: SVC_BROKER_URL and SVC_TOKEN are not set: svc commands only work inside a run's sandbox\n", stderr);
  return 1;
}

static int read_stdin(buf_t *out) {
  if (buf_read_fd(out, 0) != 0) {
    fprintf(stderr, "svc: cannot read stdin: %s\n", strerror(errno));
    return 1;
  }
  buf_trim_newlines(out);
  return 0;
}

static void join(buf_t *out, int argc, char **argv) {
  buf_add(out, "", 0);
  for (int i = 0; i < argc; i++) {
    if (i) buf_add(out, " ", 1);
    buf_str(out, argv[i]);
  }
}

static void url_encode(buf_t *b, const char *s) {
  static const char hexd[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("-_.~", c)) {
      buf_add(b, s, 1);
    } else {
      char e[3] = {'%', hexd[c >> 4], hexd[c & 15]};
      buf_add(b, e, 3);
    }
  }
}

static int emit(const char *s, size_t n, int newline) {
  if (n) fwrite(s, 1, n, stdout);
  if (newline) fputc('\n', stdout);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "svc: cannot write the answer: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}

/* Prints the message of a non-2xx answer. */
static void report(const response_t *res) {
  const char *end = res->body.data + res->body.len;
  buf_t msg = {0};
  if (json_string(json_member(res->body.data, end, "message"), end, &msg) == 0 && msg.len > 0)
    fprintf(stderr, "svc: %s\n", msg.data);
  else
    fprintf(stderr, "svc: the broker answered HTTP %d\n", res->status);
  buf_free(&msg);
}

/* One request. 0 with a 2xx answer in *res; 1 otherwise (message printed; res->status set when an answer came). */
static int call(const char *method, const char *path, const buf_t *body, response_t *res) {
  if (http_call(broker_url, broker_token, method, path, body ? buf_text(body) : "", body ? body->len : 0, res) != 0) return 1;
  if (res->status >= 200 && res->status < 300) return 0;
  report(res);
  return 1;
}

/* A request whose answer is not printed. */
static int call_quiet(const char *method, const char *path, buf_t *body) {
  response_t res;
  int rc = call(method, path, body, &res);
  buf_free(&res.body);
  buf_free(body);
  return rc;
}

/* Prints a string member of the answer (or, when it is not a string, its JSON text). */
static int print_member(const response_t *res, const char *key, const char *fallback_key, int newline_mode) {
  const char *end = res->body.data + res->body.len;
  const char *v = json_member(res->body.data, end, key);
  if (!v && fallback_key) v = json_member(res->body.data, end, fallback_key);
  if (!v) {
    fprintf(stderr, "svc: the broker's answer has no %s\n", key);
    return 1;
  }
  buf_t text = {0};
  if (json_string(v, end, &text) != 0) buf_add(&text, v, (size_t)(json_skip(v, end) - v));
  /* newline_mode 1: always add one; 2: only when the text does not end with one (and is not empty). */
  int nl = newline_mode == 1 || (text.len > 0 && text.data[text.len - 1] != '\n');
  int rc = emit(buf_text(&text), text.len, nl);
  buf_free(&text);
  return rc;
}

static int cmd_state(int argc, char **argv) {
  const char *sub = argc > 0 ? argv[0] : "";
  buf_t path = {0};
  response_t res;
  int rc;
  if (!strcmp(sub, "list")) {
    if (argc != 1) return usage("svc state list");
    if (check_env()) return 1;
    if ((rc = call("GET", "/v1/state", NULL, &res)) == 0) rc = emit(res.body.data, res.body.len, 1);
    buf_free(&res.body);
    return rc;
  }
  if (!strcmp(sub, "get")) {
    if (argc != 2) return usage("svc state get <key>");
    if (check_env()) return 1;
    buf_str(&path, "/v1/state/");
    url_encode(&path, argv[1]);
    if ((rc = call("GET", path.data, NULL, &res)) == 0) {
      const char *end = res.body.data + res.body.len;
      const char *found = json_member(res.body.data, end, "found");
      const char *value = json_member(res.body.data, end, "value");
      if ((found && !json_is(found, end, "true")) || !value || json_is(value, end, "null")) rc = 1; /* missing: silent */
      else rc = print_member(&res, "value", NULL, 1);
    }
    buf_free(&path);
    buf_free(&res.body);
    return rc;
  }
  if (!strcmp(sub, "set")) {
    if (argc < 2 || argc > 3) return usage("svc state set <key> [value|-]");
    if (check_env()) return 1;
    buf_t value = {0}, body = {0};
    if (argc == 3 && strcmp(argv[2], "-") != 0) buf_str(&value, argv[2]);
    else if (read_stdin(&value)) return 1;
    buf_str(&path, "/v1/state/");
    url_encode(&path, argv[1]);
    buf_str(&body, "{\"value\":");
    json_put_string(&body, buf_text(&value), value.len);
    buf_str(&body, "}");
    buf_free(&value);
    rc = call_quiet("PUT", path.data, &body);
    buf_free(&path);
    return rc;
  }
  return usage("svc state get <key> | svc state set <key> [value|-] | svc state list");
}

static int cmd_output(int argc, char **argv) {
  if (argc < 2 || argc > 3 || strcmp(argv[0], "set") != 0) return usage("svc output set <key> [value|-]");
  if (check_env()) return 1;
  buf_t value = {0}, body = {0};
  if (argc == 3 && strcmp(argv[2], "-") != 0) buf_str(&value, argv[2]);
  else if (read_stdin(&value)) return 1;
  buf_str(&body, "{\"key\":");
  json_put_string(&body, argv[1], strlen(argv[1]));
  buf_str(&body, ",\"text\":");
  json_put_string(&body, buf_text(&value), value.len);
  buf_str(&body, "}");
  buf_free(&value);
  return call_quiet("POST", "/v1/output", &body);
}

/* POST {"<field>": text} where text is the joined arguments, or stdin when allowed and none or "-" is given. */
static int post_text(const char *path, const char *field, buf_t *text) {
  buf_t body = {0};
  buf_str(&body, "{\"");
  buf_str(&body, field);
  buf_str(&body, "\":");
  json_put_string(&body, buf_text(text), text->len);
  buf_str(&body, "}");
  buf_free(text);
  return call_quiet("POST", path, &body);
}

static int cmd_step(int argc, char **argv) {
  if (argc < 1) return usage("svc step <name...>");
  if (check_env()) return 1;
  buf_t text = {0};
  join(&text, argc, argv);
  return post_text("/v1/step", "name", &text);
}

static int cmd_summary(int argc, char **argv) {
  if (check_env()) return 1;
  buf_t text = {0};
  if (argc == 0 || (argc == 1 && !strcmp(argv[0], "-"))) {
    if (read_stdin(&text)) return 1;
  } else {
    join(&text, argc, argv);
  }
  return post_text("/v1/summary", "summary", &text);
}

static int cmd_fail(int argc, char **argv) {
  if (check_env()) return 1;
  buf_t text = {0};
  join(&text, argc, argv);
  if (text.len == 0) buf_str(&text, DEFAULT_FAIL_REASON);
  post_text("/v1/fail", "reason", &text);
  return 1; /* the run failed either way */
}

static int only_space(const buf_t *b) {
  for (size_t i = 0; i < b->len; i++)
    if (!strchr(" \t\r\n", b->data[i])) return 0;
  return 1;
}

static const char llm_usage[] = "svc llm [--model utility|agent] [--schema <file>] [--system <text>] [--max-tokens <n>] [prompt...|-]";

static long max_tokens_of(const char *v) {
  long n = 0;
  if (!*v || strlen(v) > 6) return 4096;
  for (const char *c = v; *c; c++) {
    if (*c < '0' || *c > '9') return 4096;
    n = n * 10 + (*c - '0');
  }
  return n >= 1 && n <= 16000 ? n : 4096;
}

static int cmd_llm(int argc, char **argv) {
  const char *model = "utility", *schema_file = NULL, *system = NULL;
  long max_tokens = 4096;
  char **pos = calloc((size_t)argc + 1, sizeof *pos);
  int npos = 0, flags_done = 0;
  if (!pos) return 1;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (flags_done || a[0] != '-' || a[1] != '-') {
      pos[npos++] = argv[i];
      continue;
    }
    if (!a[2]) {
      flags_done = 1;
      continue;
    }
    const char *eq = strchr(a, '=');
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    const char *v;
    if (eq) v = eq + 1;
    else if (i + 1 < argc) v = argv[++i];
    else {
      free(pos);
      fprintf(stderr, "svc: %s needs a value\n", a);
      return usage(llm_usage);
    }
    if (nl == 7 && !strncmp(a, "--model", nl)) model = strcmp(v, "agent") == 0 ? "agent" : "utility";
    else if (nl == 8 && !strncmp(a, "--schema", nl)) schema_file = v;
    else if (nl == 8 && !strncmp(a, "--system", nl)) system = v;
    else if (nl == 12 && !strncmp(a, "--max-tokens", nl)) max_tokens = max_tokens_of(v);
    else {
      free(pos);
      fprintf(stderr, "svc: unknown flag %.*s\n", (int)nl, a);
      return usage(llm_usage);
    }
  }
  int from_stdin = npos == 0 || (npos == 1 && !strcmp(pos[0], "-"));
  buf_t prompt = {0}, schema = {0}, body = {0};
  if (!from_stdin) join(&prompt, npos, pos);
  free(pos);
  if (!from_stdin && only_space(&prompt)) {
    buf_free(&prompt);
    fputs("svc: svc llm needs a prompt (arguments, or stdin)\n", stderr);
    return usage(llm_usage);
  }
  if (schema_file) {
    int fd = open(schema_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || buf_read_fd(&schema, fd) != 0) {
      fprintf(stderr, "svc: cannot read the schema file %s: %s\n", schema_file, strerror(errno));
      if (fd >= 0) close(fd);
      buf_free(&prompt);
      buf_free(&schema);
      return 2;
    }
    close(fd);
  }
  if (check_env()) return 1;
  if (from_stdin) {
    if (read_stdin(&prompt)) return 1;
    if (only_space(&prompt)) {
      fputs("svc: svc llm needs a prompt (arguments, or stdin)\n", stderr);
      return usage(llm_usage);
    }
  }
  char num[48];
  buf_str(&body, "{\"model\":\"");
  buf_str(&body, model);
  buf_str(&body, "\",\"system\":");
  if (system) json_put_string(&body, system, strlen(system));
  else buf_str(&body, "null");
  buf_str(&body, ",\"prompt\":");
  json_put_string(&body, buf_text(&prompt), prompt.len);
  buf_str(&body, ",\"schemaText\":");
  if (schema_file) json_put_string(&body, buf_text(&schema), schema.len);
  else buf_str(&body, "null");
  snprintf(num, sizeof num, ",\"maxTokens\":%ld}", max_tokens);
  buf_str(&body, num);
  buf_free(&prompt);
  buf_free(&schema);
  response_t res;
  int rc = call("POST", "/v1/llm", &body, &res);
  buf_free(&body);
  if (rc == 0) {
    rc = print_member(&res, "output", "text", 1);
  } else if (res.status == 400) {
    /* A schema file that is not JSON is the caller's mistake (usage, 2); one that is not an object fails (1). */
    const char *end = res.body.data + res.body.len;
    buf_t code = {0};
    if (json_string(json_member(json_element(json_member(res.body.data, end, "fields"), end, 0), end, "code"), end, &code) == 0 && !strcmp(code.data, "invalid_json")) rc = 2;
    buf_free(&code);
  }
  buf_free(&res.body);
  return rc;
}

static int cmd_mcp(int argc, char **argv) {
  const char *sub = argc > 0 ? argv[0] : "";
  response_t res;
  int rc;
  if (!strcmp(sub, "tools")) {
    if (argc > 2) return usage("svc mcp tools [server]");
    if (check_env()) return 1;
    buf_t path = {0};
    buf_str(&path, "/v1/mcp/tools");
    if (argc == 2) {
      buf_str(&path, "?server=");
      url_encode(&path, argv[1]);
    }
    if ((rc = call("GET", path.data, NULL, &res)) == 0) rc = emit(res.body.data, res.body.len, 1);
    buf_free(&path);
    buf_free(&res.body);
    return rc;
  }
  if (!strcmp(sub, "call")) {
    if (argc < 3 || argc > 4) return usage("svc mcp call <server> <tool> [json|-]");
    if (check_env()) return 1;
    buf_t args = {0}, body = {0};
    if (argc == 3) buf_str(&args, "{}");
    else if (!strcmp(argv[3], "-")) {
      if (read_stdin(&args)) return 1;
    } else buf_str(&args, argv[3]);
    buf_str(&body, "{\"server\":");
    json_put_string(&body, argv[1], strlen(argv[1]));
    buf_str(&body, ",\"tool\":");
    json_put_string(&body, argv[2], strlen(argv[2]));
    buf_str(&body, ",\"argumentsText\":");
    json_put_string(&body, buf_text(&args), args.len);
    buf_str(&body, "}");
    buf_free(&args);
    rc = call("POST", "/v1/mcp/call", &body, &res);
    buf_free(&body);
    if (rc == 0) {
      const char *end = res.body.data + res.body.len;
      rc = print_member(&res, "output", "content", 2);
      if (json_is(json_member(res.body.data, end, "isError"), end, "true")) rc = 1;
    }
    buf_free(&res.body);
    return rc;
  }
  return usage("svc mcp tools [server] | svc mcp call <server> <tool> [json|-]");
}

int svc_command(int argc, char **argv) {
  static const struct {
    const char *name;
    int (*run)(int, char **);
  } table[] = {
      {"state", cmd_state}, {"output", cmd_output}, {"step", cmd_step}, {"summary", cmd_summary},
      {"fail", cmd_fail},   {"llm", cmd_llm},       {"mcp", cmd_mcp},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(argv[0], table[i].name)) return table[i].run(argc - 1, argv + 1);
  fprintf(stderr, "svc: unknown command %s\n\n", argv[0]);
  fputs(svc_help_text, stderr);
  return 2;
}
