/* The report's in-memory model, shared by the files of report/: processes read
 * from raw files, merged sites, layers with their advice, Tensor Core facts
 * and findings. Not a public interface (report.h is).
 *
 * Memory is linear in sites: a site keeps its stats in compact form (the
 * exponent histogram only over its non-zero span), packed into bytes while
 * the model holds it (mpprof_site_pack_tensors), and expands them only while
 * merging, advising or writing it. */
#ifndef MPPROF_REPORT_REPORT_INTERNAL_H
#define MPPROF_REPORT_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "analysis/raw_format.h"

/* This mpprof's version: meson's project version (report/meson.build); a
 * build without it (a fuzz target) says "unknown". */
#ifndef MPPROF_VERSION_STRING
#define MPPROF_VERSION_STRING "unknown"
#endif
#include "analysis/advice.h"
#include "common/safefile.h"
#include "analysis/kernel_class.h"
#include "analysis/shadow.h"
#include "report/report.h"
#include "analysis/stats.h"
#include "analysis/tc_eligibility.h"
#include "analysis/verdict.h"

/* Bytes built in memory: JSON text (mpprof_tb_* below), packed records. */
typedef struct mpprof_tb {
  char *p;
  size_t n, cap;
  bool oom;
} mpprof_tb;

/* ---- interned strings ---- */

/* The model's strings that repeat from site to site (API and op names,
 * types, layer paths, roles, kernel and rank names): each held once, in
 * blocks freed together with the pool (at 100k sites a dozen malloc'd copies
 * a site were some 40 MB). Pointers stay valid until mpprof_strpool_free. */
typedef struct mpprof_strpool {
  const char **slot; /* open addressing, NULL empty; load at most one half */
  size_t cap, n;
  char *block; /* newest block; each starts with the pointer to the one before */
  size_t used, room;
} mpprof_strpool;
/* The pooled copy of s (its first n bytes, no NUL inside); NULL when out
 * of memory. */
const char *mpprof_intern_n(mpprof_strpool *p, const char *s, size_t n);
/* The pooled copy of s; NULL when s is NULL or out of memory. */
const char *mpprof_intern(mpprof_strpool *p, const char *s);
void mpprof_strpool_free(mpprof_strpool *p);

/* ---- compact stats ---- */

/* A cuBLASLt FP8 scalar over a site's calls (analysis/raw_format.h MP_RAW_FP8_VALUE). */
typedef struct mpprof_fp8_value {
  double min, max; /* valid when read > 0 */
  uint64_t read, unread;
} mpprof_fp8_value;

void mpprof_fp8_value_merge(mpprof_fp8_value *dst, const mpprof_fp8_value *src);

/* A site's FP8 scalars, value i for row i of MP_RAW_FP8_SCALES
 * (analysis/raw_format.h enum mp_fp8_row): the scale values of A, B, C, D,
 * amax_D, the GELU aux's scale and amax_aux. Out of the site record (160
 * bytes a site, 100k sites): few sites have them. */
typedef struct mpprof_fp8_values {
  mpprof_fp8_value v[MP_FP8_ROWS];
} mpprof_fp8_values;

/* JSON's whitespace (RFC 8259): the readers of raw files, report.json and
 * plan.json skip it. */
static inline bool mpprof_json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Whether row i of MP_RAW_FP8_SCALES is an amax (a site key of its own in
 * the raw file) rather than a scale (in "fp8_scale_values"). */
static inline bool mpprof_fp8_row_is_amax(int i) {
  return i == MP_FP8_ROW_amax_D || i == MP_FP8_ROW_amax_aux;
}

typedef struct mpprof_cstats {
  mp_dtype dtype;
  int hist_lo, hist_hi;
  int hist_shift; /* mp_stats.hist_shift: non-zero in unscaled gradients only */
  uint64_t count, zeros, nans, pos_infs, neg_infs, negatives, saturated;
  double min, max, absmax, min_abs_nonzero;
  uint64_t casts[MP_TARGET_COUNT][MP_CAST_OUTCOMES];
  int nz_lo, nz_hi; /* non-zero histogram span; nz_lo > nz_hi when empty */
  uint64_t *bins;   /* nz_hi - nz_lo + 1 counts */
} mpprof_cstats;

int mpprof_cstats_pack(const mp_stats *s, mpprof_cstats *ret); /* 0 or -1 (ENOMEM) */
void mpprof_cstats_unpack(const mpprof_cstats *c, mp_stats *ret);
void mpprof_cstats_free(mpprof_cstats *c);
/* dst += src, both compact (mp_stats_merge without expanding them). 0 or -1. */
int mpprof_cstats_merge(mpprof_cstats *dst, const mpprof_cstats *src);
/* *ret = a copy of c (ret's old bins freed). 0 or -1. */
int mpprof_cstats_copy(const mpprof_cstats *c, mpprof_cstats *ret);

/* ---- phases ---- */

typedef enum mpprof_phase {
  MPPROF_PHASE_UNKNOWN = 0,
  MPPROF_PHASE_FORWARD,
  MPPROF_PHASE_BACKWARD,
  MPPROF_PHASE_OPTIMIZER,
  /* activation-checkpoint recomputation: forward values */
  MPPROF_PHASE_RECOMPUTE,
  /* a forward outside training (PyTorch: a root module called under no_grad) */
  MPPROF_PHASE_EVAL,
  MPPROF_PHASE_MIXED, /* layers only: sites of several phases */
  MPPROF_PHASE_COUNT
} mpprof_phase;

const char *mpprof_phase_name(mpprof_phase p); /* "unknown", "forward", ... */
/* The phase spelled s ("forward", ...), or -1. */
int mpprof_phase_parse(const char *s);

/* Phase marker words, per phase: comma-separated, matched per NVTX path
 * component (see docs/report.md). */
typedef struct mpprof_phase_rules {
  char *words[MPPROF_PHASE_COUNT]; /* indexed by phase; [UNKNOWN] and [MIXED] unused */
} mpprof_phase_rules;

void mpprof_phase_rules_default(mpprof_phase_rules *r); /* reads MPPROF_PHASE_* env */
void mpprof_phase_rules_free(mpprof_phase_rules *r);
/* Phase of an NVTX path (innermost marker wins) and the layer name with the
 * marker components removed. ret_layer is malloc'd. */
mpprof_phase mpprof_phase_of(const mpprof_phase_rules *r, const char *path, char **ret_layer);

/* ---- raw data ---- */

typedef struct mpprof_process {
  char *file; /* base name under raw/ */
  char *host;
  int64_t pid, ppid;
  bool has_rank;
  int64_t rank;
  int64_t world_size; /* the raw "world_size"; 0: not known (null, or a file before the key) */
  bool final, incomplete;
  /* not final, yet the program mpprof run waited for exited (not killed):
   * its final raw file could not be written (mpprof_report_options.exited_pid) */
  bool final_unwritten;
  /* not final, and the program mpprof run waited for was this process and
   * a signal killed it (mpprof_report_options.killed_pid): that signal; 0
   * otherwise */
  int killed_signal;
  cJSON *incomplete_reasons; /* array of strings (owned) */
  cJSON *argv;               /* array of strings (owned), may be NULL */
  int64_t start_ns, end_ns;
  char *scan;
  /* "unprofiled" of the raw file: why this image ran without mpprof (the
   * exec that started it wrote the file); NULL for a profiled one */
  char *unprofiled;
  int64_t sample;        /* MPPROF_SAMPLE: N, or 0 for "auto" */
  double shadow_max_rel; /* MPPROF_SHADOW_MAX_REL the run recorded; 0: none */
  char *device_name;     /* NULL when no device */
  int cc_major, cc_minor;
  /* The raw "framework" (MP_RAW_FRAMEWORK): framework NULL when none was
   * reported; backward_marks NULL when not said. */
  char *framework, *framework_version, *backward_marks;
  /* Its framework.models (MP_RAW_MODEL): the models the integration named. */
  struct mpprof_named_model {
    char *name, *module_class;
  } * models;
  size_t n_models;
  char *mpprof_version; /* raw "mpprof_version"; NULL: a file written before the key */
  char *cupti_status;   /* "ok", "disabled", ... or "missing" */
  int64_t cupti_dropped;
  /* The raw cupti.unattributed_kernels object (owned), or NULL: library
   * kernels CUPTI saw outside every hooked call (MP_RAW_UNATTRIBUTED). */
  cJSON *unattributed_kernels;
  char *tc_counters_status; /* --tc-counters: "ok", "unavailable", "not_started"; NULL: not asked */
  char *tc_counters_reason; /* why unavailable, or NULL */
  char *tc_counters_chip;   /* or NULL */
  int64_t tc_counters_kernels; /* kernels profiled */
  char *tc_counters_sample;    /* "first" or N as text; NULL: not asked */
  cJSON *tc_counters_metrics;  /* array of strings (owned), may be NULL */
  int64_t tc_counters_passes, tc_counters_ops_profiled, tc_counters_ops_unmatched,
      tc_counters_ops_skipped;
  cJSON *training;   /* the raw "training" object (owned; MP_RAW_TRAINING), NULL when absent */
  bool forked;       /* written by a fork child */
  int64_t raw_calls; /* the file's "calls": hooked calls seen, failed ones included */
  int64_t failed_calls;
  int64_t not_attributed; /* the file's "not_attributed": calls in no site */
  int64_t nvtx_marks, nvtx_start_end_ranges;
  char *nonfinite_site_key; /* key of the site of training.first_nonfinite, or NULL */
  /* its t_ns to the nanosecond (the "training" tree holds it through a
   * double); has_ false: read it from the tree */
  bool has_nonfinite_t_ns;
  int64_t nonfinite_t_ns;
  /* "capture" (MP_RAW_CAPTURE): has_capture false in files without it (all recorded). */
  bool has_capture;
  char *capture_mode; /* "all", "cudaProfilerApi", "nvtx", "steps" */
  char *capture_nvtx; /* or NULL */
  bool has_capture_steps;
  int64_t capture_first, capture_last;
  int64_t capture_captured, capture_not_started, capture_stopped;
  bool capture_never_opened; /* "opened": false (the range never opened) */
  /* "timeline" (MP_RAW_TIMELINE); -1: not in the file */
  int64_t max_events, events_dropped, max_ranges, ranges_dropped, kernel_events_dropped;
  size_t n_sites, n_events;
  uint64_t calls; /* summed over the file's sites */
} mpprof_process;

