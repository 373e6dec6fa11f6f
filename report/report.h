/* Building the report of a profiled run: read the raw files in OUT/raw/, merge processes,
 * write OUT/report.html and the others (MPPROF_REPORT_OTHER_FILES). */
#ifndef MPPROF_REPORT_REPORT_H
#define MPPROF_REPORT_REPORT_H

#include <stdbool.h>
#include <stdio.h>

/* What mpprof_report_generate writes in out_dir besides report.html (the
 * summary and the help name them from here). */
#define MPPROF_REPORT_OTHER_FILES "report.json, plan.json, layers.csv, ops.csv, trace.json"

/* Why a report library call failed, for the caller to print: one line,
 * without the "mpprof: " prefix the CLI puts before it. */
typedef struct mpprof_error {
  int errnum;         /* the errno behind it, 0 when none */
  char message[1024]; /* "" until an error is set */
} mpprof_error;

typedef struct mpprof_report_options {
  const char *out_dir; /* reads out_dir/raw, writes out_dir/report.* */
  const char *program; /* shown as the program; NULL: taken from the raw files' argv */
  FILE *summary; /* short human summary (processes, ops, sites, top findings, paths); NULL: none */
  double shadow_max_rel; /* verdict: largest measured rel_l2 a precision may cause; 0: default */
  /* Processes of the program (its process group) still alive when the report
   * is built (mpprof run): their raw files are missing or checkpoints. */
  const long *still_running;
  size_t n_still_running;
  /* The program's own process (mpprof run), 0: not known. Its raw file
   * still a checkpoint when it exited (not killed) means its final write
   * failed (a full disk, a quota), not that it did not finish. */
  long exited_pid;
  int exit_status;
  /* The program's own process when a signal killed it (mpprof run), 0: not
   * known or not killed; the report names the signal where its raw file is
   * a checkpoint. */
  long killed_pid;
  int killed_signal;
  /* Raw files skipped or read in part, one line each ("mpprof: FILE: ..."), as
   * they are read; NULL: not printed (report.json still lists the skipped). */
  FILE *warnings;
  mpprof_error *error; /* set when mpprof_report_generate fails; NULL: not kept */
  /* true: out_dir/raw holding no raw file at all, or only unusable ones
   * (each named on warnings), is an error, and nothing is written (a report
   * already in out_dir stays); false: the report says that nothing was
   * profiled, or lists the files it skipped. */
  bool need_raw_files;
  /* Where out_dir/raw's files were brought from (mpprof merge): the input
   * path of the raw file of that name, or NULL; warnings name it beside the
   * file. NULL: the files are the run's own. */
  const char *(*raw_origin)(void *ctx, const char *name);
  void *raw_origin_ctx;
} mpprof_report_options;

/* 0 on success (also for an empty run unless opts->need_raw_files: the report
 * says so); -1 otherwise, with
 * opts->error naming the file and the problem. Prints nothing but the summary
 * and the warnings, on the streams given. */
int mpprof_report_generate(const mpprof_report_options *opts);

/* Removes the temporaries of the output files being written now (the
 * report's, the diff's: complete files appear only by their renames): what
 * a command ended by a signal would leave in its directory. Async-signal-safe,
 * for a signal handler of the caller's (the library installs none). */
void mpprof_remove_temporaries(void);

/* The n bytes at s (a path, a tensor's or layer's name, a message naming
 * them) as text of one line, by the one rule the terminal summaries use
 * (report/util.c): control bytes as \0 \t \n \r or \xNN, C1 controls as
 * \u00NN, every other byte as it is. A malloc'd string; NULL when out of
 * memory. */
char *mpprof_text_escape(const char *s, size_t n);

/* printf of one line (or part of one) for a terminal, by the same rule: every
 * control byte of the text, a newline in a name included, escaped, but a
 * newline that ends it. Every message naming a file, a program or a name
 * from outside goes through it: one line, whatever the name holds. */
void mpprof_fprint_term(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A percentage as every output shows it (docs/report.md, Shares), without
 * the "%": three significant digits (five from 99.95 up, where three round
 * to 100); "0" and "100" only when exact, "<0.001" and ">99.999" for the
 * shares that are not and would round to them. The text is in .s, which
 * lives to the end of the full expression: printf("%s%%",
 * mpprof_pct_text(p).s). */
typedef struct mpprof_pct_str {
  char s[12]; /* the longest: ">99.999" */
} mpprof_pct_str;
mpprof_pct_str mpprof_pct_text(double pct);

/* --shadow-max-rel as every text shows it: the shortest text that reads
 * back as the limit (2^-8: "0.00390625", not a rounded "0.00391" that an
 * error of 0.003907 reads within). */
typedef struct mpprof_rel_str {
  char s[32];
} mpprof_rel_str;
mpprof_rel_str mpprof_rel_limit_text(double lim);
/* A measured relative error beside that limit: three significant digits,
 * more where fewer would read on the other side of mpprof_rel_limit_text(lim)
 * than the error is (0.0027347 against 0.002734 reads "0.002735", not
 * "0.00273 > 0.002734" nor "0.0027"); "inf" when not finite. */
mpprof_rel_str mpprof_rel_text(double v, double lim);

/* A signal's name, "SIGKILL" ("" for a number without one), and as every
 * text names it, "SIGKILL (signal 9)" or "signal 40"; in .s as
 * mpprof_pct_text's. */
typedef struct mpprof_signal_str {
  char s[64];
} mpprof_signal_str;
mpprof_signal_str mpprof_signal_name(int sig);
mpprof_signal_str mpprof_signal_text(int sig);

#endif
