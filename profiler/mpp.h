/* Internals of libmpprof.so shared by the runtime, the NVTX layer tracker, the
 * site table, the raw writer and the hook modules. Nothing here is exported:
 * the library is built with -fvisibility=hidden and a version script, and only
 * MPP_EXPORT definitions (hooks and injection entry points) are visible.
 *
 * The data path of one hooked call: a hook module decodes its arguments into
 * an mpp_op (what was asked: API, shapes, dtypes, tensor roles), then
 * mpp_call_begin/mpp_call_end (call.c) find the op's site, scan inputs, push
 * the CUPTI op id around the real call, scan outputs and record the call. */
#ifndef MPPROF_PROFILER_MPP_H
#define MPPROF_PROFILER_MPP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/capture.h"
#include "analysis/raw_format.h"
#include "analysis/scan.h"
#include "analysis/stats.h"

#define MPP_EXPORT __attribute__((visibility("default")))
/* Per-thread state is a few words: initial-exec TLS avoids __tls_get_addr on
 * every hooked call, and fits the static TLS surplus glibc keeps for
 * libraries loaded with dlopen (NVTX/CUDA injection without LD_PRELOAD). */
#define MPP_TLS __attribute__((tls_model("initial-exec")))

/* --- configuration (runtime.c), read once from the environment --- */
typedef enum mpp_scan_mode { MPP_SCAN_ALL = 0, MPP_SCAN_OUTPUTS, MPP_SCAN_NONE } mpp_scan_mode;

typedef struct mpp_config {
  bool disabled;          /* MPPROF_DISABLE=1 */
  mpp_scan_mode scan;     /* MPPROF_SCAN */
  uint64_t sample;        /* MPPROF_SAMPLE: scan every Nth call of a site; MPP_SAMPLE_AUTO */
  uint64_t shadow;        /* MPPROF_SHADOW: shadow every Nth GEMM call of a site; 0 off */
  uint64_t shadow_max_mb; /* MPPROF_SHADOW_MAX_MB: memory cap of one shadowed call */
  uint32_t max_sites;     /* MPPROF_MAX_SITES */
  uint64_t max_events;    /* MPPROF_MAX_EVENTS: events, and kernel events apart */
  uint64_t max_ranges;    /* MPPROF_MAX_RANGES: ended NVTX ranges kept for the timeline */
  mp_capture capture;     /* MPPROF_CAPTURE_RANGE, MPPROF_NVTX_CAPTURE, MPPROF_STEPS */
  char capture_nvtx[256]; /* capture.nvtx points here */
  double checkpoint_s;    /* MPPROF_CHECKPOINT_S; 0 disables */
  int log;                /* MPPROF_LOG: 0 quiet, 1 problems, 2 debug */
  char out_dir[4096];     /* MPPROF_OUT: raw files go to out_dir/raw/ */
  /* RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID, -1 when none: read
   * at activation (the process's, or a fork child's, first hooked call), on
   * the application's thread, never by mpprof's own threads afterwards
   * (getenv there would race with the application's setenv). */
  int rank;
} mpp_config;

extern mpp_config mpp_cfg;

const char *mpp_scan_mode_name(mpp_scan_mode mode);
int mpp_rank_from_env(void); /* the first launcher variable set, -1 when none */
int mpp_parse_scan_mode(const char *s, mpp_scan_mode *ret_mode); /* 0 or -EINVAL */

/* --- runtime (runtime.c) --- */
void mpp_init(void); /* idempotent, pthread_once; also run from the constructor */
void mpp_activate(
    void); /* idempotent: the process uses CUDA (first hooked call or cuInit injection) */
bool mpp_enter(
    void); /* start of a hooked call: true when it is to be recorded (then call mpp_leave) */
void mpp_leave(void);
uint32_t mpp_thread_id(void);
uint64_t mpp_now_ns(void); /* CLOCK_REALTIME */
bool mpp_in_forked_child(void);
/* Log a line when MPPROF_LOG >= level, `mpprof[pid/tid]: ...` on stderr in one
 * write; callers log a problem once (their own flag), never per call. */