typedef struct mpprof_kernel {
  const char *name; /* interned (the model's strings) */
  uint64_t count;
  uint64_t gpu_ns;
  int counters_tc;      /* -1: not measured; 0/1 from --tc-counters */
  uint64_t tc_profiled; /* --tc-counters: launches measured */
  int n_tc_values;      /* summed metric values, in the process's tc_counters.metrics order */
  double tc_values[4];
  mp_kernel_class cls; /* filled by the Tensor Core pass */
} mpprof_kernel;

typedef struct mpprof_role_stats {
  const char *role; /* "A", "D", "x", ... (interned) */
  mpprof_cstats st;
} mpprof_role_stats;

typedef struct mpprof_count {
  const char *name; /* interned */
  uint64_t n;
} mpprof_count;

/* Shadow execution of a site (or merged over a layer's sites): report/shadow.c. */
#define MPPROF_SH_SKIP_COUNT MP_RAW_SHADOW_SKIP_COUNT /* rows of MP_RAW_SHADOW_SKIPPED */
#define MPPROF_FP8_RECIPES 3                          /* fp8_current, fp8_delayed, mxfp8 */
typedef struct mpprof_shadow_cand {
  uint64_t calls;
  mp_shadow_metrics worst;
  double *samples; /* rel_l2 values pooled for the median */
  size_t n;
  /* Some site measured here had its inputs already rounded to this
   * candidate's format (mp_shadow_inputs_already_rounded of its A and B):
   * the error excludes their rounding (set by mpprof_shadow_layers). */
  bool inputs_rounded;
} mpprof_shadow_cand;
typedef struct mpprof_shadow {
  uint64_t calls;
  uint64_t skipped[MPPROF_SH_SKIP_COUNT];
  mpprof_shadow_cand cand[MP_SH_COUNT];
} mpprof_shadow;

/* A convolution's dimensions, out of the site record (most sites are GEMMs). */
typedef struct mpprof_conv {
  int64_t dims[7]; /* n c h w k r s */
  int64_t pad[2], stride[2], dil[2];
  int64_t groups; /* >= 1 (absent: 1) */
  /* 3-D (three): x's depth, the filter's, the depth's pad, stride, dilation
   * (an implausible d or t: 0, unknown, as the other dims) */
  bool three;
  int64_t d, t, pad_d, stride_d, dil_d;
} mpprof_conv;

/* What mp_tc_eligible says of a site, with its reason interned (the
 * model's strings) instead of a 160-byte buffer in every site record. */
typedef struct mpprof_site_elig {
  bool eligible, efficient, tf32, eligible_with_tf32; /* mp_tc_eligibility's */
  const char *reason; /* never NULL once the Tensor Core pass ran: "" when none */
  const char *path;   /* static, or NULL */
} mpprof_site_elig;

typedef struct mpprof_site {
  char *key; /* identity: the site's non-merged fields as a key-sorted JSON object */
  /* The strings but key and layer_name are interned (the model's strings). */
  const char *layer; /* raw NVTX path */
  char *layer_name;  /* the layer it belongs to: path without phase markers (set by finish) */
  /* Raw "module_class" (a framework scope's module) or NULL, and raw "phase"
   * (a framework scope's, as an mpprof_phase; 0: none, from the path's words). */
  const char *module_class;
  int scope_phase;
  const char *api, *op;
  const char *compute_type, *math_mode, *scale_type, *epilogue;
  struct {
    char role[8];
    mp_dtype dtype;
  } types[6];
  int n_types;
  double loss_scale; /* declared loss scale in force for its calls; 0: none declared */
  uint64_t m, n, k, batch, lda, ldb, ldc, ldd;
  /* Raw "shapes_merged": calls of several shapes past MPPROF_MAX_SITES, m,
   * n, k, lds and conv unknown (0, NULL). */
  bool shapes_merged;
  /* Raw "fast_accum": cuBLASLt FAST_ACCUM set (FP8 partial sums not
   * promoted periodically: shadow execution's `current` does not model it). */
  bool fast_accum;
  char transa, transb; /* 0: not a GEMM */
  const char *conv_math_type;
  unsigned fp8_scales; /* bit i: row i of MP_RAW_FP8_SCALES */
  mpprof_conv *conv;   /* owned; NULL: not a convolution */

  /* merged */
  uint64_t calls, scanned_calls, autotune_calls;
  mpprof_count *not_scanned;
  size_t n_not_scanned;
  mpprof_count *ranks;
  size_t n_ranks;
  /* A site of the model (staged or added) keeps its tensors packed (tpack,
   * some 300 bytes instead of 1.3 KB of records and histograms; pending.c),
   * tensors NULL; a site being parsed or merged has the records. n_tensors
   * counts them either way. Read them with mpprof_site_tensors. */
  mpprof_role_stats *tensors;
  size_t n_tensors;
  unsigned char *tpack;
  size_t tpack_len;
  bool has_gpu_ns;
  uint64_t gpu_ns;
  mpprof_kernel *kernels;
  size_t n_kernels;
  unsigned ptr_align;     /* 0: unknown */
  mpprof_fp8_values *fp8; /* MP_RAW_FP8_VALUE; NULL: none read or unread (all zero) */
  int cc_major, cc_minor;
  mpprof_shadow *shadow; /* NULL: not shadowed */

  /* derived */
  size_t id;        /* report-wide id (index in model.sites after sorting) */
  size_t layer_idx; /* index in model.layers */
  mpprof_phase phase;
  mpprof_site_elig elig;
  bool elig_known; /* a GEMM/conv with decodable dtypes */
  int tc_used;     /* -1 unknown, 0, 1 */
  mp_tc_source tc_source;
  uint64_t kernel_ns, tc_ns, unknown_ns; /* kernel GPU time split by verdict */
  uint64_t elements;      /* elements scanned over all roles (impact without GPU time);
                           * set when the tensors are packed, else by mpprof_model_finish */
  uint64_t flop_per_call; /* 2*m*n*k*batch (convs: of the implicit GEMM); 0 unknown */
} mpprof_site;

typedef struct mpprof_event {
  uint32_t proc;
  uint32_t site; /* report-wide site id */
  int64_t t_ns, dur_ns;
  uint64_t thread;
  uint64_t stream;
  int64_t call; /* the call's index in its site; -1: not in the file */
} mpprof_event;

/* An NVTX push/pop range (raw "ranges"). */
typedef struct mpprof_range {
  uint32_t proc;
  uint32_t depth;
  uint64_t thread;
  int64_t start_ns, end_ns;
  char *name;
} mpprof_range;

/* A kernel of a recorded call (raw "kernel_events"). */
typedef struct mpprof_kevent {
  uint32_t proc;
  uint32_t site; /* report-wide site id */
  uint32_t call; /* low 32 bits of the call's index in its site */
  uint64_t stream;
  int64_t start_ns, end_ns;
  char *name;
} mpprof_kevent;

/* A share: num of den values of one tensor, in percent. Every share the
 * report prints is one of these, made by mpprof_share_of (util.c) with the
 * denominator "finite non-zero values of <tensor> over all scanned calls". */
typedef struct mpprof_share {
  const char *tensor; /* layer tensor name ("backward.D"); NULL: no such tensor */
  uint64_t num, den;
  double pct;
  bool estimate; /* from an unscaled histogram with a straddling binade */
} mpprof_share;

/* Tensor classes: mp_tclass (analysis/verdict.h). */
typedef struct mpprof_layer_tensor {
  char *name; /* "<phase>.<role>", e.g. "backward.D" */
  mp_tclass cls;
  bool output;            /* written by the op (D, y, dx, dw) */
  mpprof_cstats st;       /* gradients: unscaled (true values); others as recorded */
  mpprof_cstats at_scale; /* gradients: as recorded, at the applied scale; else empty */
  mp_advice adv;
  bool has_values;             /* finite non-zero values present */
  uint64_t scanned_calls;      /* scanned calls of the sites it merges */
  double scale_min, scale_max; /* declared scales of its sites (0: none declared) */
  bool scale_undeclared;       /* some site ran with no declared scale */
  bool unscale_estimate;       /* unscaled histogram not exact: a scale not a power of two */
  bool casts_estimate;         /* unscaled cast counts: a binade across a threshold decided some */
  /* A forward fp16 output: the +-Inf its sites' ops made from finite inputs
   * (a site counts when no input role of it held NaN or Inf in its scanned
   * calls, and one was scanned; and when it is marked forward or ran under no
   * declared loss scale > 1, else the output may be a scaled gradient): fp16
   * overflowed there, by an unknown amount.
   * Counted as fp16 overflow in the share (numerator and base) and the
   * advice, as saturated fp8 values are. */
  uint64_t op_infs;
  /* NaN/Inf of its fp32/fp64 output records that their op made from finite
   * inputs, at sites where no loss scale > 1 can explain them (marked
   * forward, or under no declared scale above 1): the wide format itself
   * failed (mp_verdict_tensor.nonfinite_wide). */
  uint64_t wide_nonfinite;
  /* st.saturated by the fp8 format its sites stored (mpprof_saturated_formats'
   * order): st.dtype is lost (MP_DTYPE_INVALID) where sites of different
   * dtypes merge, e.g. an fp8 D and a bf16 D in one layer. */
  uint64_t saturated_as[2];
} mpprof_layer_tensor;

