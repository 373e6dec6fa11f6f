/* The host scanner: one pass over a (possibly strided, batched) buffer into a
 * stats record. This file checks the view, picks a path for it and walks its
 * runs; the paths live in scan_*.c (list in scan_internal.h).
 *
 * The portable path decodes each value and hands it to acc_value(): binade
 * from ilogb(), cast outcomes from a per-source table that gives the outcome
 * of every binade for every target, with explicit compares only in the few
 * binades that straddle a threshold (overflow_at, flush_at, subnormal_below).
 * The fast paths reach the same counts with less work per value:
 * - fp32, fp16, bf16 with AVX-512 VBMI/BITALG/GFNI: the bit-plane kernel
 *   (scan_planes.c): exponent counts and threshold counts
 *   from positional popcounts of one-hot planes, blocks checked once at
 *   their end; blocks that fail go to the kernels of the next two items.
 * - fp32 (AVX-512, or AVX2): for normal and zero values every cast outcome
 *   follows from ten integer compares of |x|'s bits with the targets'
 *   thresholds, counted in vector lanes; exponents go to eight scalar
 *   sub-histograms (AVX2, in views of F32A_PAIRS_MIN_ELEMENTS and more: a
 *   histogram of exponent pairs); min/max through order-preserving integer
 *   keys. Vectors
 *   holding a subnormal, inf or NaN go to acc_value(). With AVX-512 the loop
 *   is a call-free kernel (accumulators stay in registers), and fp16/bf16
 *   are widened to fp32 in registers, their exponents counted in pairs
 *   (views of F16_PAIRS_MIN_ELEMENTS and more) or one by one
 *   (scan_avx2.c, scan_avx512.c, their shared state in scan_f32.c).
 * - fp64 with AVX-512: eight values at a time, exponents read from the
 *   source into four sub-histograms; each value compared only with the
 *   level(s) of its own binade, looked up in a slot table, the result added
 *   to that binade's packed counter (scan_fp64_avx512.c).
 * - fp64 with AVX2 (CPUs without AVX-512): four values at a time, each
 *   compared with all twelve levels, exponents read from the source; blocks
 *   holding a subnormal, inf or NaN go to the scalar path (scan_fp64_avx2.c).
 * - fp64 (scalar, CPUs without AVX2, and blocks the AVX2 kernel refuses):
 *   binned by exponent; values in boundary binades are collected and
 *   classified in a second loop (scan_fp64.c).
 * - fp8, fp16, bf16 with AVX-512 VBMI/BITALG/GFNI: class planes
 *   (scan_classes.c): each value's class (binade, side of a threshold) looked
 *   up per code byte into one-hot planes, counted per bit position; every
 *   class adds its counts once at the end. 16-bit blocks holding inf, NaN or
 *   (bf16) a subnormal or an exponent outside the window go to the kernels
 *   of the first two items.
 * - fp8, fp16, bf16 with AVX2 (CPUs without AVX-512; fp8 without VBMI):
 *   class ids that rise with |x| (binade code + thresholds below |x|), pairs
 *   of ids counted by scalar increments (e4m3: nibble counters in byte
 *   lanes; scan_classes_avx2.c); failing blocks go to the pattern counts
 *   below.
 * - 16-bit and 8-bit sources: count bit patterns (2^16 / 2^8 counters), then
 *   fold each pattern seen into the record once, with its multiplicity
 *   (scan_portable.c, with the per-value path).
 * Every count is exact and min/max use the same total order (-0 < +0), so the
 * records are bit-identical whichever path ran (tests/analysis checks it). */
#include "analysis/scan.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/scan_internal.h"

static src_info infos[MP_DTYPE_COUNT];
static pthread_once_t infos_once = PTHREAD_ONCE_INIT;

#ifdef MP_HAVE_X86
bool mp_scan_prefetch_l2;
#endif

