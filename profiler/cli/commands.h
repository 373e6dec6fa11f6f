/* The mpprof subcommands. Each takes the arguments after its name (argv[0] is
 * the subcommand name) and returns the process exit status. */
#ifndef MPPROF_CLI_COMMANDS_H
#define MPPROF_CLI_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

#include "report/report.h"

int mpprof_cmd_run(int argc, char **argv);     /* run.c: launch a program under the profiler */
int mpprof_cmd_report(int argc, char **argv);  /* report_cmd.c: rebuild OUT/ from OUT/raw */
int mpprof_cmd_merge(int argc, char **argv);   /* report_cmd.c: merge several runs */
int mpprof_cmd_diff(int argc, char **argv);    /* report_cmd.c: compare two runs */
int mpprof_cmd_inspect(int argc, char **argv); /* inspect.c: numerics of saved tensors */
int mpprof_cmd_version(int argc, char **argv); /* version.c: versions and embedded GPU archs */

/* main.c: flushes standard output; 0 when everything printed there was
 * written, else 1 after "mpprof: CMD: standard output: write failed: ..."
 * on stderr (err: the errno of an earlier failed flush, or 0). */
int mpprof_check_stdout(const char *cmd, int err);

/* main.c: what argument a of a command line is, read in order: an option
 * (it starts with '-' and is not "-" alone), the "--" that ends the options
 * (*ended set: an operand named "-x" may follow), or an operand. The one
 * rule of run, report, merge and diff (inspect's getopt_long keeps it too). */
typedef enum { MPPROF_ARG_OPTION, MPPROF_ARG_END, MPPROF_ARG_OPERAND } mpprof_arg_kind;
mpprof_arg_kind mpprof_arg_kind_of(const char *a, bool *ended);

/* main.c: whether option argv[*i] of command cmd names the output directory:
 * -o DIR, -oDIR, --output DIR or --output=DIR (the one spelling of run, merge
 * and diff). 1: it does, *out is the directory and *i the last argument
 * used; 0: it is another option; -1: it has no directory or an empty one,
 * after one line on stderr naming the option (a usage error: exit 2). */
int mpprof_out_option(const char *cmd, int argc, char **argv, int *i, const char **out);

/* report_cmd.c: a report library error as one line on stderr (none when unset). */
void mpprof_print_error(const mpprof_error *e);

/* report_cmd.c: makes the default output directory buf (n bytes) under a name
 * no earlier run took: buf, else buf-2, buf-3, ... (two runs started in the
 * same second; the name made is left in buf). true when one was made; false
 * (buf as given) when none could be, and the caller's own checks say why. */
bool mpprof_mkdir_fresh(char *buf, size_t n);
#define MPPROF_FRESH_TRIES 1000 /* mpprof_mkdir_fresh's last name: buf-1000 */
/* report_cmd.c: takes the advisory lock of output directory fd (named name)
 * that one run, merge or report holds while it writes there (released when
 * fd is closed; not inherited: fd is O_CLOEXEC). 0, or -1 after one line on
 * stderr: "mpprof: CMD: NAME is in use ...; HINT" (cmd "" for a run). */
int mpprof_lock_out(int fd, const char *name, const char *cmd, const char *hint);
/* report_cmd.c: why output directory path could not be made or opened (err,
 * an errno value), in words into buf (n bytes): a symbolic link to nothing
 * is said to be one (mkdir says "File exists", open "No such file or
 * directory"); else strerror(err). buf. */
const char *mpprof_why_not_made(const char *path, int err, char *buf, size_t n);
/* report_cmd.c: from now on SIGINT, SIGTERM and SIGHUP (each unless ignored
 * when mpprof started) first remove the temporaries of the output files
 * being written (mpprof_remove_temporaries) and, when made_dir is not NULL,
 * the directories the command made for its output, each while empty
 * (mpprof_remove_made(made_dir, made_top)), then end mpprof as they would
 * have: an interrupted report or diff leaves no temporary, each as large as
 * its file, behind. */
void mpprof_clean_up_on_signals(const char *made_dir, const char *made_top);
/* report_cmd.c: the topmost directory that making directory path, with its
 * missing parents, creates (path itself when its parent exists), into top (n
 * bytes); "" when path exists (or is too long). */
void mpprof_topmost_missing(const char *path, char *top, size_t n);
/* report_cmd.c: removes path, then each directory above it up to top
 * (mpprof_topmost_missing's, taken before they were made), each only while
 * empty: what a command that made them for nothing leaves. Async-signal-safe. */
void mpprof_remove_made(const char *path, const char *top);
/* --shadow-max-rel's value for command cmd: a number in (0, MPP_SET_MAX_REL_MAX);
 * 0, or -1 after one line on stderr naming the option. */
int mpprof_parse_max_rel(const char *cmd, const char *v, double *ret);

#endif
