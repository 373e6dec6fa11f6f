/* Hand-made raw profile files (docs/raw-format.md) for the report tests and
 * the report_scale benchmark: a header, sites with tensor stats made by the
 * reference stats path (mp_stats_add), kernels and events, written one site
 * at a time so that files with 100k sites need little memory. */
#ifndef MPPROF_TESTS_REPORT_RAWGEN_H
#define MPPROF_TESTS_REPORT_RAWGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "analysis/formats.h"

/* A fresh directory with an empty raw/ inside (malloc'd path). */
char *rg_tmpdir(const char *tag);
/* rm -rf of a directory made by rg_tmpdir. */
void rg_rmdir(const char *dir);

typedef struct rg_proc {
  const char *host;
  int pid, ppid;
  int rank; /* -1: null */
  bool final;
  const char *cupti;     /* "ok", "held_by_other_subscriber", ... */
  const char *device_cc; /* "9.0"; NULL: no device */
  const char *argv0;
} rg_proc;

typedef struct rg_file {
  FILE *f;
  int nsites, nevents;
  bool in_events;
} rg_file;

int rg_begin(rg_file *r, const char *dir, const char *name, const rg_proc *p);
/* A GEMM site; types like "A=fp16,B=fp16,D=fp32". The returned object is
 * written (and freed) by rg_site_end. */
cJSON *rg_gemm(int id, const char *api, const char *layer, const char *types,
               const char *compute_type, const char *math_mode, int m, int n, int k, int calls);
/* Tensor stats for role: n values, magnitudes log-uniform over [2^lo, 2^hi]
 * (every other one negative), stored as source dtype. */
void rg_tensor(cJSON *site, const char *role, mp_dtype dtype, double lo_log2, double hi_log2,
               int n);
/* Tensor stats from explicit values. */
void rg_tensor_values(cJSON *site, const char *role, mp_dtype dtype, const double *v, int n);
void rg_kernel(cJSON *site, const char *name, int count, long gpu_ns);
/* A shadow candidate `name` under cands (a site's shadow.candidates): calls
 * calls measured, worst rel_l2 and max_rel rel_l2, nothing flushed or
 * non-finite, one rel_l2 sample. */
void rg_shadow_candidate(cJSON *cands, const char *name, double rel_l2, int calls);
void rg_site_end(rg_file *r, cJSON *site);
void rg_event(rg_file *r, int site, long t_ns, long dur_ns, long thread);
int rg_end(rg_file *r);

/* Write text as dir/raw/name (for corrupt files). */
int rg_write_text(const char *dir, const char *name, const char *text, size_t len);
/* Rewrite dir/raw/name with the first `was` in it replaced by `now`
 * (-1 when there is none). */
int rg_edit(const char *dir, const char *name, const char *was, const char *now);
/* Rewrite the header of dir/raw/name as a process run with --scan mode
 * (rg_begin writes "all"). */
int rg_set_scan(const char *dir, const char *name, const char *mode);
/* Read and parse dir/name (NULL on failure). */
cJSON *rg_read_json(const char *dir, const char *name);
char *rg_read_text(const char *dir, const char *name, size_t *ret_len);

#endif