static void build_infos(void) {
#ifdef MP_HAVE_X86
  __builtin_cpu_init();
  mp_scan_prefetch_l2 = __builtin_cpu_is("intel");
#endif
  for (int d = 0; d < MP_DTYPE_COUNT; d++) {
    if (!mp_dtype_scannable((mp_dtype)d)) continue;
    const mp_format *f = mp_format_of((mp_dtype)d);
    src_info *I = &infos[d];
    I->lo = f->emin_sub;
    I->hi = f->emax;
    for (int e = I->lo; e <= I->hi; e++) {
      int i = e - I->lo;
      double bottom = ldexp(1.0, e), top = mp_format_binade_top(f, e);
      /* Outcomes are monotone in |x|: equal at both ends means equal throughout. */
      for (int t = 0; t < MP_TARGET_COUNT; t++) {
        mp_cast_outcome a = mp_cast_classify(bottom, (mp_target)t);
        mp_cast_outcome b = mp_cast_classify(top, (mp_target)t);
        I->outcome[t][i] = a == b ? (uint8_t)a : OUTCOME_BOUNDARY;
      }
    }
  }
}

const src_info *mp_scan_info_of(mp_dtype d) {
  pthread_once(&infos_once, build_infos);
  return &infos[d];
}

void mp_scan_prepare(void) {
  pthread_once(&infos_once, build_infos);
}

#ifdef MP_HAVE_X86
static bool cpu_has_avx512(void) {
  return __builtin_cpu_supports("avx512f");
}

static bool cpu_has_avx2(void) {
  return __builtin_cpu_supports("avx2");
}
#else
static bool cpu_has_avx2(void) {
  return false;
}
static bool cpu_has_avx512(void) {
  return false;
}
#endif

/* ---- views --------------------------------------------------------------- */

const char *mp_scan_auto_name(void) {
  return cpu_has_avx512() ? "avx512" : cpu_has_avx2() ? "avx2" : "portable";
}

static int check_view(const mp_stats *s, const mp_view *v) {
  if (!s || !v || !mp_dtype_scannable(v->dtype) || s->dtype != v->dtype) return -EINVAL;
  uint64_t batch = v->batch ? v->batch : 1;
  if (v->rows == 0 || v->cols == 0) return 0;
  if (!v->data) return -EINVAL;
  if (v->cols > 1 && v->ld < v->rows) return -EINVAL;
  /* The logical element count must fit in 64 bits. */
  if (v->rows > UINT64_MAX / v->cols || v->rows * v->cols > UINT64_MAX / batch) return -EINVAL;
  return 0;
}

typedef enum run_kind {
  RUN_PORTABLE,
  RUN_F64_FAST,
  RUN_F64_AVX512,
  RUN_F64_AVX2,
  RUN_F32_AVX2,
  RUN_F32_AVX512,
  RUN_CLASSES,
  RUN_CLASSES_AVX2,
  RUN_PATTERNS
} run_kind;

/* States kept from one scan to the next (mp_scan_ws_scan), in the one block
 * the caller gave: each as a scan leaves it, which is clean where it matters
 * (its counters all zero: the folds clear what they read), so taking it
 * again costs a reset of its small fields, not an allocation and a clearing
 * of tens of KB. A state is set up in full the first time (ready). */
struct mp_scan_ws {
#ifdef MP_HAVE_X86
  f32_fast f32;     /* sub[] all zero */
  pair_state pairs; /* banks and exp[] all zero */
  f64_vec f64v;     /* sub[] all zero */
  f64_avx2 f64a;    /* sub[] all zero */
  _Alignas(64) unsigned char cls[MP_DTYPE_COUNT][MP_CLS_BYTES];
  _Alignas(64) unsigned char cls2[MP_DTYPE_COUNT][MP_CLS2_BYTES];
  _Alignas(64) unsigned char cls2_work[MP_CLS2_WORK_BYTES]; /* the AVX2 classes' pair counters */
  bool f32_ready, pairs_ready, f64v_ready, f64a_ready;
  bool cls_ready[MP_DTYPE_COUNT], cls2_ready[MP_DTYPE_COUNT];
#endif
  bool allocated; /* by mp_scan_ws_new */
};

size_t mp_scan_ws_bytes(void) {
  return sizeof(mp_scan_ws);
}

mp_scan_ws *mp_scan_ws_init(void *mem) {
  if ((uintptr_t)mem % _Alignof(mp_scan_ws)) return NULL; /* scans then go without */
  return mem;                                             /* zeroed: nothing ready */
}

