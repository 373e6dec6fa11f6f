/* placeholder until the run subcommand lands */
#include <stdio.h>
#include "commands.h"
int mpprof_cmd_run(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fputs("mpprof: run: not built yet\n", stderr);
  return 2;
}