/* The formats of mpprof_layer_tensor.saturated_as, in its order (util.c). */
extern const mp_dtype mpprof_saturated_formats[2];

/* What gradients never seen finite and non-zero held (MP_REASON_GRAD_NEVER_SEEN
 * covers both): every value zero, every value Inf/NaN, or some of each. */
typedef enum mpprof_dead_kind {
  MPPROF_DEAD_NONE = 0,
  MPPROF_DEAD_ZERO,
  MPPROF_DEAD_NONFINITE,
  MPPROF_DEAD_BOTH
} mpprof_dead_kind;
/* Of `count` values of which none is finite and non-zero, `zeros` zero and
 * `nonfinite` NaN or Inf. NONE when count is 0. */
mpprof_dead_kind mpprof_dead_kind_of(uint64_t count, uint64_t zeros, uint64_t nonfinite);
/* "zero", "Inf/NaN", "zero or Inf/NaN" (NONE: ""): the one wording of the
 * reason everywhere it is shown (report.json's reasons, the summary, the page). */
const char *mpprof_dead_kind_text(mpprof_dead_kind k);

typedef struct mpprof_layer_advice {
  bool known; /* some forward/gradient tensor had values */
  mp_recommendation rec;
  bool has_window; /* gradients present and their windows intersect */
  int window_lo, window_hi;
  int beyond_lo, beyond_hi; /* scales past the search range that fit too (mp_advice) */
  bool window_estimate;
  bool has_gradients;
  int fp8_e4m3_fits; /* -1: no forward tensors, or no verdict */
  int fp8_e5m2_fits; /* -1: no gradients, or no verdict */
  /* Gradients scanned but never finite and non-zero: no verdict (known false).
   * Which they were: zero, Inf/NaN or both (MPPROF_DEAD_NONE: not dead). */
  int dead_gradients; /* an mpprof_dead_kind */
  cJSON *reasons;     /* array of strings */
} mpprof_layer_advice;

/* A backward-phase tensor stored in fp16 with at least this share of its
 * non-zero values (as recorded, at the applied scale) fp16 subnormals runs
 * below fp16's range: values under 2^-24 were flushed to zero when it was
 * written, before mpprof saw it (finding fp16_flush_edge, and a reason on a
 * verdict that leans on fp16 gradients). */
#define MPPROF_FLUSH_EDGE_SUBNORMAL_MIN 0.5

/* The class torch.compile wraps a compiled model in
 * (torch._dynamo.eval_frame.OptimizedModule): a layer of that class holds
 * every op of the compiled region (profiler/python/mpprof_torch). */
#define MPPROF_TORCH_COMPILED_CLASS "OptimizedModule"

typedef struct mpprof_layer {
  char *name;
  /* the module class of its first site with one (borrowed), or NULL */
  const char *module_class;
  unsigned phase_mask;        /* 1 << mpprof_phase */
  size_t first_site, n_sites; /* sites are sorted by layer: a contiguous range */
  uint64_t calls, gpu_ns, kernel_ns, tc_ns, elements;
  uint64_t scanned_calls; /* of calls: those whose tensors were scanned */
  bool has_gpu_ns;
  mpprof_layer_tensor *tensors;
  size_t n_tensors;
  mpprof_layer_advice adv;
  int tc_eligible; /* -1 unknown, 0, 1 (any site eligible) */
  /* some site is not eligible as called but TF32 would make it */
  bool tc_eligible_with_tf32;
  int tc_used; /* -1 unknown, 0, 1 (any site on Tensor Cores) */
  mp_tc_source tc_source;
  /* Shares (docs/report.md, mpprof_share): each the worst forward or gradient
   * tensor's, named by *_tensor (NULL: none); gradients unscaled, at scale 1. */
  mpprof_share fp16_overflow, fp16_underflow, bf16_overflow, bf16_underflow;
  mpprof_share e4m3_underflow, e5m2_underflow; /* at per-tensor scale */
  /* The same for gradients at the loss scale the program applied. */
  mpprof_share applied_fp16_overflow, applied_fp16_underflow;
  /* NaN and +-Inf of the layer's tensor (any class) with the largest share
   * of them over all its scanned values (mpprof_nonfinite_share_of). */
  mpprof_share nonfinite;
  mpprof_shadow *shadow;                      /* merged over its sites; NULL: none shadowed */
  mpprof_shadow_cand fp8[MPPROF_FP8_RECIPES]; /* HYBRID recipes (no samples) */
  int best_fp8;                               /* recipe with the least rel_l2; -1 none */
} mpprof_layer;

typedef struct mpprof_skipped {
  char *file;
  char *reason;
} mpprof_skipped;

typedef struct mpprof_finding {
  char *kind;     /* "fp16_overflow", "gradient_underflow", "fp32_without_tf32", ... */
  char *severity; /* "high" | "medium" | "low" | "info" */
  char *layer;    /* NULL when not about one layer */
  char *message;
  char *action;
  cJSON *evidence; /* object (owned) */
  uint64_t impact_gpu_ns, impact_elements;
} mpprof_finding;

/* Of a layer that would run in fp16 (verdict fp16 or fp16_loss_scale, with
 * a window), the gradient with the largest share of fp16 subnormals
 * unscaled, when that share is at least MP_ADVICE_FP16_SUBNORMAL_NOTE; else
 * NULL. */
const mpprof_layer_tensor *mpprof_subnormal_gradient(const mpprof_layer *l);

typedef struct mpprof_applied_scale {
  bool applicable; /* some fp16/fp16_loss_scale layer has gradients */
  bool has_window;
  int window_lo, window_hi; /* inside the search range (mpprof_model.params) */
  /* Scales past the search range that fit too (mp_advice's, of the
   * intersection): the true edges are window_lo - beyond_lo, window_hi +
   * beyond_hi (mp_loss_scale_edges_text says them beside the window). */
  int beyond_lo, beyond_hi;
  int recommended_log2;
  bool needed;     /* 0 is not in the window, or flush_edge, or subnormal */
  bool flush_edge; /* an fp16 layer's gradient was mostly subnormal as recorded */
  /* 0 is in the window, but an fp16 layer's gradient has at least
   * MP_ADVICE_FP16_SUBNORMAL_NOTE of its values fp16 subnormals unscaled
   * (fewer than 11 significant bits): a scale keeps them normal (finding
   * fp16_subnormal) */
  bool subnormal;
  cJSON *limited_by; /* array of layer names */
  /* What the program applied (raw "training" objects and site scales). */
  bool declared;             /* some site ran under a declared scale */
  bool undeclared_gradients; /* gradient tensors with values ran with no declared scale */
  bool undeclared_nonfinite; /* some such gradient holds Inf/NaN */
  bool undeclared_unfit;     /* some such gradient is not fp16-safe at scale 1 */
  /* Layers with gradient values, and of them those with some gradient site
   * under no declared scale (where the run declared one for others). */
  size_t grad_layers, undeclared_layers;
  char *note;                   /* mpprof_loss_scale_note's (owned), NULL: none */
  double first, last, min, max; /* over declared scales (0 when none) */
  const char *source;           /* "marks", "option", NULL */
  uint64_t steps_marked, skipped_steps;
  cJSON *per_step; /* array of {first, last, scale} (owned), from step marks */
} mpprof_applied_scale;

/* The applied scale is unknown when no site ran under a scale the program
 * declared (marks, --loss-scale, a GradScaler's feed) and the gradients need
 * one: some holds Inf/NaN, is not fp16-safe at scale 1, or `needed` (the
 * report's own loss-scale line says so). The figures then assume 1. */
bool mpprof_loss_scale_unknown(const mpprof_applied_scale *g);
/* Why the gradients need a scale (the finding's words), "" when they don't. */
const char *mpprof_loss_scale_unknown_why(const mpprof_applied_scale *g);
#define MPPROF_LOSS_SCALE_UNKNOWN_NOTE "applied loss scale unknown; figures assume 1"
/* Gradients were seen and the program declared no loss scale (no marks, no
 * --loss-scale, no GradScaler feed): every loss-scale figure (the window, the
 * recommended scale, "needed", the plan's GradScaler) is of the gradients as
 * computed, which a scale applied by hand has already multiplied. */
bool mpprof_loss_scale_as_computed(const mpprof_applied_scale *g);
/* What the loss-scale figures are relative to where some gradients ran under
 * no declared scale, NULL where all ran under one (or none was seen): every
 * one (mpprof_loss_scale_as_computed): MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE;
 * some, while the run declared a scale for others: "for the gradients of N
 * of M layers (NAME, ... and K more): " MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE
 * (their figures are as computed, the others' unscaled). Said wherever a
 * loss-scale recommendation is stated: the terminal and HTML summaries,
 * report.json (summary.loss_scale_note, loss_scale.applied.note), an fp16
 * plan's headline (so its snippet's first comment), plan.json, and mpprof
 * diff's plan loss-scale row (of the whole-run note). */