mp_scan_ws *mp_scan_ws_new(void) {
  /* Aligned as the type asks (its slots are 64-byte aligned); its size is a
   * multiple of that, as aligned_alloc needs. */
  mp_scan_ws *ws = aligned_alloc(_Alignof(mp_scan_ws), sizeof *ws);
  if (!ws) return NULL;
  memset(ws, 0, sizeof *ws);
  ws->allocated = true;
  return ws;
}

void mp_scan_ws_free(mp_scan_ws *ws) {
  if (ws && ws->allocated) free(ws);
}

bool mp_scan_ws_clean(const mp_scan_ws *ws) {
#ifdef MP_HAVE_X86
  for (int l = 0; ws->f32_ready && l < F32_LANES; l++)
    for (int e = 0; e < 256; e++)
      if (ws->f32.sub[l][e]) return false;
  if (ws->pairs_ready) {
    for (int b = 0; b < PAIR_BANKS; b++)
      for (int i = 0; i < 64 * 64; i++)
        if (ws->pairs.bank[b][i]) return false;
    for (int e = 0; e < 256; e++)
      if (ws->pairs.exp[e]) return false;
  }
  for (int b = 0; ws->f64v_ready && b < F64V_BANKS; b++)
    for (int e = 0; e < 2048; e++)
      if (ws->f64v.sub[b][e]) return false;
  for (int b = 0; ws->f64a_ready && b < 4; b++)
    for (int e = 0; e < 2048; e++)
      if (ws->f64a.sub[b][e]) return false;
  for (int d = 0; d < MP_DTYPE_COUNT; d++)
    if ((ws->cls_ready[d] && !mp_scan_cls_clean((const cls_scan *)ws->cls[d])) ||
        (ws->cls2_ready[d] && !mp_scan_cls2_clean((const cls2_scan *)ws->cls2[d])))
      return false;
#else
  (void)ws;
#endif
  return true;
}

typedef struct scanner {
  mp_stats *s;
  mp_scan_ws *ws; /* NULL: states are allocated and freed by each scan */
  const src_info *I;
  mp_dtype dtype;
  run_kind kind;
  pattern_counts patterns;
  f64_fast *f64;
#ifdef MP_HAVE_X86
  f32_fast *f32;
  f64_vec *f64v;
  f64_avx2 *f64a;
  cls_scan *cls;
  cls2_scan *cls2;
#endif
} scanner;

static void scan_run(scanner *S, const void *p, uint64_t n) {
  switch (S->kind) {
#ifdef MP_HAVE_X86
  case RUN_F32_AVX2:
    mp_scan_f32_run_avx2(S->s, S->I, S->f32, p, n);
    break;
  case RUN_F32_AVX512:
    if (S->f32->use_planes)
      mp_scan_plane_run(S->s, S->I, S->f32, p, n,
                        S->dtype == MP_FP32   ? 0
                        : S->dtype == MP_FP16 ? 1
                                              : 2);
    else if (S->dtype == MP_FP16)
      mp_scan_f16_run_avx512(S->s, S->I, S->f32, p, n);
    else if (S->dtype == MP_BF16)
      mp_scan_bf16_run_avx512(S->s, S->I, S->f32, p, n);
    else
      mp_scan_f32_run_avx512(S->s, S->I, S->f32, p, n);
    break;
  case RUN_F64_AVX512:
    mp_scan_f64v_run(S->s, S->I, S->f64v, p, n);
    break;
  case RUN_F64_AVX2:
    mp_scan_f64a_run(S->s, S->I, S->f64a, p, n);
    break;
  case RUN_CLASSES:
    mp_scan_cls_run(S->s, S->I, S->cls, S->f32, p, n);
    break;
  case RUN_CLASSES_AVX2:
    mp_scan_cls2_run(S->s, S->I, S->cls2, p, n);
    break;
#endif
  case RUN_PATTERNS:
    mp_scan_pattern_run(S->s, S->I, S->dtype, &S->patterns, p, n);
    break;
  case RUN_F64_FAST:
    mp_scan_f64_run(S->s, S->I, S->f64, p, n);
    break;
  default:
    mp_scan_portable_run(S->s, S->I, S->dtype, p, n);
    break;
  }
}