void mpp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Real symbols: resolved early by mpp_init (RTLD_NEXT), lazily again when a
 * library was loaded later (dlopen'ed by the app), falling back to the
 * already loaded library by soname when RTLD_NEXT does not see it. */
typedef struct mpp_sym {
  const char *name;
  const char *soname;
  void *fn;           /* atomic */
  uint64_t missed_at; /* atomic: 1 + loader generation of the last failed lookup (0: none) */
} mpp_sym;
void *mpp_sym_get(mpp_sym *s);

/* --- sampling (call.c) ---
 * MPPROF_SAMPLE=auto (the default): every call of a site is scanned for its
 * first MPP_SAMPLE_AUTO_FIRST calls; after that each further
 * MPP_SAMPLE_AUTO_FIRST scanned calls are twice as far apart as the ones
 * before, up to 1 in MPP_SAMPLE_AUTO_CAP; a long run costs what its start
 * costs. MPPROF_SAMPLE=N scans calls 0, N, 2N, ... of each site. */
#define MPP_SAMPLE_AUTO 0
#define MPP_SAMPLE_AUTO_FIRST 64
#define MPP_SAMPLE_AUTO_CAP 64
/* Is call `index` (0-based, per site) scanned under `sample` (N or MPP_SAMPLE_AUTO)? */
bool mpp_sample_scans(uint64_t sample, uint64_t index);
void mpp_sym_resolve_all(mpp_sym *tab, size_t n);
void mpp_register_syms(mpp_sym *tab, size_t n); /* called by each hook module's constructor */
/* dlsym.c: a program looked `name` up on a CUDA library's own handle and got
 * `real`; the hook forwards there unless its real symbol is known already.
 * False when mpprof has no entry of that name. */
bool mpp_sym_adopt(const char *name, void *real);
/* The C library's dlsym (dlsym.c, in libmpprof.so only: weak elsewhere). */
void *mpp_dlsym_real(void *handle, const char *name) __attribute__((weak));

/* --- ops and calls (call.c) --- */
#define MPP_MAX_ROLES 4
#define MPP_MAX_PTRS 65536 /* pointer-array batches scanned per role and call */

typedef enum mpp_op_kind {
  MPP_OP_GEMM = 0,
  MPP_OP_CONV_FWD,
  MPP_OP_CONV_BWD_DATA,
  MPP_OP_CONV_BWD_FILTER,
  MPP_OP_MATMUL,
} mpp_op_kind;
const char *mpp_op_kind_name(mpp_op_kind kind);

/* Why a tensor role of a call was not scanned: MP_RAW_NOT_SCANNED
 * (analysis/raw_format.h) names them as raw-file keys. */
typedef enum mpp_ns_reason {
#define X(id, json, doc) MPP_NS_##id,
  MP_RAW_NOT_SCANNED(X)
#undef X
      MPP_NS_COUNT
} mpp_ns_reason;
const char *mpp_ns_reason_name(mpp_ns_reason r);

typedef struct mpp_conv {
  int64_t n, c, h, w, k, r, s;
  int64_t pad[2], stride[2], dilation[2];
} mpp_conv;

typedef struct mpp_role {
  const char *name;             /* "A", "x", ... */
  bool present;                 /* participates in this call (C only when beta != 0) */
  bool input;                   /* read by the op (host scans before the call; call.c) */
  mp_view view;                 /* view.data: the tensor (NULL with ptr_array set) */
  const void *const *ptr_array; /* pointer-array batch: view.batch pointers */
  mpp_ns_reason unscannable;    /* MPP_NS_COUNT when scannable */
  bool saturates;               /* an fp8 output the op converts with saturation (cuBLASLt) */
} mpp_role;

typedef struct mpp_op {
  /* The site key (with the caller's layer). */
  const char *api; /* static string */
  mpp_op_kind kind;
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd; /* -1: absent */
  char transa, transb;        /* 0 for non-GEMMs */
  bool has_conv;
  mpp_conv conv;
  int ntypes;
  const char *type_keys[4];  /* "A".."D" or "x","w","y" */
  const char *type_names[4]; /* static: dtype names */
  const char *compute_type;  /* static or NULL */
  const char *scale_type;    /* static or NULL */
  int math_mode;             /* -1: null */
  const char *epilogue;      /* static or NULL */
  const char *conv_math;     /* legacy cuDNN cudnnMathType_t name, static or NULL */
  uint8_t fp8_scales;        /* MPP_FP8_* bits */
  double loss_scale;         /* declared loss scale in force at the call; 0: none (call.c) */
  /* Per call, not part of the key. */
  void *stream;
  double alpha;            /* NAN: not readable here (device pointer, vector) */
  bool shadow_unsupported; /* a layout or scaling shadow execution does not model */
  /* cuBLASLt FP8 (per call): scalar A/B/C/D scales and AMAX_D as read on the
   * host path, NAN when not read (unset: no pointer; device memory; a block
   * scale mode); amax_d_ptr is read back after the call (call.c). */
  double fp8_scale[4];
  bool fp8_scale_unread[4]; /* a pointer was set but its value not read here */
  const void *amax_d_ptr;
  double amax_d;
  uint64_t ptr_align; /* 0: no pointer seen */
  int nroles;
  mpp_role roles[MPP_MAX_ROLES];
} mpp_op;

#define MPP_FP8_A 1u
#define MPP_FP8_B 2u
#define MPP_FP8_C 4u
#define MPP_FP8_D 8u
#define MPP_FP8_AMAX_D 16u

void mpp_op_init(mpp_op *op, const char *api, mpp_op_kind kind);
/* Adds a role; returns it for the caller to fill its view. */
mpp_role *mpp_op_role(mpp_op *op, const char *name, bool input);
void mpp_op_type(mpp_op *op, const char *key, const char *dtype_name);
void mpp_op_note_ptr(mpp_op *op, const void *p); /* ptr_align */
/* May mpprof read this memory on the host (host memory, or no driver)? In a
 * fork child without a driver the byte at p is probed first. */
bool mpp_host_readable(const void *p);

typedef struct mpp_call {
  int site;       /* -1: not attributed (site cap) */
  uint64_t op_id; /* pushed to CUPTI */
  uint64_t index; /* the call's index in its site (sampling) */
  uint64_t t0_ns; /* CLOCK_REALTIME */
  bool scan;      /* this call's roles are scanned */
  bool capturing;
  bool timed;                   /* t0_ns taken: an event will be recorded */
  bool tc_counting;             /* --tc-counters profiles this call's kernels (tc_counters.c) */
  mp_stats *tmp[MPP_MAX_ROLES]; /* host-scan results, merged at the end */
  bool tmp_used[MPP_MAX_ROLES];
  bool tmp_owned; /* tmp[] malloc'd: another call of this thread is open (call.c) */
  uint32_t ns_counts[MPP_NS_COUNT];
  uint8_t dev_roles; /* roles (bits) for the device scanner: one launch per call (call.c) */
  bool has_step;     /* a step was marked: the step in force when the call began */
  uint64_t step;
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

/* --- the layer of an op (scope.c): a framework scope, else the NVTX path --- */
typedef struct mpp_layer {
  const char *path;         /* module name or NVTX range path ("" without either) */
  uint64_t hash;            /* of path */
  const char *module_class; /* interned; NULL outside a module scope */
  uint8_t phase;            /* MPPROF_SCOPE_* (profiler/include/mpprof.h); 0: none */
} mpp_layer;
void mpp_layer_current(mpp_layer *ret);
const char *mpp_scope_phase_name(int phase); /* raw-file spelling; NULL for none */

/* --- sites (sites.c) --- */
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

typedef struct mpp_site {
  uint64_t hash;
  char *layer;
  /* The scope's module class (interned by scope.c, never freed; NULL
   * without) and phase (MPPROF_SCOPE_*, 0 without a scope phase). */
  const char *module_class;
  uint8_t phase;
  mpp_op key;       /* roles[].view and per-call fields cleared */
  uint64_t started; /* calls begun: the sampling index */
  uint64_t calls;   /* calls that returned success */
  uint64_t scanned_calls;
  uint64_t autotune_calls;
  uint64_t not_scanned[MPP_NS_COUNT];
  mp_stats *stats[MPP_MAX_ROLES]; /* lazily allocated, by role index */
  uint64_t gpu_ns;
  uint64_t kernel_launches;
  int nkernels;
  mpp_site_kernel_t kernels[MPP_SITE_MAX_KERNELS];
  uint64_t kernels_other;         /* launches of names beyond MPP_SITE_MAX_KERNELS */
  uint64_t ptr_align;             /* 0: none yet */
  struct mpp_shadow_site *shadow; /* --shadow state (shadow.c); NULL until shadowed */
  mpp_fp8_value fp8_scale[4];     /* A, B, C, D */
  mpp_fp8_value amax_d;
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
void mpp_sites_reset(void); /* fork child and tests: drop everything */
void mpp_sites_prepare(void);
/* A kernel CUPTI saw outside every hooked call: counted when its name is
 * cuBLAS's or cuDNN's (mp_kernel_library), written under "cupti". */
void mpp_note_unattributed_kernel(const char *name, uint64_t gpu_ns);
struct mpp_jw;
void mpp_unattributed_write_locked(
    struct mpp_jw *w);                 /* activation: allocate the first tables (sites.c) */
void mpp_call_prepare_thread(void);    /* activation: the calling thread's scan scratch (call.c) */
bool mpp_sites_locked_by_caller(void); /* the calling thread holds the site lock */
/* A module's mutex that application threads take inside hooks: held across
 * fork() by the prepare handler and re-created in the child, so a child never
 * inherits it locked by a thread that does not exist there. At most 8. */
void mpp_fork_protect(pthread_mutex_t *mu);
/* Site id for the op and the calling thread's layer; -1 when the site cap is
 * hit (the op is counted as not attributed). */
int mpp_site_find(const mpp_op *op, const mpp_layer *layer, uint64_t *ret_call_index);
void mpp_site_record_autotune(int site); /* a cuDNN autotuning execution: counted apart */
/* Record a finished call: counts, not-scanned reasons, host-scan stats, event. */
void mpp_site_record(int site, const mpp_op *op, const mpp_call *c, uint64_t dur_ns);
bool mpp_events_wanted(void); /* false once MPPROF_MAX_EVENTS events are stored */
void mpp_site_merge_stats(int site, int role, const mp_stats *s); /* device-scan sink */
/* One kernel launch of call `call` (low 32 bits) of the site; start/end for the timeline. */
void mpp_site_kernel(int site, uint32_t call, const char *name, uint64_t start_ns, uint64_t end_ns,
                     uint32_t stream);
/* A counter verdict for one measured launch of a kernel already in the site. */
void mpp_site_kernel_tc(int site, const char *name, bool tc, const double *values, int nvalues);
/* tc_counters.c verdict sink (mpp_tc_verdict_fn): op id -> site. */
void mpp_tc_verdict_sink_fn(uint64_t op_id, const char *mangled_name, bool tc, const double *values,
                            int nvalues);
void mpp_note_failed_call(void);
void mpp_note_incomplete(const char *reason_key, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Read-only view for the writer; call with the lock held. */
typedef struct mpp_tables {
  mpp_site *sites;
  uint32_t nsites;
  const mpp_event *events;
  uint64_t nevents;
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
void mpp_tables_get(mpp_tables *ret);
/* At exit: calls begun and not ended become an incomplete reason. */
void mpp_sites_note_in_flight(void);

/* --- exec (exec.c, runtime.c, rawwrite.c) --- */
void mpp_runtime_before_exec(void); /* writes the raw file as final */
void mpp_runtime_exec_failed(void); /* the image goes on: later writes follow */
void mpp_raw_exec_failed(void);
int mpp_process_pid(void); /* this image's pid as recorded at start / fork */

/* --- NVTX layers (nvtx.c) --- */
/* The calling thread's range stack joined with "/" ("" without ranges). */
const char *mpp_nvtx_layer(uint64_t *ret_hash);
/* Direct access for tests and hooks: push/pop on the calling thread. */
int mpp_nvtx_push(const void *domain, const char *name);
int mpp_nvtx_pop(const void *domain);
void mpp_nvtx_thread_reset(void);
/* An ended push/pop range (MP_RAW_RANGE). */
typedef struct mpp_range {
  uint64_t start_ns, end_ns;
  uint32_t thread, depth;
  char name[88]; /* cut at 87 bytes */
} mpp_range;
/* Every kept range, in no particular order; safe while threads push and pop. */
void mpp_nvtx_ranges_each(void (*fn)(void *ctx, const mpp_range *r), void *ctx);
uint64_t mpp_nvtx_ranges_dropped(void);
void mpp_nvtx_ranges_reset(void); /* fork child, tests */

/* --- the capture range (capture.c): which op calls are recorded --- */
/* -1 inside (record the call; counted as captured), else the
 * MP_RAW_CAPTURE_OUTSIDE reason index (counted). */
int mpp_capture_check(void);
bool mpp_capture_inside(void);         /* the same question, not counted (autotuning calls) */
void mpp_capture_profiler(bool start); /* cudaProfilerStart/Stop, cuProfilerStart/Stop */
bool mpp_capture_nvtx_push(const char *name); /* true: NAME opened (pop it with the next) */
void mpp_capture_nvtx_pop(void);
void mpp_capture_reset_counts(void); /* fork child: its own counts, the state in force stays */

/* --- training state (train.c): loss scale, steps, first non-finite op --- */
double mpp_train_scale(void);            /* in force now; 0 when none declared */
bool mpp_train_step(uint64_t *ret_step); /* the step in force; false when none marked */
void mpp_train_init(void);               /* MPPROF_LOSS_SCALE (mpprof run --loss-scale) */
void mpp_train_reset_child(void);        /* fork child: the log restarts, the state stays */
void mpp_train_reset(void);              /* tests: nothing declared */
void mpp_train_loss_scale(double s);     /* the "loss_scale" mark */
void mpp_train_mark_step(uint64_t n);    /* the "step" mark */
void mpp_train_mark_skipped(uint64_t n); /* the "step_skipped" mark */
/* The earliest op (by start time) whose scanned inputs were finite and whose
 * output held Inf/NaN. */
typedef struct mpp_nonfinite {
  uint32_t site, thread;
  uint64_t call_index, t_ns;
  bool has_step, inputs_scanned;
  uint64_t step;
  double scale; /* 0: none declared */
  const char *role;
  uint64_t count, nans, pos_infs, neg_infs;
} mpp_nonfinite;
void mpp_train_note_nonfinite_locked(const mpp_nonfinite *nf); /* site lock held */
struct mpp_jw;
void mpp_train_write_locked(struct mpp_jw *w); /* the raw "training" object; site lock held */
void mpp_capture_write(struct mpp_jw *w);      /* the raw "capture" object (capture.c) */
/* --- shadow execution (shadow.c) --- */
/* Shadow one sampled call after it returned (host-visible operands); a call
 * that cannot be shadowed is counted under its reason. */
void mpp_shadow_call(const mpp_call *c, const mpp_op *op);
/* The site's shadow state, created on first use (stable pointer); NULL on ENOMEM. */
struct mpp_shadow_site *mpp_site_shadow(int site);
struct mpp_shadow_site *mpp_shadow_site_new(void);
void mpp_shadow_site_free(struct mpp_shadow_site *s);
/* The site's "shadow" object; call with the site lock held. */
void mpp_shadow_write(struct mpp_jw *w, struct mpp_shadow_site *s);

/* --- raw file: rawwrite.h --- */

#endif
