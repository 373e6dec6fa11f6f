/* One hooked call (call.c): sampling, scans, the CUPTI op id, recording in
 * its site; and the sinks that bring kernels and counter verdicts back to a
 * call's site. */
#ifndef MPPROF_PROFILER_CALL_H
#define MPPROF_PROFILER_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/stats.h"
#include "profiler/op.h"

/* --- sampling ---
 * MPPROF_SAMPLE=auto (the default): every call of a site is scanned for its
 * first MPP_SAMPLE_AUTO_FIRST calls; after that each further
 * MPP_SAMPLE_AUTO_FIRST scanned calls are twice as far apart as the ones
 * before, up to 1 in MPP_SAMPLE_AUTO_CAP; a long run costs what its start
 * costs. MPPROF_SAMPLE=N scans calls 0, N, 2N, ... of each site. */

#define MPP_SAMPLE_AUTO_FIRST 64
#define MPP_SAMPLE_AUTO_CAP 64
/* Is call `index` (0-based, per site) scanned under `sample` (N or MPP_SAMPLE_AUTO)? */
bool mpp_sample_scans(uint64_t sample, uint64_t index);

/* --- calls --- */
typedef struct mpp_call {
  int site;       /* -1: not attributed (site cap) */
  uint64_t op_id; /* pushed to CUPTI */
  uint64_t index; /* the op's index in its site (its op id) */
  /* The call's index among its site's calls: sampling and shadowing. The
   * op's index, but in a multi-op call one per real call and site (call.c
   * multi_sample_index): its ops of one site share it. */
  uint64_t sample_index;
  uint64_t t0_ns; /* CLOCK_REALTIME */
  bool scan;      /* this call's roles are scanned */
  bool capturing;
  bool timed;                   /* t0_ns taken: an event will be recorded */
  bool tc_counting;             /* --tc-counters profiles this call's kernels (tc_counters.c) */
  mp_stats *tmp[MPP_MAX_ROLES]; /* host-scan results, merged at the end */
  bool tmp_used[MPP_MAX_ROLES];
  bool tmp_owned; /* tmp[] malloc'd: another call of this thread holds the scratch (call.c) */
  bool parked;    /* tmp[] packed into its mpp_calls' park (call.c), tmp[] NULL */
  uint32_t park_at[MPP_MAX_ROLES]; /* where in the park */
  uint32_t ns_counts[MPP_NS_COUNT];
  uint8_t dev_roles; /* roles (bits) for the device scanner: one launch per call (call.c) */
  /* FP8 scalars (MPP_FP8_* bits) the device scan reads: recorded by its sink
   * (mpp_site_note_fp8), not by mpp_site_record. */
  uint8_t fp8_on_device;
  bool has_step; /* a step was marked: the step in force when the call began */
  uint64_t step;
  double scale; /* the loss scale in force when the call began (0: none) */
} mpp_call;

/* Every begun call must be ended (calls of one thread may nest: grouped GEMMs
 * and cuDNN graphs open one per op around a single real call). */
void mpp_call_begin(mpp_call *c, mpp_op *op);
/* CUPTI kernel sink (mpp_kernel_sink): kernels and gpu_ns per site. */
void mpp_kernel_sink_fn(uint64_t op_id, const char *mangled_name, uint64_t start_ns,
                        uint64_t end_ns, uint32_t stream_id);
void mpp_call_end(mpp_call *c, mpp_op *op, bool ok);
/* A cuDNN autotuning execution of the op: counted apart, never scanned. */
void mpp_call_autotune(mpp_op *op);

/* Several ops recorded around one real call (hooks/hook.h MPP_MULTI_OP_HOOK):
 * their records live on the heap, never on the application's stack. */
typedef struct mpp_calls {
  int cap;       /* room reserved */
  int n;         /* ops decoded into ops[0 .. n) */
  bool autotune; /* a cuDNN autotuning execution: the ops are counted, not begun */
  bool owned;    /* the block is this call's own (else the thread's, lent) */
  mpp_op *ops;   /* cap ops, then cap calls, then cap site memos, in one block */
  mpp_call *calls;
  mpp_site_memo *memos; /* room for one per op: mpp_calls_memo */
  /* Each site's first op in this call, + 1 (0: empty), by site in an open
   * table of first_cap slots (a power of two, more than twice cap): its ops
   * of one site share that op's sampling index (call.c multi_sample_index). */
  int32_t *first;
  uint32_t first_cap;
  /* The host-scan records of ops begun and waiting for the real call,
   * packed (mp_stats_pack_scanned): a few hundred bytes an op, not one
   * 17 KB record per scanned input (a 1024-group call held 35 MB). */
  char *park;
  size_t park_len, park_cap;
} mpp_calls;

/* Room for cap ops (none when cap <= 0): the thread's block, kept from call
 * to call (a call that finds it lent, a nested one, gets one of its own), so
 * a multi-op call costs no allocation and no clearing. The ops are not
 * cleared: a decode initialises each (mpp_op_init). Without memory: false,
 * and the report notes that `what` ("a grouped GEMM call") was not recorded. */
bool mpp_calls_reserve(mpp_calls *c, int cap, const char *what);
/* For a decode that knows a stable id of ops[i]'s decode (one id, from
 * mpp_site_memo_op, for one site key but the layer's): the op's site is then
 * found in the thread's site cache instead of the site table. Call after
 * ops[i]'s mpp_op_init. */
void mpp_calls_memo(mpp_calls *c, int i, uint64_t op_id);
/* Begins ops[0 .. n) in order (autotune: nothing to begin). */
void mpp_calls_begin(mpp_calls *c);
/* Ends them in reverse order with the real call's verdict (autotune: counts
 * each op as an autotuning execution when the call succeeded). */
void mpp_calls_end(mpp_calls *c, bool ok);
/* Gives the room back (to the thread or the heap); c may be reserved or not. */
void mpp_calls_release(mpp_calls *c);
/* tc_counters.c verdict sink (mpp_tc_verdict_fn): op id -> site. */
void mpp_tc_verdict_sink_fn(uint64_t op_id, const char *mangled_name, bool tc, const double *values,
                            int nvalues);
void mpp_call_prepare_thread(void); /* activation: the calling thread's scan scratch */

#endif