/* Pattern counting pays 2^16 counters per call: only worth it on big views. */
#define PATTERN16_MIN_ELEMENTS (1u << 18)
/* MP_SCAN_AUTO scans views below these sizes value by value: the fast paths'
 * fixed cost (state to clear, folds) is more than the per-value work there.
 * Crossovers measured with the scanner alone (2-core VM, Zen 4): fp32
 * portable 300 ns vs vector 510 ns at 16 elements, 730 vs 500 at 64;
 * fp16/bf16 ~100 elements; e4m3 patterns 3.9 us vs 4.8 us at 256, 14 vs
 * 5.2 us at 1024. MP_SCAN_AVX2 keeps these cut-offs (it is AUTO on a CPU
 * without AVX-512); MP_SCAN_AVX512_NO_PLANES (tests) runs at any size. */
#define AUTO_PORTABLE_BELOW 64
#define AUTO_PATTERN8_MIN_ELEMENTS 512

#ifdef MP_HAVE_X86
/* A scan's states given back: a workspace's stay where they are (clean
 * once finished, or never used), the others are freed. */
static void put_f64(scanner *S) {
  if (!S->ws) {
    free(S->f64v);
    free(S->f64a);
  }
  S->f64v = NULL;
  S->f64a = NULL;
}

/* The fp64 kernel state `field` (f64v, f64a) for this scan: the workspace's
 * (set up in full the first time, reset after) or a new one (put_f64 frees
 * it). True when it is ready for the kernel. */
#define TAKE_F64_STATE(S, field, init, reset)                                                      \
  __extension__({                                                                                  \
    mp_scan_ws *ws_ = (S)->ws;                                                                     \
    bool ok_;                                                                                      \
    if (ws_) {                                                                                     \
      (S)->field = &ws_->field;                                                                    \
      ok_ = ws_->field##_ready ? reset((S)->field) : init((S)->field);                             \
      ws_->field##_ready = true; /* set up either way: its sub[] is clear */                       \
    } else {                                                                                       \
      ok_ = ((S)->field = malloc(sizeof *(S)->field)) && init((S)->field);                         \
    }                                                                                              \
    ok_;                                                                                           \
  })

static void put_f32(scanner *S) {
  if (S->f32 && !S->ws) {
    free(S->f32->pairs);
    free(S->f32);
  }
  S->f32 = NULL;
}

static void start_f32_fast(scanner *S, bool wide, bool pairs, bool planes) {
  int lanes = wide ? 16 : 8;
  f32_fast *F;
  if (S->ws) {
    F = &S->ws->f32;
    if (S->ws->f32_ready) {
      mp_scan_f32_reset(F, lanes);
    } else {
      mp_scan_f32_init(F, lanes);
      S->ws->f32_ready = true;
    }
  } else if ((F = malloc(sizeof *F))) {
    mp_scan_f32_init(F, lanes);
  } else {
    return;
  }
  S->f32 = F;
  if (wide && planes && mp_scan_cpu_has_planes())
    F->use_planes = mp_scan_plane_tables_init(&F->plane_tab, F->th_bits);
  if (pairs && F->ok) {
    /* The escape buffer needs no clearing; banks and counts do (once, for a
     * workspace's: its folds clear them after). */
    pair_state *P = S->ws ? &S->ws->pairs : malloc(sizeof *P);
    if (P && !(S->ws && S->ws->pairs_ready)) {
      memset(P->bank, 0, sizeof P->bank);
      memset(P->exp, 0, sizeof P->exp);
      if (S->ws) S->ws->pairs_ready = true;
    }
    if (P) {
      P->pending = 0;
      P->base = WINDOW_BASE_START;
    }
    F->pairs = P;
  }
  if (!F->ok || (pairs && !F->pairs)) {
    put_f32(S);
    return;
  }
  S->kind = wide ? RUN_F32_AVX512 : RUN_F32_AVX2;
}
#endif

/* Below these, a view has no whole step of the class kernel (128 values);
 * from there it beats the other paths (2-core VM, Zen 5: e4m3 at 128 bytes
 * 0.6 us against 1.1 us value by value; fp16 at 128 values 1.4 against 2.8). */
#define CLASS16_MIN_ELEMENTS 128
#define CLASS8_MIN_ELEMENTS 128