const char *mpprof_loss_scale_note(const mpprof_applied_scale *g);
#define MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE                                                         \
  "no loss scale declared: loss-scale figures are relative to the gradients as computed; a "       \
  "scale applied by hand must be declared with --loss-scale S for advice in unscaled terms"
/* A declared scale: where it came from ("--loss-scale", "the program's "
 * loss_scale marks or GradScaler"), and what it does to the figures. */
const char *mpprof_loss_scale_source_text(const mpprof_applied_scale *g);
#define MPPROF_LOSS_SCALE_DECLARED_NOTE                                                            \
  "gradients are divided by it: loss-scale figures are in unscaled terms"
/* The loss-scale line's clause on why a scale is needed although every
 * fp16 layer's gradients fit the window ("; needed all the same: ..."), ""
 * when the window alone says it is needed, NULL when it is not needed (each
 * output words that its own way). */
const char *mpprof_loss_scale_needed_clause(const mpprof_applied_scale *g);

typedef struct mpprof_nonfinite {
  bool found;
  size_t site; /* report site id */
  const mpprof_process *proc;
  uint64_t call_index, thread, t_ns;
  bool has_step, inputs_scanned;
  uint64_t step;
  double scale;
  char role[16];
  uint64_t count, nans, pos_infs, neg_infs;
} mpprof_nonfinite;

typedef struct mpprof_tc_summary {
  bool kernel_data; /* some site has kernel records */
  uint64_t gemm_conv_kernel_ns, tc_ns, unknown_ns;
  size_t sites_eligible, sites_on_tc, sites_eligible_not_used;
  size_t sites_eligible_with_tf32;             /* fp32 sites that TF32 would put on Tensor Cores */
  cJSON *cupti_notes;                          /* array of strings: per-process CUPTI problems */
  size_t kernels_by_counters, kernels_by_name; /* kernel entries whose verdict came from each */
  bool counters_requested;                     /* some process ran with --tc-counters */
  cJSON *counters_notes;         /* array of strings: per process, why counters did not decide */
  int counters_unavailable_note; /* index in counters_notes of the first process whose counters
                                    were unavailable or never ran; -1 none */
  int64_t counters_ops, counters_unmatched; /* calls profiled / without a verdict, all processes */
} mpprof_tc_summary;

/* util.c: t's subnormal share of non-zero values when t is at fp16's flush
 * edge (MPPROF_FLUSH_EDGE_SUBNORMAL_MIN), else 0. */
double mpprof_fp16_flush_edge(const mpprof_layer_tensor *t);

/* What a layer's verdict did not see, said beside it wherever it is stated
 * (the page's layer row, chart and summary, the terminal summary, the plan
 * line; layers.csv, report.json and plan.json as booleans): one wording each. */
#define MPPROF_GRADS_NOT_SEEN "gradients not seen"
#define MPPROF_MARK_FORWARD_ONLY "forward only, " MPPROF_GRADS_NOT_SEEN
#define MPPROF_MARK_FLUSHED "values flushed before mpprof saw them, so flush is a lower bound"
/* A run in which no layer with a verdict had gradients (eval only): said
 * once for all layers instead of beside each verdict. */
#define MPPROF_FORWARD_ONLY_NOTE MPPROF_MARK_FORWARD_ONLY ": every layer (no gradients in this run)"
/* The chart's gradient panel title when the layer has no gradient tensor. */
#define MPPROF_NO_GRADIENTS_PANEL "no gradients seen"
#define MPPROF_MARKS_MAX 160 /* mpprof_verdict_marks, mpprof_tally_marks */

/* plan.c: one recommended configuration for the whole program. */
#define MPPROF_PLAN_SNIPPET_LINES 50 /* keep_in() lines in the snippet; the rest: plan.json */
/* The summary's and the page's plan line when no layer has a verdict. */
#define MPPROF_NO_PLAN_TEXT                                                                        \
  "none: no layer has a verdict (no scanned values, or gradients never seen finite and non-zero: " \
  "each "                                                                                          \
  "layer's reasons say which)"

/* How a layer stands as an fp8 candidate (e4m3 forward, e5m2 gradients):
 * one definition for plan.json's "fp8" and the fp8_candidate finding. */
typedef enum mpprof_fp8_fit {
  MPPROF_FP8_NO,             /* no 16-bit verdict, or its values do not fit fp8's range */
  MPPROF_FP8_RANGE,          /* fits the range with per-tensor scaling; not shadowed (or within the
                              * limit only on inputs already fp8: no evidence) */
  MPPROF_FP8_MEASURED,       /* and its best measured fp8 recipe is within --shadow-max-rel */
  MPPROF_FP8_ERROR_TOO_HIGH, /* fits the range; its best measured recipe errs more */
} mpprof_fp8_fit;

/* A layer's gradients were never seen (mp_layer_verdict's fp8_e5m2_fits -1):
 * its fp8 fit is e4m3 forward only, e5m2 unverified. */
bool mpprof_layer_fp8_grads_unseen(const mpprof_layer *l);
/* The formats of n fp8 candidates of which n_unseen have no gradients seen:
 * "e4m3 forward, e5m2 gradients", else what was not seen. One spelling for
 * plan.json's summary (the page, the terminal) and the fp8_candidate finding. */
const char *mpprof_fp8_formats_text(size_t n, size_t n_unseen, char buf[96]);

/* plan.json's "fp8": the layers that could train in fp8 (HYBRID: e4m3
 * forward, e5m2 gradients), e.g. with Transformer Engine; autocast has no
 * fp8, so this is a list beside the plan, not part of it. */
typedef struct mpprof_fp8_plan {
  size_t n_range;        /* layers that fit fp8's range (mpprof_layer_fp8_fit != MPPROF_FP8_NO) */
  size_t n_fit;          /* of which candidates: range only, or measured within the limit */
  size_t n_measured;     /* of the candidates, those measured */
  size_t n_grads_unseen; /* of the candidates, those whose gradients were not seen */
  int recipe;       /* the best recipe all measured candidates share; -1 none, -2 they differ */
  double worst_ok;  /* the largest measured error among the candidates (0: none measured) */
  double least_bad; /* the least measured error of the layers rejected by it (+inf: none) */
  size_t least_bad_layer; /* that layer's index in model.layers */
  char *headline;         /* NULL when n_range is 0 */
} mpprof_fp8_plan;

typedef struct mpprof_plan_keep {
  size_t layer;   /* index in model.layers */
  mp_dtype dtype; /* MP_BF16 or MP_FP32: kept out of the autocast dtype */
} mpprof_plan_keep;

typedef struct mpprof_plan {
  bool known;        /* some layer had scanned values */
  mp_dtype autocast; /* MP_BF16 or MP_FP16 */
  bool scaler;       /* fp16 needs a loss scaler: GradScaler(init_scale=2^scale_log2) */
  int scale_log2, window_lo, window_hi;
  int beyond_lo,
      beyond_hi;          /* the window's true edges past the search range (mpprof_applied_scale) */
  size_t n_known, n_fit;  /* layers with values; of which run in the autocast dtype */
  mpprof_plan_keep *keep; /* layers kept out, in layer order */
  size_t n_keep;
  size_t n_unchecked, first_unchecked; /* layers without a verdict left in the autocast dtype */
  /* layers that fit whose measured error in the autocast dtype is within
   * --shadow-max-rel only on inputs already rounded to it (plan.c plan_rounded) */
  size_t n_rounded, first_rounded;
  /* layers that fit whose verdict is marked (mpprof_verdict_marks): no
   * gradients seen; values flushed before mpprof saw them */
  size_t n_grads_unseen, first_grads_unseen, n_flushed, first_flushed;
  /* Over the layers in the autocast dtype, under the plan: forward tensors
   * as recorded, gradients multiplied by the plan's loss scale
   * (2^scale_log2 with a scaler, else 1); max_pct_estimate: some figure is
   * an upper bound (a binade straddles the threshold at that scale). */
  double max_overflow_pct, max_flush_pct;
  bool max_pct_estimate;
  bool no_autocast; /* every layer kept in fp32: the snippet has no autocast region */
  char *headline;
} mpprof_plan;

