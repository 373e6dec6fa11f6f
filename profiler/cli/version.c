/* placeholder until the version subcommand lands */
#include <stdio.h>
#include "commands.h"
int mpprof_cmd_version(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fputs("mpprof: version: not built yet\n", stderr);
  return 2;
}