#ifdef MP_HAVE_X86
static void start_classes(scanner *S) {
  mp_scan_ws *ws = S->ws;
  mp_dtype d = S->dtype;
  if (!ws) {
    S->cls = mp_scan_cls_start(d);
  } else {
    cls_scan *C = (cls_scan *)ws->cls[d];
    if (ws->cls_ready[d])
      mp_scan_cls_restart(C);
    else
      ws->cls_ready[d] = mp_scan_cls_init_at(C, d);
    S->cls = ws->cls_ready[d] ? C : NULL;
  }
  if (S->cls) S->kind = RUN_CLASSES;
}

/* AUTO without AVX-512 (or without VBMI for fp8), and MP_SCAN_AVX2. */
static void start_classes_avx2(scanner *S, mp_scan_impl impl, uint64_t total) {
  uint64_t min = mp_dtype_size(S->dtype) == 1 ? CLASS8_MIN_ELEMENTS : CLASS16_MIN_ELEMENTS;
  if ((impl != MP_SCAN_AUTO && impl != MP_SCAN_AVX2) || total < min) return;
  mp_scan_ws *ws = S->ws;
  mp_dtype d = S->dtype;
  if (!ws) {
    S->cls2 = mp_scan_cls2_start(d);
  } else {
    cls2_scan *C = (cls2_scan *)ws->cls2[d];
    if (ws->cls2_ready[d])
      mp_scan_cls2_restart(C, ws->cls2_work);
    else
      ws->cls2_ready[d] = mp_scan_cls2_init_at(C, d, ws->cls2_work);
    S->cls2 = ws->cls2_ready[d] ? C : NULL;
  }
  if (S->cls2) S->kind = RUN_CLASSES_AVX2;
}
#endif

static void choose_kind(scanner *S, mp_scan_impl impl, uint64_t total) {
  S->kind = RUN_PORTABLE;
  if (impl == MP_SCAN_PORTABLE) return;
  /* MP_SCAN_AVX2 is AUTO as a CPU without AVX-512 runs it, cut-offs and all
   * (so that what it measures is what such a CPU pays). */
  bool auto_sizes = impl == MP_SCAN_AUTO || impl == MP_SCAN_AVX2;
  if (auto_sizes && total < AUTO_PORTABLE_BELOW) return;
  switch (S->dtype) {
  case MP_FP64:
#ifdef MP_HAVE_X86
    /* A state kept in the workspace costs no table to build. */
    if (total < (S->ws ? F64_KEPT_MIN_ELEMENTS : F64_FAST_MIN_ELEMENTS)) break;
    if (cpu_has_avx512() && impl != MP_SCAN_AVX2) {
      if (TAKE_F64_STATE(S, f64v, mp_scan_f64v_init, mp_scan_f64v_reset)) {
        S->kind = RUN_F64_AVX512;
        break;
      }
      put_f64(S);
    }
    if (cpu_has_avx2()) {
      if (TAKE_F64_STATE(S, f64a, mp_scan_f64a_init, mp_scan_f64a_reset)) {
        S->kind = RUN_F64_AVX2;
        break;
      }
      put_f64(S);
    }
#endif
    if (total < F64_FAST_MIN_ELEMENTS) break;
    S->f64 = malloc(sizeof(f64_fast));
    if (!S->f64) break;
    mp_scan_f64_init(S->f64, S->I);
    S->kind = RUN_F64_FAST;
    break;
  case MP_FP32:
#ifdef MP_HAVE_X86
    if ((cpu_has_avx2() || cpu_has_avx512()) && total >= 8) {
      bool wide = cpu_has_avx512() && impl != MP_SCAN_AVX2;
      start_f32_fast(S, wide, !wide && total >= F32A_PAIRS_MIN_ELEMENTS,
                     impl != MP_SCAN_AVX512_NO_PLANES);
    }
#endif
    break;
  case MP_FP16:
  case MP_BF16:
#ifdef MP_HAVE_X86
    /* With AVX-512, 16-bit sources are widened to fp32 in registers. */
    if (cpu_has_avx512() && impl != MP_SCAN_AVX2 && total >= 16) {
      start_f32_fast(S, true, total >= F16_PAIRS_MIN_ELEMENTS, impl != MP_SCAN_AVX512_NO_PLANES);
      if (S->kind != RUN_PORTABLE) {
        /* Class planes, with the fp32-family kernels for blocks they refuse. */
        if (impl == MP_SCAN_AUTO && total >= CLASS16_MIN_ELEMENTS) start_classes(S);
        break;
      }
    }
    start_classes_avx2(S, impl, total);
    if (S->kind == RUN_CLASSES_AVX2) break;
#endif
    /* fall through */
  case MP_FP8_E4M3:
  case MP_FP8_E5M2: {
#ifdef MP_HAVE_X86
    if (mp_dtype_size(S->dtype) == 1 && impl == MP_SCAN_AUTO && total >= CLASS8_MIN_ELEMENTS) {
      start_classes(S);
      if (S->kind == RUN_CLASSES) break;
    }
    if (mp_dtype_size(S->dtype) == 1) {
      start_classes_avx2(S, impl, total);
      if (S->kind == RUN_CLASSES_AVX2) break;
    }
#endif
    unsigned bits = mp_dtype_size(S->dtype) * 8;
    if (bits == 16 && total < PATTERN16_MIN_ELEMENTS) break;
    if (bits == 8 && auto_sizes && total < AUTO_PATTERN8_MIN_ELEMENTS) break;
    unsigned banks = bits == 16 ? 2 : 8;
    S->patterns.cnt = calloc((size_t)banks << bits, sizeof(uint32_t));
    if (!S->patterns.cnt) break; /* the portable path needs no memory */
    S->patterns.bits = bits;
    S->patterns.banks = banks;
    S->kind = RUN_PATTERNS;
    break;
  }
  default:
    break;
  }
}

