/* `mpprof diff A B -o OUT`: two runs' reports compared layer by layer
 * (report/diff.c); and the program a run directory profiled, for `mpprof
 * merge`'s different-programs warning. */
#ifndef MPPROF_REPORT_DIFF_H
#define MPPROF_REPORT_DIFF_H

#include <stdio.h>

#include "report/report.h"

/* Reads A/report.json and B/report.json, writes OUT/diff.json and
 * OUT/diff.html, and a few lines on summary (NULL: none). 0, or -1 with
 * ret_error (may be NULL) naming the file and the problem. */
int mpprof_diff_generate(const char *dir_a, const char *dir_b, const char *out_dir, FILE *summary,
                         mpprof_error *ret_error);

/* The command lines (argv joined by spaces, one per line, sorted, distinct)
 * of the processes whose raw files are in DIR/raw (or DIR itself), read from
 * each file's header; malloc'd, "" when none. */
char *mpprof_run_programs(const char *dir);

#endif
