/* svc: the command a run's sandbox uses to reach the service (SPEC §4.6). Exit 0 ok, 1 the call failed, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "svc.h"

static const char *help_text =
    "svc: talk to the service from inside a run's sandbox\n"
    "\n"
    "  svc state get <key>                 print a value of the job's state (exit 1 when missing)\n"
    "  svc state set <key> [value|-]       set a value (stdin when - or omitted)\n"
    "  svc state list                      print every key and value as one JSON object\n"
    "  svc output set <key> [value|-]      set a run output (JSON text stays JSON)\n"
    "  svc step <name...>                  mark a step on the run's timeline\n"
    "  svc summary [text|-]                set the Markdown summary of a scripted run\n"
    "  svc fail [reason...]                record a failure and exit 1\n"
    "  svc llm [--model utility|agent] [--schema <file>] [--system <text>] [--max-tokens <n>] [prompt...|-]\n"
    "                                      one model call without tools\n"
    "  svc mcp tools [server]              list the MCP tools this job may use\n"
    "  svc mcp call <server> <tool> [json|-]  call an MCP tool\n"
    "  svc help                            this text\n";

static int usage(const char *msg) {
  if (msg) fprintf(stderr, "svc: %s\n", msg);
  fputs(help_text, stderr);
  return 2;
}

static void url_encode(buf_t *b, const char *s) {
  static const char *hexd = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~') {
      buf_add(b, (const char *)s, 1);
    } else {
      char e[3] = {'%', hexd[c >> 4], hexd[c & 15]};
      buf_add(b, e, 3);
    }
  }
}

/* The value argument, or stdin when it is "-" or missing; trailing newlines dropped from stdin. */
static int value_arg(int argc, char **argv, int at, buf_t *out) {
  if (at < argc && strcmp(argv[at], "-") != 0) {
    buf_str(out, argv[at]);
    return 0;
  }
  if (read_stdin(out) != 0) {
    fputs("svc: cannot read stdin\n", stderr);
    return -1;
  }
  return 0;
}

static void join_args(int argc, char **argv, int from, buf_t *out) {
  buf_add(out, "", 0);
  for (int i = from; i < argc; i++) {
    if (i > from) buf_add(out, " ", 1);
    buf_str(out, argv[i]);
  }
}

/* Calls the broker; a non-2xx answer prints its message. Returns 0 ok, 1 failed; sets *res for the caller. */
static int call(const char *method, const char *path, const char *body, response_t *res) {
  if (broker_call(method, path, body, res) != 0) return 1;
  if (res->status >= 200 && res->status < 300) return 0;
  buf_t msg = {0};
  const char *m = res->body.data ? json_field(res->body.data, "message") : NULL;
  if (m && json_string(m, &msg) == 0) fprintf(stderr, "svc: %s\n", msg.data);
  else fprintf(stderr, "svc: the broker answered %d\n", res->status);
  buf_free(&msg);
  return 1;
}

static int simple(const char *method, const char *path, buf_t *body) {
  response_t res = {0};
  int rc = call(method, path, body ? body->data : NULL, &res);
  buf_free(&res.body);
  return rc;
}

static int print_field(response_t *res, const char *field) {
  buf_t out = {0};
  const char *v = json_field(res->body.data ? res->body.data : "", field);
  if (json_string(v, &out) != 0) {
    fputs("svc: the broker's answer has no text to print\n", stderr);
    return 1;
  }
  fwrite(out.data, 1, out.len, stdout);
  if (out.len == 0 || out.data[out.len - 1] != '\n') fputc('\n', stdout);
  buf_free(&out);
  return 0;
}

static int cmd_state(int argc, char **argv) {
  if (argc < 1) return usage("state needs get, set or list");
  buf_t path = {0}, body = {0};
  response_t res = {0};
  int rc;
  if (strcmp(argv[0], "list") == 0) {
    if ((rc = call("GET", "/v1/state", NULL, &res)) == 0) printf("%s\n", res.body.data ? res.body.data : "{}");
  } else if (strcmp(argv[0], "get") == 0) {
    if (argc != 2) return usage("usage: svc state get <key>");
    buf_str(&path, "/v1/state/");
    url_encode(&path, argv[1]);
    if ((rc = call("GET", path.data, NULL, &res)) == 0) {
      if (!json_true(json_field(res.body.data, "found"))) rc = 1;
      else rc = print_field(&res, "value");
    }
  } else if (strcmp(argv[0], "set") == 0) {
    if (argc < 2 || argc > 3) return usage("usage: svc state set <key> [value|-]");
    buf_t value = {0};
    if (value_arg(argc, argv, 2, &value) != 0) return 1;
    buf_str(&path, "/v1/state/");
    url_encode(&path, argv[1]);
    buf_str(&body, "{\"value\":");
    buf_json_string(&body, value.data, value.len);
    buf_str(&body, "}");
    buf_free(&value);
    rc = call("PUT", path.data, body.data, &res);
  } else {
    return usage("state needs get, set or list");
  }
  buf_free(&path);
  buf_free(&body);
  buf_free(&res.body);
  return rc;
}

