/* The site table (sites.c): calls aggregated by site (layer + API + dtypes +
 * shape), per-call events, kernel events, and the reasons a raw file is
 * incomplete. */
#ifndef MPPROF_PROFILER_SITES_H
#define MPPROF_PROFILER_SITES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "analysis/stats.h"
#include "profiler/call.h"
#include "profiler/op.h"
#include "profiler/scope.h"

#define MPP_SITE_TC_VALUES 4 /* == MPP_TC_MAX_METRICS (profiler/gpu/gpu.h) */
typedef struct mpp_site_kernel_t {
  char *name;
  uint64_t count;
  uint64_t gpu_ns;
  int8_t tc;                            /* --tc-counters: -1 not measured, 0 no, 1 Tensor Cores */
  uint32_t tc_profiled;                 /* launches measured */
  double tc_values[MPP_SITE_TC_VALUES]; /* summed over them, metrics as in the raw tc_counters */
} mpp_site_kernel_t;

#define MPP_SITE_MAX_KERNELS 32

/* A cuBLASLt FP8 scalar over a site's calls (MP_RAW_FP8_VALUE). */
typedef struct mpp_fp8_value {
  double min, max; /* NAN: none read */
  uint64_t read, unread;
} mpp_fp8_value;

/* A site's counters that every call touches, kept apart from the site (two
 * to a cache line, in chunks that never move when the site array grows): a
 * call's begin counts it in `started` and so brings the line into the cache
 * for its end, which then reads no line of the site itself unless it has
 * more to record (scans, reasons not scanned other than sampling, FP8
 * scalars). A model's sites outgrow the CPU caches: each line a call reads
 * is a miss. All four are atomic: a call with nothing more to record counts
 * itself without the sites' lock (mpp_site_record). */
typedef struct mpp_site_hot {
  _Atomic uint64_t started;     /* ops begun: the op's index, single ops' sampling index */
  _Atomic uint64_t calls;       /* calls that returned success */
  _Atomic uint64_t ptr_align;   /* the least of the calls' (op.h), 0: none yet */
  _Atomic uint64_t sampled_out; /* roles not scanned as sampled out, not yet in the
                                   site's not_scanned (mpp_tables_get moves them) */
} mpp_site_hot;                 /* 32 bytes: two to a line (a multi-op call's counter,
                                   mpp_site_multi_again, is kept apart) */

/* Fields a recorded call may touch come first; the key, read when a site is
 * looked up in the table, and what only some calls touch come after. */
typedef struct mpp_site {
  uint64_t hash;
  char *layer;
  /* The scope's module class (interned by scope.c, never freed; NULL
   * without) and phase (MPPROF_SCOPE_*, 0 without a scope phase). */
  const char *module_class;
  uint8_t phase;
  mpp_site_hot *hot; /* started, calls, ptr_align, sampled_out */
  uint64_t scanned_calls;
  uint64_t gpu_ns;
  uint64_t kernel_launches;
  int nkernels;
  mpp_site_kernel_t kernels[MPP_SITE_MAX_KERNELS];
  uint64_t kernels_other; /* launches of names beyond MPP_SITE_MAX_KERNELS */
  uint64_t autotune_calls;
  uint64_t not_scanned[MPP_NS_COUNT];
  mp_stats *stats[MPP_MAX_ROLES]; /* lazily allocated, by role index */
  struct mpp_shadow_site
      *shadow; /* --shadow state: one malloc block of shadow.c's; NULL until shadowed */
  mpp_fp8_value fp8_scale[4]; /* A, B, C, D */
  mpp_fp8_value amax_d;
  mpp_fp8_value aux_scale, amax_aux; /* the GELU aux's (GELU_AUX*) */
  mpp_op key;                        /* roles[].view and per-call fields cleared */
} mpp_site;

typedef struct mpp_event {
  uint32_t site;
  uint32_t thread;
  uint64_t t_ns;
  uint64_t dur_ns;
  uintptr_t stream;
  uint64_t call; /* the call's index in its site */
} mpp_event;

/* A kernel a recorded call launched (CUPTI), for the timeline's GPU tracks. */
typedef struct mpp_kernel_event {
  uint32_t site;
  uint32_t call;   /* low 32 bits of the call's index (the op id's) */
  uint32_t kernel; /* index into the site's kernels[] */
  uint32_t stream; /* CUPTI stream id */
  uint64_t start_ns, end_ns;
} mpp_kernel_event;

/* All tables are protected by one mutex (sites.c); the accessors below take it. */
void mpp_sites_lock(void);
void mpp_sites_unlock(void);
void mpp_sites_reset(void);   /* fork child and tests: drop everything */
void mpp_sites_prepare(void); /* activation: allocate the first tables */
/* A kernel CUPTI saw outside every hooked call: counted when its name is
 * cuBLAS's or cuDNN's (mp_kernel_library), written under "cupti". */