static void finish(scanner *S) {
  switch (S->kind) {
#ifdef MP_HAVE_X86
  case RUN_F32_AVX2:
  case RUN_F32_AVX512:
    mp_scan_f32_finish(S->s, S->f32);
    put_f32(S);
    break;
  case RUN_F64_AVX512:
    mp_scan_f64v_finish(S->s, S->f64v);
    put_f64(S);
    break;
  case RUN_F64_AVX2:
    mp_scan_f64a_finish(S->s, S->I, S->f64a);
    put_f64(S);
    break;
  case RUN_CLASSES:
    mp_scan_cls_finish(S->s, S->I, S->cls);
    if (!S->ws) free(S->cls);
    if (S->f32) {
      mp_scan_f32_finish(S->s, S->f32);
      put_f32(S);
    }
    break;
  case RUN_CLASSES_AVX2:
    mp_scan_cls2_finish(S->s, S->I, S->cls2);
    if (!S->ws) mp_scan_cls2_free(S->cls2);
    break;
#endif
  case RUN_PATTERNS:
    mp_scan_pattern_fold(S->s, S->I, S->dtype, &S->patterns);
    free(S->patterns.cnt);
    break;
  case RUN_F64_FAST:
    mp_scan_f64_finish(S->s, S->I, S->f64);
    free(S->f64);
    break;
  default:
    break;
  }
}

int mp_scan_ws_scan(mp_scan_ws *ws, mp_stats *s, const mp_view *v, mp_scan_impl impl) {
  int rc = check_view(s, v);
  if (rc < 0) return rc;
  if (v->rows == 0 || v->cols == 0) return 0;
  uint64_t batch = v->batch ? v->batch : 1;
  unsigned size = mp_dtype_size(v->dtype);
  scanner S = {.s = s, .ws = ws, .I = mp_scan_info_of(v->dtype), .dtype = v->dtype};
  choose_kind(&S, impl, v->rows * v->cols * batch);
  /* A matrix whose columns touch is one run; so is a batch of such matrices
   * packed back to back. */
  bool dense = v->cols == 1 || v->ld == v->rows;
  uint64_t per_matrix = v->rows * v->cols;
  const unsigned char *base = v->data;
  if (dense && (batch == 1 || v->batch_stride == (int64_t)per_matrix)) {
    scan_run(&S, base, per_matrix * batch);
  } else {
    for (uint64_t b = 0; b < batch; b++) {
      const unsigned char *m = base + (int64_t)b * v->batch_stride * (int64_t)size;
      if (dense) {
        scan_run(&S, m, per_matrix);
        continue;
      }
      for (uint64_t c = 0; c < v->cols; c++)
        scan_run(&S, m + c * v->ld * size, v->rows);
    }
  }
  finish(&S);
  return 0;
}

