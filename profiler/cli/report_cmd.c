/* placeholder until the report subcommand lands */
#include <stdio.h>
#include "commands.h"
int mpprof_cmd_report(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fputs("mpprof: report: not built yet\n", stderr);
  return 2;
}
int mpprof_cmd_merge(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fputs("mpprof: merge: not built yet\n", stderr);
  return 2;
}
