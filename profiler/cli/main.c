/* mpprof: the command line. Dispatches to a subcommand; a first argument that
 * is not a subcommand or an option is a program to run under the profiler. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "profiler/settings.h"

static void usage(FILE *out) {
  fputs(
      "usage: mpprof [run] [options] [--] PROGRAM ARGS...   profile a program\n"
      "       mpprof report [--shadow-max-rel X] OUT_DIR    rebuild the report from OUT_DIR/raw\n"
      "       mpprof merge DIR... -o OUT_DIR                merge runs profiled separately\n"
      "       mpprof diff A B [-o OUT_DIR]                  compare two runs layer by layer\n"
      "       mpprof inspect [--json] [--dtype D --shape S] FILE...\n"
      "                                                     numerics of saved tensors\n"
      "       mpprof help [SUBCOMMAND]                      this text, or a subcommand's options\n"
      "       mpprof help env                               the MPPROF_* variables and their "
      "values\n"
      "       mpprof --version | --help\n",
      out);
}

/* `mpprof help env`: every MPPROF_* variable mpprof reads, from the rows
 * the library and the launcher check values with (profiler/settings.c). */
static void env_help(void) {
  size_t n;
  const mpp_setting *rows = mpp_settings(&n);
  puts("MPPROF_* variables (meanings: README, Environment variables). `mpprof run` refuses a\n"
       "value its check refuses, unless the option that sets the variable is given.");
  for (size_t i = 0; i < n; i++) {
    char want[96];
    mpp_setting_want(&rows[i], want, sizeof want);
    printf("  %-24s %s; read by %s", rows[i].name, want, rows[i].reader);
    if (rows[i].kind == MPP_SK_UINT || rows[i].kind == MPP_SK_SECONDS)
      printf("; default %llu", (unsigned long long)rows[i].dflt);
    else if (rows[i].kind == MPP_SK_SAMPLE)
      printf("; default auto");
    putchar('\n');
  }
}

int mpprof_check_stdout(const char *cmd, int err) {
  errno = 0;
  if (fflush(stdout) != 0 && !err) err = errno ? errno : EIO;
  if (!err && !ferror(stdout)) return 0;
  mpprof_fprint_term(stderr, "mpprof: %s: standard output: write failed: %s\n", cmd,
                     strerror(err ? err : EIO));
  return 1;
}

mpprof_arg_kind mpprof_arg_kind_of(const char *a, bool *ended) {
  if (*ended || a[0] != '-' || !a[1]) return MPPROF_ARG_OPERAND;
  if (strcmp(a, "--")) return MPPROF_ARG_OPTION;
  *ended = true;
  return MPPROF_ARG_END;
}

int mpprof_out_option(const char *cmd, int argc, char **argv, int *i, const char **out) {
  const char *a = argv[*i], *v;
  const char *name = a[1] == '-' ? "--output" : "-o";
  if (!strncmp(a, "--output", 8) && (a[8] == '=' || !a[8]))
    v = a[8] == '=' ? a + 9 : *i + 1 < argc ? argv[++*i] : NULL;
  else if (!strncmp(a, "-o", 2))
    v = a[2] ? a + 2 : *i + 1 < argc ? argv[++*i] : NULL;
  else
    return 0;
  if (!v) {
    mpprof_fprint_term(stderr, "mpprof: %s: no OUT_DIR after '%s' (see 'mpprof help %s')\n", cmd,
                       name, cmd);
    return -1;
  }
  if (!*v) {
    fprintf(stderr, "mpprof: %s: %s needs a directory name, not ''\n", cmd, name);
    return -1;
  }
  *out = v;
  return 1;
}

/* The command of argv run, its name in *ret_cmd; its exit status. */
static int dispatch(int argc, char **argv, const char **ret_cmd) {
  static const struct {
    const char *name;
    int (*fn)(int, char **);
  } cmds[] = {
      {"run", mpprof_cmd_run},   {"report", mpprof_cmd_report},   {"merge", mpprof_cmd_merge},
      {"diff", mpprof_cmd_diff}, {"inspect", mpprof_cmd_inspect}, {"version", mpprof_cmd_version},
  };
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "help")) {
    *ret_cmd = "help";
    if (argc < 3) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[2], "env")) {
      env_help();
      return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
      if (!strcmp(argv[2], cmds[i].name)) {
        char *hargv[] = {argv[2], "--help", NULL};
        return cmds[i].fn(2, hargv);
      }
    mpprof_fprint_term(stderr, "mpprof: help: no subcommand '%s' (see 'mpprof help')\n", argv[2]);
    return 2;
  }
  if (!strcmp(argv[1], "--version")) {
    *ret_cmd = "version";
    return mpprof_cmd_version(argc - 1, argv + 1);
  }
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (!strcmp(argv[1], cmds[i].name)) {
      *ret_cmd = cmds[i].name;
      return cmds[i].fn(argc - 1, argv + 1);
    }
  /* `mpprof [options] PROGRAM ...` means run: pass everything through. */
  argv[0] = "run";
  *ret_cmd = "run";
  return mpprof_cmd_run(argc, argv);
}

/* A command that printed on standard output (report's and merge's summary,
 * diff's, help) and exits 0 did write all of it: one cut short by a full
 * disk or a closed descriptor fails the command. A command that failed
 * already said why. */
int main(int argc, char **argv) {
  const char *cmd = "mpprof";
  int rc = dispatch(argc, argv, &cmd);
  return rc ? rc : mpprof_check_stdout(cmd, 0);
}