int mp_scan_with(mp_stats *s, const mp_view *v, mp_scan_impl impl) {
  return mp_scan_ws_scan(NULL, s, v, impl);
}

int mp_scan(mp_stats *s, const mp_view *v) {
  return mp_scan_ws_scan(NULL, s, v, MP_SCAN_AUTO);
}

const char *mp_scan_path_name(mp_dtype d, uint64_t total, mp_scan_impl impl) {
  static const char *const names[] = {
      [RUN_PORTABLE] = "portable",     [RUN_F64_FAST] = "f64_fast",
      [RUN_F64_AVX512] = "f64_avx512", [RUN_F64_AVX2] = "f64_avx2",
      [RUN_F32_AVX2] = "f32_avx2",     [RUN_F32_AVX512] = "f32_avx512",
      [RUN_CLASSES] = "classes",       [RUN_CLASSES_AVX2] = "classes_avx2",
      [RUN_PATTERNS] = "patterns"};
  _Static_assert(sizeof names / sizeof names[0] == RUN_PATTERNS + 1, "a name for every kind");
  if (!mp_dtype_scannable(d)) return NULL;
  mp_stats *s = malloc(sizeof *s);
  if (!s) return NULL;
  mp_stats_init(s, d);
  scanner S = {.s = s, .I = mp_scan_info_of(d), .dtype = d};
  choose_kind(&S, impl, total);
  const char *name = names[S.kind];
#ifdef MP_HAVE_X86
  if (S.kind == RUN_F32_AVX512 && S.f32->use_planes) name = "f32_avx512_planes";
  if (S.kind == RUN_F32_AVX2 && S.f32->pairs) name = "f32_avx2_pairs";
  if (S.kind == RUN_F32_AVX512 && !S.f32->use_planes && S.f32->pairs) name = "f32_avx512_pairs";
#endif
  finish(&S);
  free(s);
  return name;
}

struct mp_scan_stream {
  scanner S;
};

mp_scan_stream *mp_scan_stream_begin(mp_stats *s, uint64_t total) {
  if (!s || !mp_dtype_scannable(s->dtype)) return NULL;
  mp_scan_stream *st = malloc(sizeof *st);
  if (!st) return NULL;
  st->S = (scanner){.s = s, .I = mp_scan_info_of(s->dtype), .dtype = s->dtype};
  choose_kind(&st->S, MP_SCAN_AUTO, total);
  return st;
}

void mp_scan_stream_feed(mp_scan_stream *st, const void *data, uint64_t n) {
  if (n) scan_run(&st->S, data, n);
}

void mp_scan_stream_end(mp_scan_stream *st) {
  if (!st) return;
  finish(&st->S);
  free(st);
}

int mp_scan_contiguous(mp_stats *s, const void *data, uint64_t n) {
  if (!s) return -EINVAL;
  mp_view v = {.dtype = s->dtype, .data = data, .rows = n, .cols = 1, .ld = n, .batch = 1};
  return mp_scan(s, &v);
}

/* e4m3 (OCP, no inf) tops out at S.1111.110 = 448, e5m2 at S.11110.11 = 57344. */
int mp_saturated_pattern(mp_dtype dtype) {
  return dtype == MP_FP8_E4M3 ? 0x7e : dtype == MP_FP8_E5M2 ? 0x7b : -1;
}

uint64_t mp_count_saturated(const mp_view *v) {
  int top = mp_saturated_pattern(v->dtype);
  if (top < 0) return 0;
  if (!v->data || v->rows == 0 || v->cols == 0) return 0;
  uint64_t batch = v->batch ? v->batch : 1, n = 0;
  uint64_t ld = v->cols == 1 ? v->rows : v->ld;
  for (uint64_t b = 0; b < batch; b++) {
    const uint8_t *m = (const uint8_t *)v->data + (int64_t)b * v->batch_stride;
    for (uint64_t c = 0; c < v->cols; c++)
      for (uint64_t r = 0; r < v->rows; r++)
        n += (m[c * ld + r] & 0x7f) == (uint8_t)top;
  }
  return n;
}