typedef struct mpprof_model {
  mpprof_process *procs;
  size_t n_procs, cap_procs;
  mpprof_skipped *skipped;
  size_t n_skipped, cap_skipped;
  long *still_running; /* pids (mpprof_report_options.still_running), owned */
  size_t n_still_running;
  long exited_pid; /* mpprof_report_options.exited_pid and exit_status */
  int exit_status;
  long killed_pid; /* mpprof_report_options.killed_pid and killed_signal */
  int killed_signal;
  /* The pid mpprof run launched when no raw file read is its (0 otherwise):
   * mpprof_program_without_raw_file says what that means. */
  long program_without_raw_file;
  mpprof_site *sites;
  size_t n_sites, cap_sites;
  mpprof_event *events;
  size_t n_events, cap_events;
  mpprof_range *ranges;
  size_t n_ranges, cap_ranges;
  mpprof_kevent *kevents;
  size_t n_kevents, cap_kevents;
  mpprof_layer *layers;
  size_t n_layers;
  mpprof_finding *findings;
  size_t n_findings, cap_findings;
  mpprof_applied_scale loss_scale;
  mpprof_plan plan, plan_alt; /* recommended, and the other autocast dtype (or unknown) */
  mpprof_fp8_plan plan_fp8;   /* the fp8 candidates beside the plan */
  mpprof_nonfinite first_nonfinite;
  mpprof_tc_summary tc;
  bool incomplete;
  char *program;
  const cJSON *program_argv; /* the argv `program` joins: the root process's (NULL: none) */
  /* total_calls: the sites' calls and the processes' calls in no site
   * (not_attributed, also summed apart); merged_calls: those in sites of
   * merged shapes. */
  uint64_t total_calls, total_gpu_ns, not_attributed, merged_calls;
  size_t merged_sites;
  uint64_t total_scanned_calls; /* calls whose tensors were scanned, summed over the sites */
  bool has_gpu_ns;
  mpprof_strpool strings; /* the sites' interned strings */
  mpprof_tb pack;         /* scratch of mpprof_site_pack_tensors */
  /* site key -> index hash */
  size_t *hash;
  size_t hash_cap;
  mpprof_phase_rules phases;
  mp_advice_params params;
  double shadow_max_rel; /* --shadow-max-rel; 0: MP_SHADOW_DEFAULT_MAX_REL */
  bool forward_only;     /* layers have verdicts, none of them gradients: an eval-only run */
  bool has_shadow;       /* some site was shadowed: verdicts use measured errors */
  /* mpprof_report_options.raw_origin and its ctx (warnings name the input) */
  const char *(*raw_origin)(void *ctx, const char *name);
  void *raw_origin_ctx;
} mpprof_model;

/* util.c */
/* A verdict judged without gradients (advice.has_gradients false); not
 * marked per layer when model.forward_only (MPPROF_FORWARD_ONLY_NOTE). */
bool mpprof_layer_grads_unseen(const mpprof_model *m, const mpprof_layer *l);
/* A verdict that leans on fp16 (fp16, fp16_loss_scale) judged from values
 * computed from a tensor at fp16's flush edge (mpprof_fp16_flush_edge):
 * what was flushed before mpprof saw it is in none of its shares. */
bool mpprof_layer_flushed_unseen(const mpprof_layer *l);
/* " (mark; mark)" beside a layer's verdict, "" when it has none. */
const char *mpprof_verdict_marks(const mpprof_model *m, const mpprof_layer *l,
                                 char buf[MPPROF_MARKS_MAX]);
/* " (mark: n; mark: n)" beside a tally of the layers with verdict rec, ""
 * when none of them is marked. */
const char *mpprof_tally_marks(const mpprof_model *m, mp_recommendation rec,
                               char buf[MPPROF_MARKS_MAX]);
/* Why layer l has no verdict (!l->adv.known), the one wording the terminal
 * summary and the page show: "its gradients were Inf/NaN in every scanned
 * call" (mpprof_dead_kind_text), "no forward tensor or gradient held a finite
 * non-zero value", or why no value was scanned. Returns buf or a literal. */
#define MPPROF_NO_VERDICT_TEXT_MAX 96
const char *mpprof_no_verdict_text(const mpprof_model *m, const mpprof_layer *l,
                                   char buf[MPPROF_NO_VERDICT_TEXT_MAX]);

/* model.c */
/* s's FP8 scalars; all zero (nothing read or unread) when it has none. */
const mpprof_fp8_values *mpprof_site_fp8(const mpprof_site *s);
/* What the processes' capture ranges recorded (raw "capture"), summed. */
typedef struct mpprof_capture_sum {
  bool any;         /* some process had a capture range (mode other than "all") */
  const char *mode; /* the processes' mode; "mixed" when they differ */
  const char *nvtx; /* mode nvtx: the range name (first process's) */
  bool has_steps;
  int64_t first, last;
  int64_t captured, not_started, stopped;
  size_t procs;         /* processes with a capture range */
  size_t never_opened;  /* of those, processes whose range never opened */
  int64_t steps_marked; /* step marks those processes made (training.steps.marked) */
} mpprof_capture_sum;
void mpprof_capture_summary(const mpprof_model *m, mpprof_capture_sum *ret);
/* The devices the run's processes used, as the summary and the page name
 * them: each name once, in the order of the processes ("no GPU" for a
 * process without one), at most MPPROF_DEVICES_NAMED of them and then "and N
 * more"; "none" without processes. *ret_sim when one is simcuda. Returns
 * how many distinct names there are. */
#define MPPROF_DEVICES_NAMED 4
/* Layers a one-line text names (the plan's headlines, finding messages,
 * hence the terminal summary) before "and N more"; the JSON beside it
 * (plan.json, the finding's evidence) lists them all. */
#define MPPROF_LAYERS_NAMED 4
/* matrix_kernels_not_hooked is medium at or above this share of the matrix
 * kernels' GPU time (hooked ops' kernels and these), info below. */
#define MPPROF_NOT_HOOKED_SHARE_MEDIUM 0.10
size_t mpprof_devices_text(const mpprof_model *m, char *buf, size_t n, bool *ret_sim);
/* The same from n_procs processes' device names (name_of(ctx, i), NULL for
 * a process without a device): a run read back from report.json. */
size_t mpprof_device_list_text(const char *(*name_of)(const void *ctx, size_t i), const void *ctx,
                               size_t n_procs, char *buf, size_t n, bool *ret_sim);
/* Said beside the device wherever one is simcuda (report.html, diff.html). */
#define MPPROF_SIM_DEVICE_NOTE "the CPU stand-in: GPU times are not meaningful"
/* One sentence for the summaries, "" when nothing was left out by a capture range. */
void mpprof_capture_sentence(const mpprof_capture_sum *c, char *buf, size_t n);
/* No call was recorded but some ran outside the capture range: how many (else 0). */
int64_t mpprof_capture_all_outside(const mpprof_model *m);
/* Of total_calls, those past the site cap, for the headlines: "; N calls in
 * S sites of merged shapes (past MPPROF_MAX_SITES), M calls in no site (...)",
 * each part only when not 0; "" when both are. */
void mpprof_calls_past_cap_text(const mpprof_model *m, char *buf, size_t n);
/* Raw files were there but every one was skipped: no process was read. */
static inline bool mpprof_model_all_skipped(const mpprof_model *m) {
  return m->n_procs == 0 && m->n_skipped > 0;
}
void mpprof_model_init(mpprof_model *m);
void mpprof_model_free(mpprof_model *m);
void mpprof_site_free(mpprof_site *s);
/* Frees what p owns and zeroes it; NULL-safe. The model's records and the
 * raw reader's one being filled both go through it. */
void mpprof_process_free(mpprof_process *p);
/* Merge a parsed site (taken over: *s is emptied) into the model. 0 or -1. */
int mpprof_model_add_site(mpprof_model *m, mpprof_site *s, size_t *ret_idx);
/* A record for a site of a file being read, after the model's sites (at
 * index n_sites + k for its k-th new site): the file's new sites are parsed
 * into them before it validates, the model does not hold them until
 * mpprof_model_add_staged. Its index (valid until the array grows), or
 * SIZE_MAX (memory). Pointers into m->sites do not survive it. */
size_t mpprof_model_stage(mpprof_model *m, size_t k);
/* Add the site staged at index at as mpprof_model_add_site adds (its
 * record there emptied); sites staged at a greater index stay staged. */
int mpprof_model_add_staged(mpprof_model *m, size_t at, size_t *ret_idx);
/* The index of the site with this key, or SIZE_MAX (before mpprof_model_finish). */
size_t mpprof_model_find_site(const mpprof_model *m, const char *key);
/* Merge *s (taken over and emptied; its identity fields may be missing) into
 * site idx. 0 or -1. */
int mpprof_model_merge_site(mpprof_model *m, size_t idx, mpprof_site *s);
int mpprof_model_add_skipped(mpprof_model *m, const char *file, const char *reason);
/* Sort sites, renumber events, build layers. 0 or -1. */
int mpprof_model_finish(mpprof_model *m);

/* stats_text.c: a site's raw "tensors" object, the value at p (n bytes
 * from there to the end of the site), in mpprof's own spelling straight into
 * compact records, without cJSON: 1 (*ret: *ret_n records, owned by the
 * caller; *ret_len: the value's length), 0 when the text is anything else
 * (read it with cJSON and mpprof_stats_from_json, which accepts it or says
 * what is wrong), -1 out of memory. */
int mpprof_tensors_scan(mpprof_strpool *pool, const char *p, size_t n, mpprof_role_stats **ret,
                        size_t *ret_n, size_t *ret_len);

/* raw_reader.c: read every .json file in dir/raw into the model; warnings on
 * warn (may be NULL). 0, or -1 with ret_error set (may be NULL). */
int mpprof_read_raw_dir(mpprof_model *m, const char *out_dir, FILE *warn, mpprof_error *ret_error);
/* One file; 0 on success, 1 when skipped (reason recorded), -1 out of memory. */
int mpprof_read_raw_file(mpprof_model *m, const char *path, FILE *warn);
/* An element's text t (n bytes: a site, an event, a range) as
 * cJSON_ParseWithLength parses it, the same tree (NULL where that fails),
 * most of it built without cJSON's parse. */
cJSON *mpprof_object_tree(const char *t, size_t n);
/* Bytes a raw file is read by (1 MiB; a larger value or element grows the
 * window). Tests make it tiny so that every value crosses a window's end. */
extern size_t mpprof_raw_window;
/* Sites and events in mpprof's own spelling are read without cJSON (true);
 * false reads every one through cJSON, as tests do to compare the two. */
extern bool mpprof_raw_fast_sites;
extern size_t mpprof_raw_fast_sites_read;  /* sites read so, counted for tests */
extern size_t mpprof_raw_fast_events_read; /* events read so (event_fast), likewise */

