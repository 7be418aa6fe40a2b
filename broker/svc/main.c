/* svc: the command a run's sandbox uses to reach the service (docs/sandbox.md), and the sandbox's first process. */
#include <stdio.h>
#include <string.h>
#include "svc.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(svc_help_text, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    fputs(svc_help_text, stdout);
    return fflush(stdout) == 0 ? 0 : 1;
  }
  if (!strcmp(cmd, "init")) return svc_init(argc - 2, argv + 2);
  return svc_command(argc - 1, argv + 1);
}
