/* `mpprof diff A B -o OUT`: two runs' reports compared layer by layer
 * (report/diff.c); and the program a run directory profiled, for `mpprof
 * merge`'s different-programs warning. */
#ifndef MPPROF_REPORT_DIFF_H
#define MPPROF_REPORT_DIFF_H

#include <stdio.h>

#include "report/report.h"

/* Reads A/report.json and B/report.json (and their plan.json, when both
 * can be read: else a warning on stderr), writes OUT/diff.json and
 * OUT/diff.html, and a few lines on summary (NULL: none, and no warnings).
 * 0, or -1 with ret_error (may be NULL) naming the file and the problem. */
int mpprof_diff_generate(const char *dir_a, const char *dir_b, const char *out_dir, FILE *summary,
                         mpprof_error *ret_error);

/* The program a command line (argv joined by spaces) runs, into buf: the
 * file name of the script or module it runs when it names one (the first word
 * ending in ".py", or the word after "-m": `python3 train.py`, `torchrun
 * --nproc_per_node 2 train.py` and `python -m pkg.train` run train.py,
 * train.py and pkg.train whatever the interpreter or launcher), else the file
 * name of its first word (`./train --precision fp16` runs train). Two runs of
 * one program with other arguments (the fp32 and the AMP run) have the same. */
void mpprof_program_identity(const char *cmdline, char *buf, size_t n);
/* What diff's page and summary and merge's warning call two such runs. */
#define MPPROF_SAME_PROGRAM_OTHER_ARGS "the same program with other arguments"

/* The command lines (argv joined by spaces, one per line, sorted, distinct)
 * of the processes whose raw files are in DIR/raw (or DIR itself), read from
 * each file's header; malloc'd, "" when none. */
char *mpprof_run_programs(const char *dir);

/* The start of raw file `path` (its header: the first 64 KiB), NUL-terminated
 * and malloc'd; NULL when it is not a readable regular file. */
char *mpprof_raw_head(const char *path);

#endif