/* advise.c */
/* The global loss scale (m->loss_scale's window, recommendation, needed,
 * limited_by) from the layers' verdicts as they are: in mpprof_advise_layers,
 * and again after the measured check moved some (mpprof_shadow_layers). */
int mpprof_global_loss_scale(mpprof_model *m);
int mpprof_advise_layers(mpprof_model *m);

/* shadow.c */
int mpprof_shadow_parse(const cJSON *o, mpprof_shadow **ret, char *err, size_t errlen);
int mpprof_shadow_merge(mpprof_shadow **dst, const mpprof_shadow *src);
void mpprof_shadow_free(mpprof_shadow *s);
/* Per layer: merge, best fp8 recipe, verdict check (after mpprof_advise_layers). */
int mpprof_shadow_layers(mpprof_model *m);
double mpprof_shadow_max_rel(const mpprof_model *m);
/* 1: layer l's measured worst rel_l2 of candidate c is within
 * --shadow-max-rel; MPPROF_SHADOW_WITHIN_ROUNDED: within, but measured on
 * inputs already rounded to c's format (mpprof_shadow_cand.inputs_rounded),
 * so no evidence that rounding them is harmless; 0: above it (or
 * non-finite; with inputs_rounded too: their rounding would only add to it);
 * -1: c was not measured. */
#define MPPROF_SHADOW_WITHIN_ROUNDED 2
int mpprof_shadow_layer_within(const mpprof_model *m, const mpprof_layer *l, mp_shadow_cand c);
/* The same for one measured candidate record (a layer's fp8 recipe). */
int mpprof_shadow_cand_within(const mpprof_model *m, const mpprof_shadow_cand *c);
/* What is said wherever such a measurement is shown or used: "measured on
 * operands already <fmt> or of fewer mantissa bits: excludes their rounding". */
#define MPPROF_SHADOW_ROUNDED_NOTE                                                                 \
  "measured on operands already %s or of fewer mantissa bits: the error excludes their rounding, " \
  "paid before "                                                                                   \
  "the op"
/* report.json summary.verdict_basis of a run with something shadowed, and of
 * one without (docs/report.md, "Measured error"). */
#define MPPROF_VERDICT_BASIS_MEASURED "range_and_measured_error"
#define MPPROF_VERDICT_BASIS_RANGE "range_only"
/* report.json summary keys: the verdicts' basis (one of the above), and the
 * --shadow-max-rel limit, a key also of plan.json, diff.json and findings'
 * evidence. */
#define MPPROF_K_VERDICT_BASIS "verdict_basis"
#define MPPROF_K_SHADOW_MAX_REL "shadow_max_rel"
/* The tooltip of a measured error so marked (with a dagger) on every page
 * that shows one (report.html, diff.html); %s: the candidate's format. */
#define MPPROF_SHADOW_ROUNDED_TITLE                                                                \
  MPPROF_SHADOW_ROUNDED_NOTE "; no verdict counts it as evidence that rounding them is harmless"
/* What the measured error of `current` is, wherever it is shown (report.html's
 * column title, diff.html's sentence). */
#define MPPROF_SHADOW_CURRENT_DEF                                                                  \
  "relative L2 error of the precision the op runs in now (its own dtypes, compute type, fp8 "      \
  "scales and output type) against the same reference, worst call: what the program already "      \
  "pays in the op, from its operands as they are (not their earlier rounding)"
/* A site's candidate c: mp_shadow_inputs_already_rounded of its A and B. */
bool mpprof_site_inputs_rounded(const mpprof_site *s, mp_shadow_cand c);
/* What a layer or site without a name (ops outside every NVTX range or
 * module) is called wherever one is shown. */
#define MPPROF_NO_LAYER_LABEL "(no NVTX range)"
const char *mpprof_layer_label(const mpprof_layer *l);
const char *mpprof_site_layer_label(const mpprof_site *s);
const char *mpprof_fp8_recipe_name(int r);
/* Transformer Engine's class for recipe r ("DelayedScaling", ...), or NULL. */
const char *mpprof_fp8_recipe_te(int r);
cJSON *mpprof_shadow_json(const mpprof_shadow *s, const mpprof_layer *l); /* l: layer extras */
/* tensor_cores.c */
int mpprof_tensor_cores(mpprof_model *m); /* 0 or -1 (memory) */
/* The FLOP of one GEMM call of m x n x k and batch (0 reads as 1), 2mnk per
 * product, in *ret; false (and *ret 0) when it passes 2^64 - 1. */
bool mpprof_gemm_flop(uint64_t m, uint64_t n, uint64_t k, uint64_t batch, uint64_t *ret);
/* findings.c: one rule per finding kind (see the table there). */
int mpprof_build_findings(mpprof_model *m);
typedef struct mpprof_finding_rule {
  const char *kind;
  int (*layer)(mpprof_model *m, const mpprof_layer *l); /* per layer with a verdict, or NULL */
  int (*model)(mpprof_model *m);                        /* once per report, or NULL */
  bool note; /* about the data: listed after the ranked problems */
  /* layer rule that runs for layers without a verdict too: its fact (a
   * forward value beyond fp16) stands without the gradients' */
  bool any_layer;
} mpprof_finding_rule;
extern const mpprof_finding_rule mpprof_finding_rules[];
extern const size_t mpprof_n_finding_rules;
/* Run one rule on the model (tests): its findings are appended, unranked. 0 or -1. */
int mpprof_finding_rule_run(mpprof_model *m, const mpprof_finding_rule *r);
/* The ranks of the declared world no process read was (finding
 * ranks_missing): "ranks 1, 3 of 4 not seen: ..." (malloc'd), NULL when
 * none is missing, no process knew its world size, processes disagree on it,
 * or memory ran out. *ret_world_size, *ret_missing (when not NULL): the world
 * size and how many ranks are missing. */
char *mpprof_missing_ranks(const mpprof_model *m, int64_t *ret_world_size, int64_t *ret_missing);
/* The words of finding process_without_raw_file, also the run's warning line
 * (malloc'd; NULL when memory ran out). */
char *mpprof_program_without_raw_file(long pid);
/* The pid mpprof run launched (exited or killed) when no process read has it
 * on this host and some other process was read; else 0. */
long mpprof_find_program_without_raw_file(const mpprof_model *m);

/* writers: set NULL renames the file when written, else the set's commit does
 * (util.c, mpprof_afile_set) */
typedef struct mpprof_afile_set mpprof_afile_set;
int mpprof_write_report_json(const mpprof_model *m, const char *path, mpprof_afile_set *set);
cJSON *mpprof_tc_summary_json(const mpprof_model *m); /* the "tensor_cores" object */
int mpprof_write_layers_csv(const mpprof_model *m, const char *path, mpprof_afile_set *set);
int mpprof_write_trace_json(const mpprof_model *m, const char *path, mpprof_afile_set *set);
int mpprof_write_report_html(const mpprof_model *m, const char *path, mpprof_afile_set *set);

/* plan.c */
int mpprof_build_plan(mpprof_model *m); /* after advice and the loss scale; 0 or -1 */
/* plan_fp8 alone, built anew (the fp8_candidate finding reads it) */
int mpprof_build_fp8_plan(mpprof_model *m);
void mpprof_plan_free(mpprof_model *m);
/* The PyTorch code of a plan (autocast, per-module exclusions, GradScaler). */
void mpprof_plan_snippet(const mpprof_model *m, const mpprof_plan *p, FILE *f);
/* Layer l as an fp8 candidate; *ret_measured: its best fp8 recipe's
 * aggregate when one was shadowed, else NULL. */
mpprof_fp8_fit mpprof_layer_fp8_fit(const mpprof_model *m, const mpprof_layer *l,
                                    const mpprof_shadow_cand **ret_measured);

int mpprof_write_plan_json(const mpprof_model *m, const char *path, mpprof_afile_set *set);

/* ops.c: per-site facts shown by the ops table and ops.csv (one definition each). */
int mpprof_write_ops_csv(const mpprof_model *m, const char *path, mpprof_afile_set *set);
/* GPU times are measured on a real GPU (no process ran on simcuda). */
bool mpprof_times_real(const mpprof_model *m);
/* The site's GPU time: its own gpu_ns, else its kernels' time; *ret_known says if any. */
uint64_t mpprof_site_gpu_ns(const mpprof_site *s, bool *ret_known);
/* Percent of the run's GPU time (of GEMM/conv kernel time without gpu_ns); -1 unknown. */
double mpprof_site_gpu_share_pct(const mpprof_model *m, const mpprof_site *s);
/* Achieved TFLOP/s: flop_per_call * calls / GPU time; -1 unless times are real. */
double mpprof_site_tflops(const mpprof_model *m, const mpprof_site *s);
/* TF32 applies: by compute type, math mode, cuDNN's default, or its kernels' names. */
bool mpprof_site_is_tf32(const mpprof_site *s);
/* An FP8 GEMM (A or B fp8) called with cuBLASLt's FAST_ACCUM: its kernels'
 * partial sums are not promoted to a wider accumulator periodically (the
 * flag has no effect on other dtypes). */
bool mpprof_site_fp8_fast_accum(const mpprof_site *s);
/* The dtypes of the GEMM a site is (a convolution's implicit one: x/w/dy by
 * its direction): A, B, C (D's when the call has none), D; MP_DTYPE_INVALID
 * where unknown. tensor_cores.c */
void mpprof_site_gemm_dtypes(const mpprof_site *s, mp_dtype *a, mp_dtype *b, mp_dtype *c,
                             mp_dtype *d);
