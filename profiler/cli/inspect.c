/* placeholder until the inspect subcommand lands */
#include <stdio.h>
#include "commands.h"
int mpprof_cmd_inspect(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fputs("mpprof: inspect: not built yet\n", stderr);
  return 2;
}