static int cmd_output(int argc, char **argv) {
  if (argc < 2 || argc > 3 || strcmp(argv[0], "set") != 0) return usage("usage: svc output set <key> [value|-]");
  buf_t value = {0}, body = {0};
  if (value_arg(argc, argv, 2, &value) != 0) return 1;
  buf_str(&body, "{\"key\":");
  buf_json_string(&body, argv[1], strlen(argv[1]));
  buf_str(&body, ",\"text\":");
  buf_json_string(&body, value.data, value.len);
  buf_str(&body, "}");
  buf_free(&value);
  int rc = simple("POST", "/v1/output", &body);
  buf_free(&body);
  return rc;
}

static int cmd_text(const char *path, const char *field, int argc, char **argv, int from_stdin_allowed, const char *fallback) {
  buf_t text = {0}, body = {0};
  if (argc == 0 && fallback) buf_str(&text, fallback);
  else if (from_stdin_allowed && (argc == 0 || (argc == 1 && strcmp(argv[0], "-") == 0))) {
    if (read_stdin(&text) != 0) return 1;
  } else {
    join_args(argc, argv, 0, &text);
  }
  buf_str(&body, "{\"");
  buf_str(&body, field);
  buf_str(&body, "\":");
  buf_json_string(&body, text.data, text.len);
  buf_str(&body, "}");
  buf_free(&text);
  int rc = simple("POST", path, &body);
  buf_free(&body);
  return rc;
}

static int cmd_llm(int argc, char **argv) {
  const char *model = "utility", *schema_file = NULL, *system = NULL;
  long max_tokens = 4096;
  int first_pos = -1, flags_done = 0;
  buf_t prompt = {0};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!flags_done && strcmp(a, "--") == 0) { flags_done = 1; continue; }
    if (!flags_done && a[0] == '-' && a[1] == '-') {
      if (i + 1 >= argc) return usage("a flag of svc llm needs a value");
      const char *v = argv[++i];
      if (strcmp(a, "--model") == 0) model = strcmp(v, "agent") == 0 ? "agent" : "utility";
      else if (strcmp(a, "--schema") == 0) schema_file = v;
      else if (strcmp(a, "--system") == 0) system = v;
      else if (strcmp(a, "--max-tokens") == 0) {
        char *end;
        long n = strtol(v, &end, 10);
        max_tokens = (*end == 0 && n >= 1 && n <= 16000) ? n : 4096;
      } else return usage("unknown flag for svc llm");
      continue;
    }
    if (first_pos < 0) first_pos = i;
    if (prompt.len > 0 || prompt.data) buf_add(&prompt, " ", 1);
    buf_str(&prompt, a);
  }
  if (!prompt.data || (prompt.len == 1 && prompt.data[0] == '-')) {
    buf_free(&prompt);
    if (read_stdin(&prompt) != 0) return 1;
  }
  if (prompt.len == 0) return usage("svc llm needs a prompt (arguments or stdin)");
  buf_t schema = {0};
  if (schema_file) {
    FILE *f = fopen(schema_file, "rb");
    if (!f) {
      fprintf(stderr, "svc: cannot read the schema file %s\n", schema_file);
      return 2;
    }
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&schema, chunk, n);
    fclose(f);
    if (!schema.data) buf_add(&schema, "", 0);
  }
  buf_t body = {0};
  char num[32];
  buf_str(&body, "{\"model\":\"");
  buf_str(&body, model);
  buf_str(&body, "\",\"system\":");
  if (system) buf_json_string(&body, system, strlen(system));
  else buf_str(&body, "null");
  buf_str(&body, ",\"prompt\":");
  buf_json_string(&body, prompt.data, prompt.len);
  buf_str(&body, ",\"schemaText\":");
  if (schema_file) buf_json_string(&body, schema.data, schema.len);
  else buf_str(&body, "null");
  snprintf(num, sizeof num, ",\"maxTokens\":%ld}", max_tokens);
  buf_str(&body, num);
  response_t res = {0};
  int rc = 0;
  if (broker_call("POST", "/v1/llm", body.data, &res) != 0) rc = 1;
  else if (res.status >= 200 && res.status < 300) rc = print_field(&res, "output");
  else {
    /* A schema that is not JSON is the caller's mistake (usage); one that is not an object is a failed call. */
    const char *fields = json_field(res.body.data ? res.body.data : "", "fields");
    rc = fields && strstr(fields, "\"invalid_json\"") ? 2 : 1;
    buf_t msg = {0};
    if (json_string(json_field(res.body.data ? res.body.data : "", "message"), &msg) == 0) fprintf(stderr, "svc: %s\n", msg.data);
    buf_free(&msg);
  }
  buf_free(&body);
  buf_free(&prompt);
  buf_free(&schema);
  buf_free(&res.body);
  return rc;
}