/* Why a site's measured `current` (shadow execution) understates what its
 * kernels lose: FP8 fast accumulation (its partial sums are not modelled),
 * or a cuDNN op whose kernels ran TF32 (its engine's choice, not known at
 * the call: the shadow keeps fp32 inputs fp32), or may have (cuDNN's
 * default math allows TF32, no kernel names seen). */
typedef enum mpprof_understated {
  MPPROF_UNDERSTATED_NONE = 0,
  MPPROF_UNDERSTATED_FAST_ACCUM,
  MPPROF_UNDERSTATED_TF32_KERNELS,
  MPPROF_UNDERSTATED_TF32_POSSIBLE,
  MPPROF_UNDERSTATED_COUNT
} mpprof_understated;
mpprof_understated mpprof_site_current_understated(const mpprof_site *s);
/* A layer's: the strongest reason of its measured sites (the enum's order:
 * understated before may be understated), NONE when none has one. The
 * layer's `current` is the worst over its sites, so any site's reason
 * applies to it. */
mpprof_understated mpprof_layer_current_understated(const mpprof_model *m, const mpprof_layer *l);
/* report.json's name of u ("fp8_fast_accumulation", "tf32_kernels",
 * "tf32_possible"; NULL for none) and the page's sentence. */
const char *mpprof_understated_name(mpprof_understated u);
const char *mpprof_understated_text(mpprof_understated u);
/* The Measured error columns of a layer's or a site's row (the page's layer
 * and ops tables, layers.csv's and ops.csv's measured_* columns): which
 * candidate each shows and its marks, chosen once here (shadow.c). */
typedef struct mpprof_shadow_cell {
  const mpprof_shadow_cand *c; /* NULL: not measured (no call computed it) */
  const char *name;   /* report.json's name of it: the candidate's, or the layer's fp8 recipe's */
  const char *format; /* the dagger's note's format: "fp16", "bf16", "fp8" (HYBRID), "fp8_e4m3" */
  bool rounded;       /* the dagger: measured, finite, on inputs already in format */
} mpprof_shadow_cell;
typedef struct mpprof_shadow_row {
  const mpprof_shadow *sh; /* NULL: not shadowed (every cell empty) */
  /* now: `current`; fp16: as AMP runs it, loss-scaled (fp16_loss_scaled)
   * where the layer has gradients or the site is backward, else at scale 1;
   * bf16; fp8: the fp8 recipe (layer: HYBRID) or candidate (site: e4m3
   * forward, e5m2 backward) with the least worst rel_l2 */
  mpprof_shadow_cell now, fp16, bf16, fp8;
  bool fp16_loss_scaled; /* fp16 is the loss-scaled candidate (false: not shadowed) */
  /* now's * mark: why it understates the kernels' loss; NONE unless now is
   * measured and finite (an infinite error understates nothing) */
  mpprof_understated understated;
} mpprof_shadow_row;
void mpprof_layer_shadow_row(const mpprof_model *m, const mpprof_layer *l, mpprof_shadow_row *ret);
void mpprof_site_shadow_row(const mpprof_site *s, mpprof_shadow_row *ret);
/* "TF32 (compute 32F, math mode TF32_TENSOR_OP)", "32F", "16F, math mode X";
 * MPPROF_FAST_ACCUM_LABEL appended where mpprof_site_fp8_fast_accum. */
#define MPPROF_FAST_ACCUM_LABEL ", FP8 fast accumulation"
void mpprof_site_compute_label(const mpprof_site *s, char *buf, size_t n);
typedef struct mpprof_site_extra {
  char transa[4], transb[4];
  char fp8_scales[128]; /* "A=2 B=0.5 amax_D=4096": the FP8 scale pointers set, with the
                          values read (docs/report.md, the ops table) */
} mpprof_site_extra;
void mpprof_site_extra_of(const mpprof_site *s, mpprof_site_extra *ret);
/* A site of merged shapes (shapes_merged) says this instead of a shape. */
#define MPPROF_VARIOUS_SHAPES "various shapes (merged past MPPROF_MAX_SITES)"
/* "m=M n=N k=K", or MPPROF_VARIOUS_SHAPES */
void mpprof_site_mnk(const mpprof_site *s, char *buf, size_t n);
void mpprof_site_shape(const mpprof_site *s, char *buf, size_t n);  /* "MxNxKxBATCH" or conv dims */
void mpprof_site_dtypes(const mpprof_site *s, char *buf, size_t n); /* "A=fp16 B=fp16 D=fp32" */

/* PNG chart of a layer's exponent histograms; malloc'd PNG bytes. 0 or -1. */
/* The loss scale (log2) whose fp16 range a layer's chart marks. */
int mpprof_chart_scale(const mpprof_model *m, const mpprof_layer *l);
/* Charts are MPPROF_CHART_W x MPPROF_CHART_H CSS pixels, drawn at twice that. */
#define MPPROF_CHART_W 1000
#define MPPROF_CHART_H 312
/* The binade range shared by the charts of the layers marked in charted[]. */
void mpprof_chart_range(const mpprof_model *m, const bool *charted, int *ret_lo, int *ret_hi);
/* A layer's forward and gradient counts per binade lo..hi (hi - lo + 1 doubles each). */
void mpprof_layer_hist(const mpprof_layer *l, int lo, int hi, double *fwd, double *grad);
/* Some gradient tensor of the layer was scanned; without one its chart's
 * gradient panel is titled MPPROF_NO_GRADIENTS_PANEL (and its image's alt). */
bool mpprof_layer_has_gradient_tensor(const mpprof_layer *l);
int mpprof_layer_chart_png(const mpprof_model *m, const mpprof_layer *l, int lo, int hi,
                           unsigned char **ret, size_t *ret_len);

/* util.c: an output file made the one safe way (common/safefile.h): an
 * unpredictable temporary created O_EXCL|O_NOFOLLOW in the file's directory,
 * renamed over the name when complete. The directory part of path is the
 * user's (OUT); the file name is one component. */
typedef struct mpprof_afile {
  FILE *f;
  int dir;
  int err; /* first write error (errno), reported by close */
  mpp_sfile sf;
  char *buf;             /* the FILE's buffer (MPPROF_AFILE_BUF bytes), or NULL: stdio's own */
  mpprof_afile_set *set; /* NULL: renamed at close; else when the set is */
  int slot;              /* its temporary's in the list mpprof_remove_temporaries reads; -1 */
} mpprof_afile;
/* An output file's buffer: report.json of 100k sites is some 300 MB, which
 * stdio's default buffer wrote by 75k write calls. */
#define MPPROF_AFILE_BUF (1u << 20)
/* set: NULL, or the set whose commit renames this file (with the others). */
int mpprof_afile_open(mpprof_afile *a, const char *path, mpprof_afile_set *set);
/* Closes, and renames on success (or, in a set, leaves the complete temporary
 * to the set); removes the temporary file on failure or when ok is false. 0
 * or -1 (errno set: the first write error, e.g. ENOSPC). */
int mpprof_afile_close(mpprof_afile *a, bool ok);

/* Files that replace their previous versions together (the report's six, the
 * diff's two): each is written whole to its temporary first; only when every
 * one was does commit rename them, in the order written. A failed write
 * leaves every previous file as it was. */
#define MPPROF_AFILE_SET_MAX 8
struct mpprof_afile_set {
  size_t n;
  struct {
    mpp_sfile sf;
    int dir;  /* owned */
    int slot; /* mpprof_afile's */
  } done[MPPROF_AFILE_SET_MAX];
};
void mpprof_afile_set_init(mpprof_afile_set *s);
/* Renames every file into place. Before the first rename, a name taken by
 * something a file cannot replace (a directory) fails the whole set. 0, or
 * -1 with errno set and *ret_failed the name that failed (the temporaries
 * left are removed; where a rename itself failed, *ret_done of the files,
 * those before it, are the new ones). */
int mpprof_afile_set_commit(mpprof_afile_set *s, const char **ret_failed, size_t *ret_done);
/* Removes the temporaries of a set not committed (after a failed write). */
void mpprof_afile_set_abort(mpprof_afile_set *s);

/* util.c: names -> entries of the caller's array, by hash (open addressing,
 * load at most one half): merging kernel entries by name stays linear. The
 * slot of a name holds 0 (absent) or the entry's index + 1. */
typedef struct mpprof_name_index {
  size_t *slot;
  size_t cap;
} mpprof_name_index;
int mpprof_name_index_init(mpprof_name_index *ix, size_t max_entries); /* 0 or -1 */
size_t *mpprof_name_index_slot(const mpprof_name_index *ix, const char *name,
                               const char *const *names);
void mpprof_name_index_free(mpprof_name_index *ix);

/* util.c: an arena for the cJSON trees made and freed per site (100k sites
 * of some 700 nodes each: through malloc, a third of the report's time).
 * Between begin and end cJSON allocates from it (malloc beyond it) and its
 * frees of arena memory do nothing; end empties it. Nothing cJSON allocated
 * in between may be used after end, nor freed but by cJSON_free/cJSON_Delete.
 * The hooks are cJSON's global ones: the report is built on one thread.
 * begin: false when there is no arena (plain malloc then). */
bool mpprof_json_arena_begin(void);
void mpprof_json_arena_end(void);
void mpprof_json_arena_release(void); /* frees the arena (after end) */