void mpp_note_unattributed_kernel(const char *name, uint64_t gpu_ns);
struct mpp_jw;
void mpp_unattributed_write_locked(struct mpp_jw *w); /* the "cupti" object's counts */
bool mpp_sites_locked_by_caller(void);                /* the calling thread holds the site lock */
/* Site id for the op and the calling thread's layer: past MPPROF_MAX_SITES, a
 * new key's site of merged shapes (shapes_merged); -1 when their reserve is
 * full too, or without memory (the op is counted as not attributed). For a memo of the site (may be
 * NULL): ret_layer, the site's own copy of its layer path, and ret_hot, its
 * counters; both live until mpp_sites_reset. */
int mpp_site_find(const mpp_op *op, const mpp_layer *layer, uint64_t *ret_call_index,
                  const char **ret_layer, mpp_site_hot **ret_hot);
/* A call of a site mpp_site_find gave for the same key in this generation (a
 * memo's), by its counters: counted as mpp_site_find counts a call it finds,
 * without the lock (one atomic add). Returns the call's index in its site. */
uint64_t mpp_site_again(mpp_site_hot *hot);
/* A multi-op call's first op of site (call.c multi_sample_index), a site
 * mpp_site_find gave in this generation: returns the site's count of such
 * calls begun before it, one atomic add (no lock: the counters stay where
 * they are, beside the hot ones, which single ops do not share). */
uint64_t mpp_site_multi_again(int site);
/* Calls that looked their site up in the table (mpp_site_find) since the
 * last reset: what the memos and caches of call.c did not spare. */
uint64_t mpp_sites_table_finds(void);
/* Changes when the tables are reset (a fork child, tests): site ids and
 * layer copies of an older generation are gone. */
uint64_t mpp_sites_generation(void);
void mpp_site_record_autotune(int site); /* a cuDNN autotuning execution: counted apart */
/* Record a finished call: counts, not-scanned reasons, host-scan stats, event. */
void mpp_site_record(int site, const mpp_op *op, const mpp_call *c, uint64_t dur_ns);
bool mpp_events_wanted(void); /* false once MPPROF_MAX_EVENTS events are stored */
void mpp_site_merge_stats(int site, int role, const mp_stats *s); /* device-scan sink */
/* Device-scan sink of a call's FP8 scalars: values[0..3] the A/B/C/D scales,
 * values[4] AMAX_D, values[5] the aux scale, values[6] the aux amax (value i:
 * MPP_FP8_* bit 1 << i); requested / read: MPP_FP8_* bits of the values the
 * call handed to the device scan and of those it read (the others count as
 * unread). */
void mpp_site_note_fp8(int site, const double values[MPP_FP8_VALUES], unsigned requested,
                       unsigned read);
/* One kernel launch of call `call` (low 32 bits) of the site; start/end for the timeline. */
void mpp_site_kernel(int site, uint32_t call, const char *name, uint64_t start_ns, uint64_t end_ns,
                     uint32_t stream);
/* A counter verdict for one measured launch of a kernel already in the site. */
void mpp_site_kernel_tc(int site, const char *name, bool tc, const double *values, int nvalues);
void mpp_note_failed_call(void);
void mpp_note_incomplete(const char *reason_key, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Read-only view for the writer; call with the lock held. */
typedef struct mpp_tables {
  mpp_site *sites;
  uint32_t nsites;
  uint64_t nevents; /* mpp_tables_event(t, 0 .. nevents - 1) */
  uint64_t events_dropped;
  const mpp_kernel_event *kevents;
  uint64_t nkevents;
  uint64_t kevents_dropped;
  uint64_t ops_unattributed;
  uint64_t failed_calls;
  uint64_t total_calls;
  uint32_t nreasons;
  const char *const *reasons; /* incomplete_reasons, formatted */
} mpp_tables;
/* ranges_dropped: the NVTX count the "max_ranges" reason text states (the
 * writer asks nvtx.c; the site table does not). */
void mpp_tables_get(mpp_tables *ret, uint64_t ranges_dropped);
const mpp_event *mpp_tables_event(const mpp_tables *t, uint64_t i); /* i < t->nevents */
/* At exit: calls begun and not ended become an incomplete reason. */
void mpp_sites_note_in_flight(void);

/* The site's shadow state (shadow.c's, opaque here): the one installed, else
 * `fresh` (may be NULL: only asks). The site frees it with free() when it
 * goes, so shadow.c keeps it one malloc block. */
struct mpp_shadow_site *mpp_site_shadow_install(int site, struct mpp_shadow_site *fresh);
/* The loss scale (log2) shadow execution rounds a role's values at in its
 * fp16_loss_scaled candidate, from what the site's scans of that role saw so
 * far (mp_shadow_loss_scale_log2); 0 when nothing was scanned. Takes the site lock. */
int mpp_site_role_loss_scale_log2(int site, int role);

#endif