static int cmd_mcp(int argc, char **argv) {
  if (argc >= 1 && strcmp(argv[0], "tools") == 0 && argc <= 2) {
    buf_t path = {0};
    buf_str(&path, "/v1/mcp/tools");
    if (argc == 2) {
      buf_str(&path, "?server=");
      url_encode(&path, argv[1]);
    }
    response_t res = {0};
    int rc = call("GET", path.data, NULL, &res);
    if (rc == 0) printf("%s\n", res.body.data ? res.body.data : "[]");
    buf_free(&path);
    buf_free(&res.body);
    return rc;
  }
  if (argc >= 3 && argc <= 4 && strcmp(argv[0], "call") == 0) {
    buf_t args = {0}, body = {0};
    if (argc == 3) buf_str(&args, "{}");
    else if (strcmp(argv[3], "-") == 0) {
      if (read_stdin(&args) != 0) return 1;
    } else buf_str(&args, argv[3]);
    buf_str(&body, "{\"server\":");
    buf_json_string(&body, argv[1], strlen(argv[1]));
    buf_str(&body, ",\"tool\":");
    buf_json_string(&body, argv[2], strlen(argv[2]));
    buf_str(&body, ",\"argumentsText\":");
    buf_json_string(&body, args.data, args.len);
    buf_str(&body, "}");
    response_t res = {0};
    int rc = call("POST", "/v1/mcp/call", body.data, &res);
    if (rc == 0) {
      rc = print_field(&res, "output");
      if (json_true(json_field(res.body.data, "isError"))) rc = 1;
    }
    buf_free(&args);
    buf_free(&body);
    buf_free(&res.body);
    return rc;
  }
  return usage("usage: svc mcp tools [server] | svc mcp call <server> <tool> [json|-]");
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(NULL);
  const char *cmd = argv[1];
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    fputs(help_text, stdout);
    return 0;
  }
  if (strcmp(cmd, "init") == 0) return svc_init(argc - 2, argv + 2);
  const char *url = getenv("SVC_BROKER_URL"), *token = getenv("SVC_TOKEN");
  int known = !strcmp(cmd, "state") || !strcmp(cmd, "output") || !strcmp(cmd, "step") || !strcmp(cmd, "summary") || !strcmp(cmd, "fail") || !strcmp(cmd, "llm") || !strcmp(cmd, "mcp");
  if (!known) return usage("unknown command");
  if (!url || !*url || !token || !*token) {
    fputs("svc: SVC_BROKER_URL and SVC_TOKEN are not set: svc commands only work inside a run's sandbox\n", stderr);
    return 1;
  }
  int n = argc - 2;
  char **a = argv + 2;
  if (!strcmp(cmd, "state")) return cmd_state(n, a);
  if (!strcmp(cmd, "output")) return cmd_output(n, a);
  if (!strcmp(cmd, "step")) return n == 0 ? usage("svc step needs a name") : cmd_text("/v1/step", "name", n, a, 0, NULL);
  if (!strcmp(cmd, "summary")) return cmd_text("/v1/summary", "summary", n, a, 1, NULL);
  if (!strcmp(cmd, "fail")) {
    int rc = cmd_text("/v1/fail", "reason", n, a, 0, "the script reported a failure");
    (void)rc;
    return 1;
  }
  if (!strcmp(cmd, "llm")) return cmd_llm(n, a);
  return cmd_mcp(n, a);
}