/* util.c: mpprof_tb (defined above) as JSON text built in memory, spelled as
 * cJSON_PrintUnformatted spells it, for the parts of report.json too many to
 * build as cJSON trees (kernel lists, a site's stats). Starts zeroed; oom set
 * when a write failed (later writes do nothing); p is NUL-terminated, the
 * caller frees it. */
/* Room for len more bytes and a NUL; false when out of memory (oom set). */
bool mpprof_tb_room(mpprof_tb *b, size_t len);
static inline void mpprof_tb_put(mpprof_tb *b, const char *s, size_t len) {
  if (b->n + len + 1 > b->cap && !mpprof_tb_room(b, len)) return;
  if (b->oom) return;
  memcpy(b->p + b->n, s, len);
  b->n += len;
  b->p[b->n] = '\0';
}
void mpprof_tb_cstr(mpprof_tb *b, const char *s);
void mpprof_tb_json_str(mpprof_tb *b, const char *s); /* escaped as cJSON does; NULL: null */
void mpprof_tb_u64(mpprof_tb *b, uint64_t v);
/* Text without printf: v's digits ("%" PRIu64), and v / 1000 with three
 * decimals as printf("%.3f", (double)v / 1e3) prints it (a time in ns as
 * µs); NUL-terminated, their length returned. */
size_t mpprof_u64_text(uint64_t v, char buf[24]);
size_t mpprof_milli_text(int64_t v, char buf[32]);
/* A double as mpprof_json_double writes it (mpprof_double_text: the first of %.15g/16g/17g that
 * reads back; null when not finite). */
void mpprof_tb_double(mpprof_tb *b, double d);
/* stats_text.c: the STATS object of c without advice, the text of
 * cJSON_PrintUnformatted(mpprof_cstats_to_json(c, NULL, ...)). */
void mpprof_tb_cstats(mpprof_tb *b, const mpprof_cstats *c);

/* pending.c: a parsed site's merged fields (what mpprof_model_merge_site
 * adds), packed while the rest of its raw file is validated. */
typedef struct mpprof_pending {
  unsigned char *bytes;
  size_t len;
  size_t kernels_at; /* where the kernel records start in bytes */
  size_t n_kernels;
  mpprof_shadow *shadow; /* owned, or NULL */
} mpprof_pending;
/* *ret = s's merged fields (its shadow taken over; the rest of s stays
 * s's); scratch: a buffer kept across calls. 0 or -1 (memory). */
int mpprof_pending_pack(mpprof_site *s, mpprof_tb *scratch, mpprof_pending *ret);
/* *ret = a site holding only the merged fields of pd (its shadow taken
 * over), for mpprof_model_merge_site. 0 or -1 (memory; *ret is then still
 * for mpprof_site_free). */
int mpprof_pending_unpack(mpprof_pending *pd, mpprof_strpool *pool, mpprof_site *ret);
/* The name of kernel k (k < pd->n_kernels), inside pd's bytes. */
const char *mpprof_pending_kernel_name(const mpprof_pending *pd, size_t k);
void mpprof_pending_free(mpprof_pending *pd); /* NULL-safe contents; pd zeroed */
/* pending.c: s's tensor records packed into s->tpack (records freed);
 * nothing when packed already or none. scratch as for pending_pack. 0 or -1. */
int mpprof_site_pack_tensors(mpprof_site *s, mpprof_tb *scratch);
/* s's packed tensors back into records (s->tensors). 0 or -1. */
int mpprof_site_unpack_tensors(mpprof_site *s);
/* s's n_tensors records: its own (*ret_owned false), or unpacked for the
 * caller to free with mpprof_role_stats_free. 0 or -1 (memory). */
int mpprof_site_tensors(const mpprof_site *s, const mpprof_role_stats **ret, bool *ret_owned);
void mpprof_role_stats_free(mpprof_role_stats *t, size_t n); /* and t itself; NULL-safe */

/* util */
/* Text for a terminal: control characters (C0 but newline, DEL, C1) escaped
 * as \\xNN / \\u00NN, so names from a profiled program (NVTX ranges, argv,
 * file names) cannot send escape sequences (a summary of several lines;
 * one line: mpprof_fprint_term, report.h). */
void mpprof_fput_term(FILE *f, const char *s);
char *mpprof_strdup(const char *s); /* NULL-safe */
/* A copy of s as valid UTF-8, each byte that is not replaced (common/utf8.h):
 * a file name is any bytes, the text of report.json and the page is UTF-8. */
char *mpprof_strdup_utf8(const char *s);
char *mpprof_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A process's command line: the strings of its argv array joined by spaces
 * (malloc'd; NULL when out of memory or argv is no array). */
char *mpprof_argv_line(const cJSON *argv);
/* Sets *e (NULL: nothing) to the formatted message and errnum. */
void mpprof_error_set(mpprof_error *e, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Room for need elements of elem bytes in *p of capacity *cap (doubling);
 * mpprof_grow zeroes the new room, mpprof_reserve does not (its pages cost
 * memory only once written: for arrays filled whole). 0 or -1 (memory). */
int mpprof_grow(void **p, size_t *cap, size_t need, size_t elem);
int mpprof_reserve(void **p, size_t *cap, size_t need, size_t elem);
/* s escaped for HTML text and attribute values (the page and diff.html). */
void mpprof_html(FILE *f, const char *s);
/* Percent of a count over a base, 0 when base is 0. */
double mpprof_pct(uint64_t num, uint64_t den);
/* The share of a layer tensor's finite non-zero values with cast outcome o
 * in target t (docs/report.md "Shares"); at_scale: the gradient as recorded
 * at the applied scale instead of unscaled. */
mpprof_share mpprof_share_of(const mpprof_layer_tensor *lt, mp_target t, mp_cast_outcome o,
                             bool at_scale);
/* mpprof_share_of (unscaled) for a tensor multiplied by 2^scale_log2: a
 * gradient's under a loss scale (a forward tensor takes none: pass 0). At
 * 0 the exact counts; else from the histogram (mp_scaled_casts_compute),
 * the upper bound of the count, `estimate` where it differs from the lower
 * one. scratch: room for one mp_stats. */
mpprof_share mpprof_share_scaled(const mpprof_layer_tensor *lt, mp_target t, mp_cast_outcome o,
                                 int scale_log2, mp_stats *scratch);
/* The share of a layer tensor's values, over all of them (zeros, NaN and Inf
 * included: docs/report.md "Shares"), that are NaN or +-Inf. */
mpprof_share mpprof_nonfinite_share_of(const mpprof_layer_tensor *lt);
/* Where a layer tensor's saturated values sit, for a sentence after "at ":
 * "the fp8_e4m3 max 448"; with both formats "the fp8_e4m3 max 448 (N) and the
 * fp8_e5m2 max 57344 (M)"; "its fp8 format's max" when neither is known.
 * From saturated_as, so right where the layer's tensor mixes dtypes. malloc'd. */
char *mpprof_saturated_at(const mpprof_layer_tensor *lt);
/* JSON of a share: {"pct", "of", "tensor", "count", "estimate"}. */
cJSON *mpprof_share_json(const mpprof_share *s);
/* "2^16" for powers of two, else "%g" (buf of 32). */
const char *mpprof_scale_str(double s, char *buf);
/* mp_loss_scale_edges_text of a window [lo, hi] with beyond_lo/beyond_hi
 * binades past the report's search range (m->params): where the search cut
 * it, " (searched 2^a .. 2^b; 2^c .. 2^d fits in all)", else ""; html: the
 * powers as 2<sup>k</sup>. */
const char *mpprof_edges_text(const mpprof_model *m, int lo, int hi, int beyond_lo, int beyond_hi,
                              bool html, char buf[MP_LOSS_SCALE_EDGES_TEXT_MAX]);
/* report.json's and plan.json's true window (mp_loss_scale_true_window), null
 * without a window; layers.csv has it as two columns. */
cJSON *mpprof_true_window_json(bool has, int lo, int hi, int beyond_lo, int beyond_hi);
/* Processes that scanned op outputs only (--scan outputs): their inputs,
 * weights and incoming activations, are in no verdict. */
size_t mpprof_outputs_only_procs(const mpprof_model *m);
void mpprof_fput_json_string(FILE *f, const char *s);
/* The first n bytes of s (no NUL among them) as mpprof_fput_json_string writes them. */
void mpprof_fput_json_string_n(FILE *f, const char *s, size_t n);
/* "A=fp16 B=fp16 D=fp32": the layer's operand dtypes per role (malloc'd). */
char *mpprof_layer_dtypes(const mpprof_model *m, const mpprof_layer *l);
/* Output of the stats of a layer tensor as cJSON (with advice). */
cJSON *mpprof_cstats_to_json(const mpprof_cstats *c, const mp_advice *adv, mp_stats *scratch);

/* csv.c: the CSV writing rules shared by layers.csv and ops.csv. */
void mpprof_csv_field(FILE *f, const char *s, bool last);
const char *mpprof_csv_tri(int v);
/* The measured_* columns that end layers.csv's and ops.csv's rows, and
 * their fields of a row (docs/report.md: empty where not measured). */
#define MPPROF_CSV_SHADOW_COLUMNS                                                                  \
  "measured_now_rel_l2", "measured_now_understated", "measured_fp16_rel_l2",                       \
      "measured_fp16_loss_scaled", "measured_fp16_inputs_rounded", "measured_bf16_rel_l2",         \
      "measured_bf16_inputs_rounded", "measured_best_fp8", "measured_best_fp8_rel_l2",             \
      "measured_best_fp8_inputs_rounded"
void mpprof_csv_shadow_fields(FILE *f, const mpprof_shadow_row *r);

#endif
