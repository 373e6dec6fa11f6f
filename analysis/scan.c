/* The host scanner: one pass over a (possibly strided, batched) buffer into a
 * stats record.
 *
 * The portable path decodes each value and hands it to acc_value(): binade
 * from ilogb(), cast outcomes from a per-source table that gives the outcome
 * of every binade for every target, with explicit compares only in the few
 * binades that straddle a threshold (overflow_at, flush_at, subnormal_below).
 * The fast paths reach the same counts with less work per value:
 * - fp32, fp16, bf16 with AVX-512 VBMI/BITALG/GFNI: the bit-plane kernel
 *   ("fp32, AVX-512 bit planes" below): exponent counts and threshold counts
 *   from positional popcounts of one-hot planes, blocks checked once at
 *   their end; blocks that fail go to the kernels of the next two items.
 * - fp32 (AVX-512, or AVX2): for normal and zero values every cast outcome
 *   follows from ten integer compares of |x|'s bits with the targets'
 *   thresholds, counted in vector lanes; exponents go to eight scalar
 *   sub-histograms; min/max through order-preserving integer keys. Vectors
 *   holding a subnormal, inf or NaN go to acc_value(). With AVX-512 the loop
 *   is a call-free kernel (accumulators stay in registers), and fp16/bf16
 *   are widened to fp32 in registers, their exponents counted in pairs.
 * - fp64 (scalar): binned by exponent; values in boundary binades are
 *   collected and classified in a second loop.
 * - 16-bit and 8-bit sources: count bit patterns (2^16 / 2^8 counters), then
 *   fold each pattern seen into the record once, with its multiplicity.
 * Every count is exact and min/max use the same total order (-0 < +0), so the
 * records are bit-identical whichever path ran (tests/analysis checks it). */
#include "analysis/scan.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MP_HAVE_X86 1
#include <immintrin.h>
#endif

/* fp64 has the widest range: emax - emin_sub + 1 bins. */
#define SRC_MAX_BINS (1023 + 1074 + 1)
#define OUTCOME_BOUNDARY 0xff

typedef struct src_info {
  int lo, hi; /* histogram range of the source */
  /* outcome[t][e - lo]: the cast outcome shared by the whole binade, or
   * OUTCOME_BOUNDARY when the binade straddles one of t's thresholds. */
  uint8_t outcome[MP_TARGET_COUNT][SRC_MAX_BINS];
} src_info;

static src_info infos[MP_DTYPE_COUNT];
static pthread_once_t infos_once = PTHREAD_ONCE_INIT;

static void build_infos(void) {
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

static const src_info *info_of(mp_dtype d) {
  pthread_once(&infos_once, build_infos);
  return &infos[d];
}

/* ---- the portable per-value path ---------------------------------------- */

static bool total_less(double a, double b) {
  if (a < b) return true;
  return a == b && signbit(a) && !signbit(b);
}

/* c copies of the value x into s (c > 1 when folding pattern counts). */
static inline void acc_value(mp_stats *s, const src_info *I, double x, uint64_t c) {
  s->count += c;
  if (isnan(x)) {
    s->nans += c;
    return;
  }
  if (isinf(x)) {
    if (x > 0) {
      s->pos_infs += c;
    } else {
      s->neg_infs += c;
      s->negatives += c;
    }
    return;
  }
  if (x < 0) s->negatives += c;
  if (isnan(s->min) || total_less(x, s->min)) s->min = x;
  if (isnan(s->max) || total_less(s->max, x)) s->max = x;
  double a = fabs(x);
  if (isnan(s->absmax) || a > s->absmax) s->absmax = a;
  if (x == 0) {
    s->zeros += c;
    return;
  }
  if (a < s->min_abs_nonzero) s->min_abs_nonzero = a;
  int e = ilogb(x);
  s->exp_hist[e - MP_HIST_MIN] += c;
  int i = e - I->lo;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint8_t o = I->outcome[t][i];
    if (o == OUTCOME_BOUNDARY) o = (uint8_t)mp_cast_classify(x, (mp_target)t);
    s->casts[t][o] += c;
  }
}

static void portable_run(mp_stats *s, const src_info *I, mp_dtype d, const void *p, uint64_t n) {
  switch (d) {
  case MP_FP64: {
    const double *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, q[i], 1);
    break;
  }
  case MP_FP32: {
    const float *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, q[i], 1);
    break;
  }
  case MP_FP16: {
    const uint16_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_fp16_to_float(q[i]), 1);
    break;
  }
  case MP_BF16: {
    const uint16_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_bf16_to_float(q[i]), 1);
    break;
  }
  case MP_FP8_E4M3: {
    const uint8_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_e4m3_to_float(q[i]), 1);
    break;
  }
  case MP_FP8_E5M2: {
    const uint8_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_e5m2_to_float(q[i]), 1);
    break;
  }
  default:
    break;
  }
}

/* ---- pattern counting for 8- and 16-bit sources ------------------------- */

/* Counters are 32-bit; a fold every PATTERN_FOLD_EVERY values keeps them from
 * wrapping. */
#define PATTERN_FOLD_EVERY (1u << 31)

typedef struct pattern_counts {
  uint32_t *cnt; /* 2^bits counters per bank: two banks for 16-bit sources, eight for 8-bit */
  unsigned bits;
  unsigned banks;
  uint64_t pending;
} pattern_counts;

static double decode_pattern(mp_dtype d, uint32_t v) {
  switch (d) {
  case MP_FP16:
    return mp_fp16_to_float((uint16_t)v);
  case MP_BF16:
    return mp_bf16_to_float((uint16_t)v);
  case MP_FP8_E4M3:
    return mp_e4m3_to_float((uint8_t)v);
  default:
    return mp_e5m2_to_float((uint8_t)v);
  }
}

static void pattern_fold(mp_stats *s, const src_info *I, mp_dtype d, pattern_counts *P) {
  uint32_t size = 1u << P->bits;
  for (uint32_t v = 0; v < size; v++) {
    uint64_t c = 0;
    for (unsigned b = 0; b < P->banks; b++) {
      c += P->cnt[b * size + v];
      P->cnt[b * size + v] = 0;
    }
    if (c) acc_value(s, I, decode_pattern(d, v), c);
  }
  P->pending = 0;
}

static void pattern_run(mp_stats *s, const src_info *I, mp_dtype d, pattern_counts *P,
                        const void *p, uint64_t n) {
  while (n > 0) {
    uint64_t room = PATTERN_FOLD_EVERY - P->pending;
    uint64_t m = n < room ? n : room;
    /* 64-bit loads, patterns taken out with shifts: fewer loads, and the
     * counter stores cannot be mistaken for writes to the source. */
    const unsigned char *q = p;
    uint64_t i = 0;
    if (P->bits == 16) {
      uint32_t *c0 = P->cnt, *c1 = P->cnt + 65536;
      for (; i + 4 <= m; i += 4) {
        uint64_t w;
        memcpy(&w, q + 2 * i, 8);
        c0[w & 0xffff]++;
        c1[(w >> 16) & 0xffff]++;
        c0[(w >> 32) & 0xffff]++;
        c1[w >> 48]++;
      }
      for (; i < m; i++) {
        uint16_t h;
        memcpy(&h, q + 2 * i, 2);
        c0[h]++;
      }
      p = q + 2 * m;
    } else {
      uint32_t *c = P->cnt;
      for (; i + 8 <= m; i += 8) {
        uint64_t w;
        memcpy(&w, q + i, 8);
        c[w & 0xff]++;
        c[256 + ((w >> 8) & 0xff)]++;
        c[512 + ((w >> 16) & 0xff)]++;
        c[768 + ((w >> 24) & 0xff)]++;
        c[1024 + ((w >> 32) & 0xff)]++;
        c[1280 + ((w >> 40) & 0xff)]++;
        c[1536 + ((w >> 48) & 0xff)]++;
        c[1792 + (w >> 56)]++;
      }
      for (; i < m; i++)
        c[q[i]]++;
      p = q + m;
    }
    P->pending += m;
    n -= m;
    if (P->pending == PATTERN_FOLD_EVERY) pattern_fold(s, I, d, P);
  }
}

/* ---- fp64, scalar --------------------------------------------------------- */

/* fp64 values are binned by their biased exponent into two sub-histograms;
 * cast outcomes come from the per-binade table, except in the few boundary
 * binades, whose values are classified one by one. Zeros are handled inline;
 * subnormal, inf and NaN inputs take acc_value(). */
typedef struct f64_fast {
  uint32_t sub[2][2048];
  uint8_t boundary[2048]; /* by biased exponent */
  /* Per target, |x| bits above which a value is at least subnormal, normal,
   * overflowing; bcasts counts boundary values by that level (0..3). */
  uint64_t level_bits[MP_TARGET_COUNT][3];
  uint64_t bcasts[MP_TARGET_COUNT][4];
  uint64_t pending; /* values in sub since the last fold */
  uint64_t values, zeros, negatives;
  int64_t key_min, key_max;
  uint64_t abs_min_m1;
} f64_fast;

#define F64_FOLD_EVERY (1ull << 31)
/* Building the boundary table costs a few microseconds. */
#define F64_FAST_MIN_ELEMENTS 4096

static uint64_t double_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static void f64_fast_init(f64_fast *F, const src_info *I) {
  memset(F, 0, sizeof *F);
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    F->level_bits[t][0] = double_bits(f->flush_at);
    F->level_bits[t][1] = double_bits(nextafter(f->subnormal_below, 0.0));
    F->level_bits[t][2] =
        double_bits(f->overflow_strict ? f->overflow_at : nextafter(f->overflow_at, 0.0));
  }
  F->key_min = INT64_MAX;
  F->key_max = INT64_MIN;
  F->abs_min_m1 = UINT64_MAX;
  for (int E = 1; E <= 2046; E++)
    for (int t = 0; t < MP_TARGET_COUNT; t++)
      if (I->outcome[t][E - 1023 - I->lo] == OUTCOME_BOUNDARY) F->boundary[E] = 1;
}

static void f64_fast_fold(mp_stats *s, const src_info *I, f64_fast *F) {
  for (int E = 1; E <= 2046; E++) {
    uint64_t c = (uint64_t)F->sub[0][E] + F->sub[1][E];
    if (!c) continue;
    F->sub[0][E] = F->sub[1][E] = 0;
    int i = E - 1023 - I->lo;
    s->exp_hist[E - 1023 - MP_HIST_MIN] += c;
    if (F->boundary[E]) continue; /* classified one by one into bcasts */
    for (int t = 0; t < MP_TARGET_COUNT; t++)
      s->casts[t][I->outcome[t][i]] += c;
  }
  F->pending = 0;
}

static double key64_to_double(int64_t k) {
  uint64_t u = (uint64_t)(k < 0 ? k ^ INT64_MAX : k);
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

static void f64_fast_finish(mp_stats *s, const src_info *I, f64_fast *F) {
  static const mp_cast_outcome of_level[4] = {MP_CAST_UNDERFLOW, MP_CAST_SUBNORMAL, MP_CAST_NORMAL,
                                              MP_CAST_OVERFLOW};
  f64_fast_fold(s, I, F);
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    for (int l = 0; l < 4; l++)
      s->casts[t][of_level[l]] += F->bcasts[t][l];
  if (F->values == 0) return;
  s->count += F->values;
  s->zeros += F->zeros;
  s->negatives += F->negatives;
  double mn = key64_to_double(F->key_min), mx = key64_to_double(F->key_max);
  if (isnan(s->min) || total_less(mn, s->min)) s->min = mn;
  if (isnan(s->max) || total_less(s->max, mx)) s->max = mx;
  double amax = fabs(mn) > fabs(mx) ? fabs(mn) : fabs(mx);
  if (isnan(s->absmax) || amax > s->absmax) s->absmax = amax;
  if (F->abs_min_m1 != UINT64_MAX) {
    uint64_t u = F->abs_min_m1 + 1;
    double amin;
    memcpy(&amin, &u, sizeof amin);
    if (amin < s->min_abs_nonzero) s->min_abs_nonzero = amin;
  }
}

/* Boundary values of a block are first collected (a branch-free append),
 * then classified in a second, short loop: an unpredictable branch per value
 * would cost more than the work. */
#define F64_BLOCK 1024

static void f64_classify_boundary(f64_fast *F, const double *p, const uint16_t *idx, unsigned nb) {
  for (unsigned j = 0; j < nb; j++) {
    uint64_t a = double_bits(p[idx[j]]) & 0x7fffffffffffffffull;
    for (int t = 0; t < MP_TARGET_COUNT; t++)
      F->bcasts[t][(a > F->level_bits[t][0]) + (a > F->level_bits[t][1]) +
                   (a > F->level_bits[t][2])]++;
  }
}

static void f64_run_fast(mp_stats *s, const src_info *I, f64_fast *F, const double *p, uint64_t n) {
  const uint64_t absmask = 0x7fffffffffffffffull;
  int64_t kmin = F->key_min, kmax = F->key_max;
  uint64_t aminm1 = F->abs_min_m1, values = 0, zeros = 0, negatives = 0;
  uint32_t *sub0 = F->sub[0], *sub1 = F->sub[1];
  uint16_t idx[F64_BLOCK];
  for (uint64_t start = 0; start < n; start += F64_BLOCK) {
    unsigned len = n - start < F64_BLOCK ? (unsigned)(n - start) : F64_BLOCK, nb = 0;
    const double *q = p + start;
    for (unsigned i = 0; i < len; i++) {
      uint64_t u;
      memcpy(&u, q + i, sizeof u);
      uint64_t a = u & absmask;
      unsigned E = (unsigned)(a >> 52);
      int64_t key = (int64_t)(u ^ ((uint64_t)((int64_t)u >> 63) & absmask));
      if (E - 1u >= 2046u) { /* zero, subnormal, inf or NaN */
        if (a != 0) {
          acc_value(s, I, q[i], 1);
          continue;
        }
        zeros++;
      } else {
        (i & 1 ? sub1 : sub0)[E]++;
        idx[nb] = (uint16_t)i;
        nb += F->boundary[E];
        negatives += u >> 63;
        aminm1 = a - 1 < aminm1 ? a - 1 : aminm1;
      }
      kmin = key < kmin ? key : kmin;
      kmax = key > kmax ? key : kmax;
      values++;
    }
    f64_classify_boundary(F, q, idx, nb);
    F->pending += len;
    if (F->pending >= F64_FOLD_EVERY) f64_fast_fold(s, I, F);
  }
  F->key_min = kmin;
  F->key_max = kmax;
  F->abs_min_m1 = aminm1;
  F->values += values;
  F->zeros += zeros;
  F->negatives += negatives;
}

/* ---- fp32, AVX2 ---------------------------------------------------------- */

#ifdef MP_HAVE_X86
/* For normal and zero fp32 values every cast outcome follows from a few
 * integer compares of |x|'s bits with the targets' thresholds: the count above
 * overflow_at, above flush_at and at or above subnormal_below. bf16's flush
 * and subnormal limits lie below fp32's normal range, so those two are
 * implied; ten compares remain. Subnormal, inf and NaN inputs are rare and
 * take acc_value() with their whole vector. */
enum {
  TH_FP16_OVF,
  TH_FP16_FLUSH,
  TH_FP16_SUB,
  TH_BF16_OVF,
  TH_E4M3_OVF,
  TH_E4M3_FLUSH,
  TH_E4M3_SUB,
  TH_E5M2_OVF,
  TH_E5M2_FLUSH,
  TH_E5M2_SUB,
  TH_COUNT
};

/* Per target: index of its overflow, flush and subnormal thresholds (-1: implied). */
static const int th_of[MP_TARGET_COUNT][3] = {
    [MP_TGT_FP16] = {TH_FP16_OVF, TH_FP16_FLUSH, TH_FP16_SUB},
    [MP_TGT_BF16] = {TH_BF16_OVF, -1, -1},
    [MP_TGT_FP8_E4M3] = {TH_E4M3_OVF, TH_E4M3_FLUSH, TH_E4M3_SUB},
    [MP_TGT_FP8_E5M2] = {TH_E5M2_OVF, TH_E5M2_FLUSH, TH_E5M2_SUB},
};

/* Indicator counts the vector loop keeps: the ten thresholds, then zeros and
 * negatives, packed four to a vector of byte counters. */
enum { IND_ZEROS = TH_COUNT, IND_NEGATIVES, IND_COUNT };

#define F32_LANES 16 /* AVX-512; the AVX2 loop uses the first 8 */

/* Exponents of fp16 and bf16 sources (AVX-512): a histogram over *pairs* of
 * neighbouring values. Each value's biased fp32 exponent becomes a 6-bit code
 * relative to a window of 63 binades (base .. base + 62); code 63 means "no
 * exponent here" (zero, or outside the window). Two codes form a 12-bit index
 * into 16-bit counters, in several banks so that repeated indices do not form
 * a chain of dependent increments: one increment per two values, where
 * extracting sixteen exponent bytes from the vector and counting them one by
 * one cost about a quarter more. A bank bin takes at most PAIR_PER_BANK counts
 * per vector, so the banks are folded into exponent counts (row and column
 * sums) before a counter can wrap. Non-zero values outside the window are
 * appended (vector compress) to a buffer and counted one by one after the
 * kernel call. The window starts at 2^-45 .. 2^17 and moves when a kernel call
 * sees many values outside it: its top then follows the largest exponent seen
 * so far. Where the window sits changes the speed, never a count.
 * (For fp32 the same scheme was slower than scalar exponent counts read
 * straight from the source, hist_exponents8: no vector-to-scalar moves.)
 *
 * Kernel calls end after at most this many vectors (bounds the escape buffer
 * and the 16-bit bank counters between folds). */
#define PAIR_KERNEL_VECTORS 1024
#define PAIR_BANKS 4
typedef uint16_t pair_count;
#define PAIR_PER_BANK (8 / PAIR_BANKS)
/* Bank counters are uint16: fold before any could pass 65535. */
#define PAIR_FOLD_VECTORS ((65535 / PAIR_PER_BANK) - PAIR_KERNEL_VECTORS)
#define WINDOW_CODES 63 /* binades in the window; code 63 is "none" */
#define WINDOW_BASE_START (127 - 45)
#define WINDOW_BASE_MAX (254 - WINDOW_CODES + 1)

typedef struct pair_state {
  pair_count bank[PAIR_BANKS][64 * 64];
  uint32_t escapes[PAIR_KERNEL_VECTORS * 16 + 16]; /* biased exponents outside the window */
  uint64_t exp[256];                               /* folded exponent counts, by biased exponent */
  uint64_t pending;                                /* vectors in the banks since the last fold */
  int base;                                        /* biased exponent of code 0 */
} pair_state;

/* Tables of the bit-plane kernel (see "fp32, AVX-512 bit planes" below). */
#define PLANE_SLOTS 16
typedef struct plane_tables {
  /* By (E >> 2) mod 16: threshold bits (INT32_MAX: none), and a second,
   * higher threshold in the same binade. */
  int32_t th[PLANE_SLOTS], th2[PLANE_SLOTS];
  int th_index[PLANE_SLOTS], th2_index[PLANE_SLOTS]; /* TH_ index, or -1 */
} plane_tables;

typedef struct f32_fast {
  uint32_t sub[F32_LANES][256]; /* exponent counts per lane, indexed by the biased exponent */
  uint32_t ind_lanes[IND_COUNT][F32_LANES]; /* AVX-512 indicator counts, per lane */
  int32_t th_bits[TH_COUNT];
  uint64_t vectors; /* vector lanes' worth of values in sub/ind_lanes since the last fold */
  uint64_t values;  /* values that took the vector path */
  uint64_t ind[IND_COUNT];
  int32_t key_min[F32_LANES], key_max[F32_LANES]; /* order-preserving integer keys of x */
  uint32_t abs_min_m1[F32_LANES]; /* |x| bits - 1: zeros wrap to the top and drop out */
  int lanes;                      /* 8 (AVX2) or 16 (AVX-512) */
  pair_state *pairs;              /* AVX-512 exponent pairs (NULL for AVX2) */
  uint64_t recent_escapes;        /* values outside the window in the last kernel call */
  bool ok;
  bool use_planes; /* fp32, fp16, bf16 through plane_kernel() */
  plane_tables plane_tab;
  unsigned plane_skip;  /* blocks the plane kernel sits out */
  unsigned plane_fails; /* consecutive blocks that failed its check */
} f32_fast;

/* Sub-histogram lanes take one count per vector; fold long before 2^32. */
#define F32_FOLD_EVERY (1ull << 30)
/* Byte counters take one count per vector. */
#define F32_BLOCK_VECTORS 255

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Bits b with "|x| > limit" <=> bits(|x|) > b for every fp32 |x|: the largest
 * float <= limit (limits are exact floats here, but do not rely on it). */
static int32_t gt_bits(double limit) {
  float f = (float)limit;
  if ((double)f > limit) f = nextafterf(f, 0.0f);
  return (int32_t)float_bits(f);
}

static void f32_fast_init(f32_fast *F, int lanes) {
  memset(F, 0, sizeof *F);
  F->lanes = lanes;
  for (int l = 0; l < F32_LANES; l++) {
    F->key_min[l] = INT32_MAX;
    F->key_max[l] = INT32_MIN;
    F->abs_min_m1[l] = UINT32_MAX;
  }
  F->ok = true;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    /* overflow: |x| >= overflow_at (or >): count |x| > the float just below. */
    double ovf = f->overflow_strict ? f->overflow_at : nextafter(f->overflow_at, 0.0);
    F->th_bits[th_of[t][0]] = gt_bits(ovf);
    if (th_of[t][1] >= 0) {
      F->th_bits[th_of[t][1]] = gt_bits(f->flush_at);
      F->th_bits[th_of[t][2]] = gt_bits(nextafter(f->subnormal_below, 0.0));
    } else if (f->subnormal_below > 0x1p-126) {
      F->ok = false; /* an implied limit is not implied: not this path */
    }
  }
}

/* Biased exponent of the largest |x| the lanes' keys have seen (0 if none). */
static int top_exponent(const f32_fast *F) {
  uint32_t amax = 0;
  for (int l = 0; l < F32_LANES; l++) {
    int32_t k0 = F->key_min[l], k1 = F->key_max[l];
    uint32_t a0 = k0 < 0 ? (uint32_t)~k0 & 0x7fffffff : (k0 == INT32_MAX ? 0 : (uint32_t)k0);
    uint32_t a1 = k1 < 0 ? (k1 == INT32_MIN ? 0 : (uint32_t)~k1 & 0x7fffffff) : (uint32_t)k1;
    if (a0 > amax) amax = a0;
    if (a1 > amax) amax = a1;
  }
  return (int)(amax >> 23);
}

/* Biased exponent of the smallest non-zero |x| the lanes have seen (255 if none). */
static int bottom_exponent(const f32_fast *F) {
  uint32_t aminm1 = UINT32_MAX;
  for (int l = 0; l < F32_LANES; l++)
    if (F->abs_min_m1[l] < aminm1) aminm1 = F->abs_min_m1[l];
  return aminm1 == UINT32_MAX ? 255 : (int)((aminm1 + 1) >> 23);
}

/* Bank counts into exponent counts: a pair (lo, hi) counts once for each of
 * its two codes. Only codes of exponents the lanes have seen can be non-zero
 * (plus "none"), so small scans fold a small corner of the banks. */
static void pair_fold(f32_fast *F) {
  pair_state *P = F->pairs;
  if (P->pending == 0) return;
  int first = bottom_exponent(F) - P->base, last = top_exponent(F) - P->base;
  if (first < 0) first = 0;
  if (last > WINDOW_CODES - 1) last = WINDOW_CODES - 1;
  int codes[64], nc = 0;
  for (int k = first; k <= last; k++)
    codes[nc++] = k;
  codes[nc++] = WINDOW_CODES;
  uint64_t row[64] = {0}, col[64] = {0};
  for (int x = 0; x < nc; x++) {
    int hi = codes[x];
    for (int y = 0; y < nc; y++) {
      int lo = codes[y];
      uint32_t c = 0;
      for (int b = 0; b < PAIR_BANKS; b++) {
        c += P->bank[b][hi * 64 + lo];
        P->bank[b][hi * 64 + lo] = 0;
      }
      row[hi] += c;
      col[lo] += c;
    }
  }
  for (int k = 0; k < WINDOW_CODES; k++)
    P->exp[P->base + k] += row[k] + col[k];
  P->pending = 0;
}

static void pair_rebase(f32_fast *F, int top) {
  pair_state *P = F->pairs;
  int base = top - (WINDOW_CODES - 2); /* one binade of headroom above the top */
  if (base < 1) base = 1;              /* zeros (exponent 0) must stay outside */
  if (base > WINDOW_BASE_MAX) base = WINDOW_BASE_MAX;
  if (base == P->base) return;
  pair_fold(F);
  P->base = base;
}

static void f32_fast_fold(mp_stats *s, f32_fast *F) {
  if (F->pairs) {
    pair_fold(F);
    for (int E = 1; E <= 254; E++) {
      s->exp_hist[E - 127 - MP_HIST_MIN] += F->pairs->exp[E];
      F->pairs->exp[E] = 0;
    }
  }
  for (int E = 1; E <= 254; E++) {
    uint64_t c = 0;
    for (int l = 0; l < F32_LANES; l++) {
      c += F->sub[l][E];
      F->sub[l][E] = 0;
    }
    s->exp_hist[E - 127 - MP_HIST_MIN] += c;
  }
  for (int k = 0; k < IND_COUNT; k++)
    for (int l = 0; l < F32_LANES; l++) {
      F->ind[k] += F->ind_lanes[k][l];
      F->ind_lanes[k][l] = 0;
    }
  F->values += F->vectors * (uint64_t)F->lanes;
  F->vectors = 0;
}

static void f32_fast_finish(mp_stats *s, f32_fast *F) {
  f32_fast_fold(s, F);
  if (F->values == 0) return;
  uint64_t zeros = F->ind[IND_ZEROS], nonzero = F->values - zeros;
  s->count += F->values;
  s->zeros += zeros;
  s->negatives += F->ind[IND_NEGATIVES];
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t over = F->ind[th_of[t][0]];
    uint64_t above_flush = th_of[t][1] >= 0 ? F->ind[th_of[t][1]] : nonzero;
    uint64_t normal_or_over = th_of[t][2] >= 0 ? F->ind[th_of[t][2]] : nonzero;
    s->casts[t][MP_CAST_OVERFLOW] += over;
    s->casts[t][MP_CAST_UNDERFLOW] += nonzero - above_flush;
    s->casts[t][MP_CAST_SUBNORMAL] += above_flush - normal_or_over;
    s->casts[t][MP_CAST_NORMAL] += normal_or_over - over;
  }
  /* Keys: negative values have their magnitude bits flipped; -0 is key -1,
   * below +0's key 0, which is the total order the record uses. */
  int32_t kmin = INT32_MAX, kmax = INT32_MIN;
  uint32_t aminm1 = UINT32_MAX;
  for (int l = 0; l < F32_LANES; l++) {
    if (F->key_min[l] < kmin) kmin = F->key_min[l];
    if (F->key_max[l] > kmax) kmax = F->key_max[l];
    if (F->abs_min_m1[l] < aminm1) aminm1 = F->abs_min_m1[l];
  }
  double mn = bits_to_float((uint32_t)(kmin < 0 ? kmin ^ 0x7fffffff : kmin));
  double mx = bits_to_float((uint32_t)(kmax < 0 ? kmax ^ 0x7fffffff : kmax));
  if (isnan(s->min) || total_less(mn, s->min)) s->min = mn;
  if (isnan(s->max) || total_less(s->max, mx)) s->max = mx;
  double amax = fabs(mn) > fabs(mx) ? fabs(mn) : fabs(mx); /* the extremes hold |x|'s max */
  if (isnan(s->absmax) || amax > s->absmax) s->absmax = amax;
  if (aminm1 != UINT32_MAX) {
    double amin = bits_to_float(aminm1 + 1);
    if (amin < s->min_abs_nonzero) s->min_abs_nonzero = amin;
  }
}

/* Exponent counts of n (8 or 16) values the vector code has just loaded:
 * scalar 64-bit loads (two values each, hot in L1) spread over eight
 * sub-histograms, so that repeated exponents do not form a chain of
 * dependent increments. Scalar extraction beats storing the vector of
 * exponents and reloading it lane by lane. */
static inline __attribute__((always_inline)) void hist_exponents8(uint32_t (*sub)[256],
                                                                  const float *p) {
  uint64_t x0, x1, x2, x3;
  memcpy(&x0, p, 8);
  memcpy(&x1, p + 2, 8);
  memcpy(&x2, p + 4, 8);
  memcpy(&x3, p + 6, 8);
  sub[0][(x0 >> 23) & 0xff]++;
  sub[4][(x0 >> 55) & 0xff]++;
  sub[1][(x1 >> 23) & 0xff]++;
  sub[5][(x1 >> 55) & 0xff]++;
  sub[2][(x2 >> 23) & 0xff]++;
  sub[6][(x2 >> 55) & 0xff]++;
  sub[3][(x3 >> 23) & 0xff]++;
  sub[7][(x3 >> 55) & 0xff]++;
}

#define LOADV(p) _mm256_loadu_si256((const __m256i *)(p))
#define STOREV(p, v) _mm256_storeu_si256((__m256i *)(p), v)

/* Four vectors of 32-bit 0/-1 flags into one vector of byte flags. Within
 * each 128-bit half, bytes 4j..4j+3 come from argument j. */
__attribute__((target("avx2"))) static inline __m256i pack4(__m256i c0, __m256i c1, __m256i c2,
                                                            __m256i c3) {
  return _mm256_packs_epi16(_mm256_packs_epi32(c0, c1), _mm256_packs_epi32(c2, c3));
}

/* Adds the byte counters of group g (indicators 4g..4g+3) to the totals. */
static void add_byte_counts(f32_fast *F, int g, const uint8_t bytes[32]) {
  for (int j = 0; j < 4; j++) {
    int k = 4 * g + j;
    if (k >= IND_COUNT) break;
    uint64_t c = 0;
    for (int b = 0; b < 4; b++)
      c += (uint64_t)bytes[4 * j + b] + bytes[16 + 4 * j + b];
    F->ind[k] += c;
  }
}

__attribute__((target("avx2"))) static void f32_run_avx2(mp_stats *s, const src_info *I,
                                                         f32_fast *F, const float *p, uint64_t n) {
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
  const __m256i max_normal = _mm256_set1_epi32(0x7f7fffff);
  const __m256i min_normal = _mm256_set1_epi32(0x00800000);
  const __m256i minus_one = _mm256_set1_epi32(-1);
  const __m256i zero = _mm256_setzero_si256();
  __m256i th[TH_COUNT];
  for (int k = 0; k < TH_COUNT; k++)
    th[k] = _mm256_set1_epi32(F->th_bits[k]);
  __m256i kmin = LOADV(F->key_min), kmax = LOADV(F->key_max), aminm1 = LOADV(F->abs_min_m1);
  uint64_t i = 0;
  while (i + 8 <= n) {
    uint64_t nvec = (n - i) / 8;
    if (nvec > F32_BLOCK_VECTORS) nvec = F32_BLOCK_VECTORS;
    __m256i acc0 = zero, acc1 = zero, acc2 = zero;
    uint64_t fast = 0;
    for (uint64_t end = i + nvec * 8; i < end; i += 8) {
      __m256i v = LOADV(p + i);
      __m256i a = _mm256_and_si256(v, absmask);
      __m256i is_zero = _mm256_cmpeq_epi32(a, zero);
      /* inf/NaN, or subnormal (below min normal but not zero). */
      __m256i slow =
          _mm256_or_si256(_mm256_cmpgt_epi32(a, max_normal),
                          _mm256_andnot_si256(is_zero, _mm256_cmpgt_epi32(min_normal, a)));
      if (!_mm256_testz_si256(slow, slow)) {
        for (int l = 0; l < 8; l++)
          acc_value(s, I, p[i + l], 1);
        continue;
      }
      __m256i key = _mm256_xor_si256(v, _mm256_and_si256(_mm256_srai_epi32(v, 31), absmask));
      kmin = _mm256_min_epi32(kmin, key);
      kmax = _mm256_max_epi32(kmax, key);
      aminm1 = _mm256_min_epu32(aminm1, _mm256_add_epi32(a, minus_one));
      __m256i neg = _mm256_cmpgt_epi32(minus_one, key); /* x < 0, not -0 */
      acc0 =
          _mm256_sub_epi8(acc0, pack4(_mm256_cmpgt_epi32(a, th[0]), _mm256_cmpgt_epi32(a, th[1]),
                                      _mm256_cmpgt_epi32(a, th[2]), _mm256_cmpgt_epi32(a, th[3])));
      acc1 =
          _mm256_sub_epi8(acc1, pack4(_mm256_cmpgt_epi32(a, th[4]), _mm256_cmpgt_epi32(a, th[5]),
                                      _mm256_cmpgt_epi32(a, th[6]), _mm256_cmpgt_epi32(a, th[7])));
      acc2 = _mm256_sub_epi8(
          acc2, pack4(_mm256_cmpgt_epi32(a, th[8]), _mm256_cmpgt_epi32(a, th[9]), is_zero, neg));
      hist_exponents8(F->sub, p + i);
      fast++;
    }
    uint8_t bytes[32];
    STOREV(bytes, acc0);
    add_byte_counts(F, 0, bytes);
    STOREV(bytes, acc1);
    add_byte_counts(F, 1, bytes);
    STOREV(bytes, acc2);
    add_byte_counts(F, 2, bytes);
    F->vectors += fast;
    if (F->vectors >= F32_FOLD_EVERY) f32_fast_fold(s, F);
  }
  STOREV(F->key_min, kmin);
  STOREV(F->key_max, kmax);
  STOREV(F->abs_min_m1, aminm1);
  for (; i < n; i++)
    acc_value(s, I, p[i], 1);
}

/* The same computation sixteen values at a time: compares into mask
 * registers, counts in 32-bit lanes (32 vector registers hold them all).
 * fp16 and bf16 sources are widened to fp32 first (exactly: vcvtph2ps, or a
 * shift), which makes their subnormals ordinary fp32 normals.
 *
 * The loop is a function of its own (f32_kernel and friends) with no call
 * inside: with the per-value fallback or the fold called from the loop body,
 * the compiler kept every accumulator in memory and the loop ran at the pace
 * of store-to-load forwarding. The kernel stops before a vector that needs
 * the per-value path (or after KERNEL_VECTORS vectors); its caller handles
 * that vector and the folds, and calls it again. */
#define KERNEL_VECTORS PAIR_KERNEL_VECTORS

#define TH_REG(k) const __m512i t##k = _mm512_set1_epi32(F->th_bits[k]);
#define CNT_LOAD(k) __m512i c##k = _mm512_loadu_si512(F->ind_lanes[k]);
#define CNT_STORE(k) _mm512_storeu_si512(F->ind_lanes[k], c##k);
#define CNT_BUMP(k)                                                                                \
  c##k = _mm512_mask_sub_epi32(c##k, _mm512_cmpgt_epi32_mask(a, t##k), c##k, minus_one);
#define FOR_TH(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
#define FOR_IND(X) FOR_TH(X) X(10) X(11)
_Static_assert(TH_COUNT == 10 && IND_ZEROS == 10 && IND_NEGATIVES == 11, "unrolled above");

/* Runs vectors from p + i while i + 16 <= n (at most KERNEL_VECTORS of
 * them) and returns where it stopped: before a vector holding a subnormal,
 * inf or NaN, or at the end. */
#define F32_KERNEL(NAME, T, LOAD_BITS, PAIRS)                                                      \
  __attribute__((target("avx512f"), noinline)) static uint64_t NAME(                               \
      f32_fast *F, pair_state *P, const T *p, uint64_t i, uint64_t n) {                            \
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff);                                         \
    const __m512i max_normal = _mm512_set1_epi32(0x7f7fffff);                                      \
    const __m512i min_normal = _mm512_set1_epi32(0x00800000);                                      \
    const __m512i minus_one = _mm512_set1_epi32(-1);                                               \
    /* Named registers, not arrays: the compiler keeps these out of memory. */                     \
    FOR_TH(TH_REG)                                                                                 \
    FOR_IND(CNT_LOAD)                                                                              \
    __m512i kmin = _mm512_loadu_si512(F->key_min), kmax = _mm512_loadu_si512(F->key_max);          \
    __m512i aminm1 = _mm512_loadu_si512(F->abs_min_m1);                                            \
    const __m512i none = _mm512_set1_epi32(WINDOW_CODES);                                          \
    const __m512i base = _mm512_set1_epi32(PAIRS ? P->base : 0);                                   \
    pair_count *b0 = PAIRS ? P->bank[0] : NULL, *b1 = PAIRS ? P->bank[1 % PAIR_BANKS] : NULL,      \
               *b2 = PAIRS ? P->bank[2 % PAIR_BANKS] : NULL,                                       \
               *b3 = PAIRS ? P->bank[3 % PAIR_BANKS] : NULL;                                       \
    uint32_t *esc = PAIRS ? P->escapes : NULL;                                                     \
    uint32_t(*sub)[256] = F->sub;                                                                  \
    uint64_t nesc = 0;                                                                             \
    uint64_t start = i;                                                                            \
    uint64_t end = n - i > 16 * (uint64_t)KERNEL_VECTORS ? i + 16 * (uint64_t)KERNEL_VECTORS : n;  \
    for (; i + 16 <= end; i += 16) {                                                               \
      __m512i v = LOAD_BITS(p + i);                                                                \
      __m512i a = _mm512_and_si512(v, absmask);                                                    \
      __mmask16 nonzero = _mm512_test_epi32_mask(a, a);                                            \
      __mmask16 slow = _mm512_cmpgt_epu32_mask(a, max_normal) |                                    \
                       (_mm512_cmplt_epu32_mask(a, min_normal) & nonzero);                         \
      if (slow) break;                                                                             \
      /* key = v ^ ((v >> 31) & absmask) */                                                        \
      __m512i key = _mm512_ternarylogic_epi32(v, _mm512_srai_epi32(v, 31), absmask, 0x78);         \
      kmin = _mm512_min_epi32(kmin, key);                                                          \
      kmax = _mm512_max_epi32(kmax, key);                                                          \
      aminm1 = _mm512_min_epu32(aminm1, _mm512_add_epi32(a, minus_one));                           \
      c10 = _mm512_mask_sub_epi32(c10, (__mmask16)~nonzero, c10, minus_one);                       \
      c11 = _mm512_mask_sub_epi32(c11, _mm512_cmplt_epi32_mask(key, minus_one), c11, minus_one);   \
      FOR_TH(CNT_BUMP)                                                                             \
      if (!PAIRS) {                                                                                \
        hist_exponents8(sub, (const float *)(const void *)(p + i));                                \
        hist_exponents8(sub + 8, (const float *)(const void *)(p + i + 8));                        \
        continue;                                                                                  \
      }                                                                                            \
      /* Exponent codes; zeros (exponent 0 < base) land outside the window. */                     \
      __m512i e = _mm512_srli_epi32(a, 23);                                                        \
      __m512i rel = _mm512_sub_epi32(e, base);                                                     \
      __mmask16 in = _mm512_cmplt_epu32_mask(rel, none);                                           \
      __m512i code = _mm512_mask_mov_epi32(none, in, rel);                                         \
      __mmask16 out = (__mmask16)(nonzero & ~in);                                                  \
      _mm512_storeu_si512(esc + nesc, _mm512_maskz_compress_epi32(out, e));                        \
      nesc += (unsigned)__builtin_popcount(out);                                                   \
      /* 64-bit lane = code(even) | code(odd) << 32 -> code(even) | code(odd) << 6 */              \
      __m128i idx = _mm512_cvtepi64_epi16(_mm512_or_si512(code, _mm512_srli_epi64(code, 26)));     \
      uint64_t lo = (uint64_t)_mm_cvtsi128_si64(idx),                                              \
               hi = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(idx, idx));                     \
      b0[lo & 0xffff]++;                                                                           \
      b1[(lo >> 16) & 0xffff]++;                                                                   \
      b2[(lo >> 32) & 0xffff]++;                                                                   \
      b3[lo >> 48]++;                                                                              \
      b0[hi & 0xffff]++;                                                                           \
      b1[(hi >> 16) & 0xffff]++;                                                                   \
      b2[(hi >> 32) & 0xffff]++;                                                                   \
      b3[hi >> 48]++;                                                                              \
    }                                                                                              \
    FOR_IND(CNT_STORE)                                                                             \
    _mm512_storeu_si512(F->key_min, kmin);                                                         \
    _mm512_storeu_si512(F->key_max, kmax);                                                         \
    _mm512_storeu_si512(F->abs_min_m1, aminm1);                                                    \
    F->vectors += (i - start) / 16;                                                                \
    if (PAIRS) {                                                                                   \
      P->pending += (i - start) / 16;                                                              \
      for (uint64_t k = 0; k < nesc; k++)                                                          \
        P->exp[esc[k]]++;                                                                          \
      F->recent_escapes = nesc;                                                                    \
    }                                                                                              \
    return i;                                                                                      \
  }

#define LOAD_F32(q) _mm512_loadu_si512(q)
#define LOAD_F16(q) _mm512_castps_si512(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(q))))
#define LOAD_BF16(q)                                                                               \
  _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(q))), 16)

F32_KERNEL(f32_kernel, float, LOAD_F32, 0)
F32_KERNEL(f16_kernel, uint16_t, LOAD_F16, 1)
F32_KERNEL(bf16_kernel, uint16_t, LOAD_BF16, 1)

#undef TH_REG
#undef CNT_LOAD
#undef CNT_STORE
#undef CNT_BUMP
#undef FOR_TH
#undef FOR_IND

/* Kernel calls; vectors with a subnormal, inf or NaN and the tail go value
 * by value through acc_value(), and the lane counters are folded in time. */
#define F32_DRIVER(NAME, KERNEL, T, DECODE)                                                        \
  static void NAME(mp_stats *s, const src_info *I, f32_fast *F, const T *p, uint64_t n) {          \
    pair_state *P = F->pairs;                                                                      \
    uint64_t i = 0;                                                                                \
    while (i + 16 <= n) {                                                                          \
      uint64_t j = KERNEL(F, P, p, i, n);                                                          \
      if (P && F->recent_escapes * 16 > j - i) pair_rebase(F, top_exponent(F));                    \
      if (P && P->pending >= PAIR_FOLD_VECTORS) pair_fold(F);                                      \
      if (F->vectors >= F32_FOLD_EVERY - KERNEL_VECTORS) f32_fast_fold(s, F);                      \
      if (j == i) {                                                                                \
        for (int l = 0; l < 16; l++)                                                               \
          acc_value(s, I, DECODE(p[i + l]), 1);                                                    \
        j = i + 16;                                                                                \
      }                                                                                            \
      i = j;                                                                                       \
    }                                                                                              \
    for (; i < n; i++)                                                                             \
      acc_value(s, I, DECODE(p[i]), 1);                                                            \
  }

#define AS_IS(x) (x)
F32_DRIVER(f32_run_avx512, f32_kernel, float, AS_IS)
F32_DRIVER(f16_run_avx512, f16_kernel, uint16_t, mp_fp16_to_float)
F32_DRIVER(bf16_run_avx512, bf16_kernel, uint16_t, mp_bf16_to_float)

/* ---- fp32, AVX-512 bit planes ---------------------------------------------
 *
 * The kernel above spends about half its time on the exponent histogram
 * (sixteen scalar increments per vector) and ten compares with their
 * counters. This one counts both through bit planes, with no scalar work per
 * vector, on CPUs with AVX-512 VBMI, BITALG and GFNI (Ice Lake, Zen 4 and
 * later):
 *
 * - Exponents: plane 0 has, in each lane, bit (E mod 32) set for a non-zero
 *   value of biased exponent E (min(|x| bits, 1) rotated by E); plane 1
 *   rotates x's bit 28 (bit 5 of E) by E, so it has bit (E + 28) mod 32 set
 *   where bit 5 of E is. Their bit counts per position give the counts of E
 *   mod 64, which are the exponent counts as long as the block's non-zero
 *   exponents span fewer than 64 binades. (Rotating data bits instead of
 *   masking a constant keeps compares, which this CPU class runs on two
 *   pipes only, out of the way: about 6 % faster.)
 * - Thresholds: every cast outcome is constant within a binade except in the
 *   binade of a threshold, so count(|x| > T) is the count of the binades above
 *   T's plus the count above T within T's binade. For the latter, one table
 *   lookup (vpermd on bits 2..5 of E) gives each value the threshold of its
 *   slot, one compare says whether |x| is above it, and plane 2 records that
 *   flag at bit ((E >> 2) mod 32). A slot position also collects values of
 *   other binades; those binades are wholly above or wholly below T, and the
 *   exponent counts say how many to take off. Two binades hold two
 *   thresholds each (fp16's and e5m2's overflow limits, and their subnormal
 *   limits): a second table gives the higher one, and a value above it
 *   rotates two bits, the second 16 positions on (where, again, the other
 *   binades sharing that position are wholly above or below).
 * - The planes are summed per bit position with a carry-save tree (Harley and
 *   Seal: vpternlogd sum and majority, 7 per 8 planes), and the planes of
 *   weight 8 are counted by a byte transpose (vpermb), an 8x8 bit transpose
 *   per qword (gf2p8affineqb) and byte popcounts, into byte counters.
 * - min and max: the signed and the unsigned integer max of x's bits are
 *   the largest positive and the most negative x (when there are such), and
 *   with min |x| != 0 and the zero count they give min, max and max |x|.
 *
 * No vector is checked for subnormal, inf or NaN values on the way. A block
 * is checked once at its end: its largest |x| must be finite, its smallest
 * non-zero |x| normal, and the two exponents less than 64 apart. A block that
 * fails is counted again by the kernel above (whose per-vector checks send
 * such vectors to acc_value()); nothing of the failed attempt is kept. After
 * a failed block the plane kernel sits out a growing number of blocks, so
 * that data which keeps failing costs little more than before. */
#define PLANE_ISA "avx512f,avx512bw,avx512dq,avx512vbmi,avx512bitalg,gfni"
#define PLANE_INLINE __attribute__((target(PLANE_ISA), always_inline)) static inline
#define PLANE_BLOCK_VECTORS 4096 /* per kernel call: 16-bit counters hold its counts */
#define PLANE_CHUNK_VECTORS 128  /* byte counters: 16 counts of at most 8 between widenings */

/* What one kernel call leaves for plane_commit(). */
typedef struct plane_out {
  int32_t smax[16];    /* signed max of x's bits: the largest x if any x has its sign clear */
  uint32_t umax[16];   /* unsigned max: the smallest x if any x has its sign set */
  uint32_t aminm1[16]; /* min of |x|'s bits - 1: zeros wrap to UINT32_MAX and drop out */
  uint32_t neg[16];
  uint16_t eights[3][32]; /* per plane and bit position: count of weight 8 */
  uint16_t rest[3][32];   /* the same, weight 1 (what the tree held at the end) */
} plane_out;

/* Sets up the tables; false if the thresholds do not fit them. */
static bool plane_tables_init(plane_tables *T, const int32_t th_bits[TH_COUNT]) {
  for (int j = 0; j < PLANE_SLOTS; j++) {
    T->th[j] = T->th2[j] = INT32_MAX;
    T->th_index[j] = T->th2_index[j] = -1;
  }
  for (int k = 0; k < TH_COUNT; k++) {
    int E = th_bits[k] >> 23;
    if (E < 1 || E > 254) return false;
    int j = (E >> 2) % PLANE_SLOTS;
    if (T->th_index[j] < 0) {
      T->th[j] = th_bits[k];
      T->th_index[j] = k;
      continue;
    }
    /* A second threshold only in the same binade, and only one. */
    if (T->th2_index[j] >= 0 || T->th[j] >> 23 != E || T->th[j] == th_bits[k]) return false;
    T->th2[j] = th_bits[k];
    T->th2_index[j] = k;
    if (T->th2[j] < T->th[j]) { /* th2 is the higher one */
      int32_t t = T->th[j];
      int i = T->th_index[j];
      T->th[j] = T->th2[j];
      T->th_index[j] = T->th2_index[j];
      T->th2[j] = t;
      T->th2_index[j] = i;
    }
  }
  return true;
}

/* Per bit position of x's 32-bit lanes, how many lanes have it set: bytes
 * 0..31 for lanes 0..7, bytes 32..63 for lanes 8..15, byte 8j + m for bit
 * 8j + m. gather puts byte j of eight lanes into one qword, gf2p8affineqb
 * with x as the matrix transposes each qword's 8x8 bits, popcount counts. */
PLANE_INLINE __m512i plane_counts(__m512i x, __m512i gather, __m512i columns) {
  __m512i t = _mm512_permutexvar_epi8(gather, x);
  t = _mm512_gf2p8affine_epi64_epi8(columns, t, 0);
  return _mm512_popcnt_epi8(t);
}

/* Adds byte counts (layout of plane_counts) to 32 16-bit counters. */
PLANE_INLINE void plane_add_words(uint16_t *w, __m512i bytes) {
  __m512i lo = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(bytes));
  __m512i hi = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(bytes, 1));
  _mm512_storeu_si512(w, _mm512_add_epi16(_mm512_loadu_si512(w), _mm512_add_epi16(lo, hi)));
}

/* Carry-save adder: (hi, lo) = a + b + c, bit by bit. */
#define PLANE_CSA(hi, lo, a, b, c)                                                                 \
  do {                                                                                             \
    __m512i a_ = (a), b_ = (b), c_ = (c);                                                          \
    lo = _mm512_ternarylogic_epi32(a_, b_, c_, 0x96);                                              \
    hi = _mm512_ternarylogic_epi32(a_, b_, c_, 0xe8);                                              \
  } while (0)

/* One vector: the statistics kept per lane, and its three planes. */
#define PLANE_ONE(q, X0, X1, X2)                                                                   \
  do {                                                                                             \
    __m512i v = plane_load(p, q, kind);                                                            \
    __m512i a = _mm512_and_si512(v, absmask);                                                      \
    smax = _mm512_max_epi32(smax, v);                                                              \
    umax = _mm512_max_epu32(umax, v);                                                              \
    __m512i nz = _mm512_min_epu32(a, one); /* 1 if x != 0 */                                       \
    aminm1 = _mm512_min_epu32(aminm1, _mm512_add_epi32(a, minus_one));                             \
    neg = _mm512_mask_add_epi32(neg, _mm512_cmplt_epi32_mask(v, zero), neg, nz);                   \
    __m512i e = _mm512_srli_epi32(v, 23);                                                          \
    X0 = _mm512_rolv_epi32(nz, e);                                                                 \
    X1 = _mm512_rolv_epi32(_mm512_and_si512(v, bit28), e);                                         \
    __m512i slot = _mm512_srli_epi32(v, 25);                                                       \
    __m512i th = _mm512_permutexvar_epi32(slot, table);                                            \
    __m512i th2 = _mm512_permutexvar_epi32(slot, table2);                                          \
    __m512i src = _mm512_mask_mov_epi32(one, _mm512_cmpgt_epi32_mask(a, th2), both);               \
    X2 = _mm512_maskz_rolv_epi32(_mm512_cmpgt_epi32_mask(a, th), src, slot);                       \
  } while (0)

/* Two vectors, and their planes into the ones (first level of the tree). */
#define PLANE_PAIR(q, C0, C1, C2)                                                                  \
  do {                                                                                             \
    __m512i x0, x1, x2, y0, y1, y2;                                                                \
    PLANE_ONE(q, x0, x1, x2);                                                                      \
    PLANE_ONE((q) + 16, y0, y1, y2);                                                               \
    PLANE_CSA(C0, ones0, ones0, x0, y0);                                                           \
    PLANE_CSA(C1, ones1, ones1, x1, y1);                                                           \
    PLANE_CSA(C2, ones2, ones2, x2, y2);                                                           \
  } while (0)

/* Sixteen elements from element i of p as fp32 bits: fp32 (kind 0), fp16
 * (1) or bf16 (2) widened exactly. */
PLANE_INLINE __m512i plane_load(const void *p, uint64_t i, int kind) {
  if (kind == 0) return _mm512_loadu_si512((const float *)p + i);
  __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i));
  if (kind == 1) return _mm512_castps_si512(_mm512_cvtph_ps(h));
  return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
}

/* nvec vectors from p (a multiple of 8, at most PLANE_BLOCK_VECTORS) into
 * o; kind as for plane_load(), a constant in each caller below. */
PLANE_INLINE void plane_kernel(plane_out *o, const plane_tables *T, const void *p, uint64_t nvec,
                               int kind) {
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i minus_one = _mm512_set1_epi32(-1);
  const __m512i bit28 = _mm512_set1_epi32(1 << 28);
  const __m512i table = _mm512_loadu_si512(T->th);
  const __m512i table2 = _mm512_loadu_si512(T->th2), both = _mm512_set1_epi32(0x10001);
  /* Byte k of qword q is 4 * (8 * (q / 4) + k) + q % 4: byte q % 4 of lane
   * 8 * (q / 4) + k. Constants, not a table filled per call. */
  const __m512i gather = _mm512_set_epi64(
      0x3f3b37332f2b2723ll, 0x3e3a36322e2a2622ll, 0x3d3935312d292521ll, 0x3c3834302c282420ll,
      0x1f1b17130f0b0703ll, 0x1e1a16120e0a0602ll, 0x1d1915110d090501ll, 0x1c1814100c080400ll);
  const __m512i columns = _mm512_set1_epi64(0x8040201008040201ll); /* byte k: 1 << k */
  __m512i smax = _mm512_set1_epi32(INT32_MIN), umax = zero;
  __m512i aminm1 = _mm512_set1_epi32(-1), neg = zero;
  __m512i ones0 = zero, ones1 = zero, ones2 = zero, twos0 = zero, twos1 = zero, twos2 = zero;
  __m512i fours0 = zero, fours1 = zero, fours2 = zero;
  memset(o->eights, 0, sizeof o->eights);
  for (uint64_t chunk = 0; chunk < nvec; chunk += PLANE_CHUNK_VECTORS) {
    uint64_t end = nvec - chunk < PLANE_CHUNK_VECTORS ? nvec : chunk + PLANE_CHUNK_VECTORS;
    __m512i b0 = zero, b1 = zero, b2 = zero;
    for (uint64_t i = chunk; i < end; i += 8) {
      uint64_t q = 16 * i;
      __m512i ca0, ca1, ca2, cb0, cb1, cb2, fa0, fa1, fa2, ga0, ga1, ga2, e8;
      PLANE_PAIR(q, ca0, ca1, ca2);
      PLANE_PAIR(q + 32, cb0, cb1, cb2);
      PLANE_CSA(fa0, twos0, twos0, ca0, cb0);
      PLANE_CSA(fa1, twos1, twos1, ca1, cb1);
      PLANE_CSA(fa2, twos2, twos2, ca2, cb2);
      PLANE_PAIR(q + 64, ca0, ca1, ca2);
      PLANE_PAIR(q + 96, cb0, cb1, cb2);
      PLANE_CSA(ga0, twos0, twos0, ca0, cb0);
      PLANE_CSA(ga1, twos1, twos1, ca1, cb1);
      PLANE_CSA(ga2, twos2, twos2, ca2, cb2);
      PLANE_CSA(e8, fours0, fours0, fa0, ga0);
      b0 = _mm512_add_epi8(b0, plane_counts(e8, gather, columns));
      PLANE_CSA(e8, fours1, fours1, fa1, ga1);
      b1 = _mm512_add_epi8(b1, plane_counts(e8, gather, columns));
      PLANE_CSA(e8, fours2, fours2, fa2, ga2);
      b2 = _mm512_add_epi8(b2, plane_counts(e8, gather, columns));
    }
    plane_add_words(o->eights[0], b0);
    plane_add_words(o->eights[1], b1);
    plane_add_words(o->eights[2], b2);
  }
  /* What the tree holds: 4 * fours + 2 * twos + ones, at most 56 a byte. */
#define PLANE_REST(k)                                                                              \
  do {                                                                                             \
    __m512i c = plane_counts(fours##k, gather, columns);                                           \
    c = _mm512_add_epi8(_mm512_add_epi8(c, c), plane_counts(twos##k, gather, columns));            \
    c = _mm512_add_epi8(_mm512_add_epi8(c, c), plane_counts(ones##k, gather, columns));            \
    memset(o->rest[k], 0, sizeof o->rest[k]);                                                      \
    plane_add_words(o->rest[k], c);                                                                \
  } while (0)
  PLANE_REST(0);
  PLANE_REST(1);
  PLANE_REST(2);
#undef PLANE_REST
  _mm512_storeu_si512(o->smax, smax);
  _mm512_storeu_si512(o->umax, umax);
  _mm512_storeu_si512(o->aminm1, aminm1);
  _mm512_storeu_si512(o->neg, neg);
}

__attribute__((target(PLANE_ISA), noinline)) static void
f32_plane_kernel(plane_out *o, const plane_tables *T, const void *p, uint64_t nvec) {
  plane_kernel(o, T, p, nvec, 0);
}

__attribute__((target(PLANE_ISA), noinline)) static void
f16_plane_kernel(plane_out *o, const plane_tables *T, const void *p, uint64_t nvec) {
  plane_kernel(o, T, p, nvec, 1);
}

__attribute__((target(PLANE_ISA), noinline)) static void
bf16_plane_kernel(plane_out *o, const plane_tables *T, const void *p, uint64_t nvec) {
  plane_kernel(o, T, p, nvec, 2);
}

/* The order-preserving integer key of the float with bits u (as key_min). */
static int32_t bits_key(uint32_t u) {
  return (int32_t)(u ^ ((uint32_t)((int32_t)u >> 31) & 0x7fffffffu));
}

/* Checks the block the kernel counted into o and, if it passes, adds it to s
 * and F. Returns false (and changes nothing) if it does not. */
static bool plane_commit(mp_stats *s, f32_fast *F, const plane_out *o, uint64_t nvec) {
  uint32_t aminm1 = UINT32_MAX, umax = 0;
  int32_t smax = INT32_MIN;
  for (int l = 0; l < 16; l++) {
    if (o->aminm1[l] < aminm1) aminm1 = o->aminm1[l];
    if (o->umax[l] > umax) umax = o->umax[l];
    if (o->smax[l] > smax) smax = o->smax[l];
  }
  /* umax is the negative x of largest |x| if there is a negative (or -0),
   * smax the positive x of largest |x| if there is a positive (or +0); both
   * are one or the other, so max |x| is the larger of their magnitudes. */
  uint32_t amin = aminm1 == UINT32_MAX ? UINT32_MAX : aminm1 + 1; /* UINT32_MAX: no x != 0 */
  bool has_neg = umax >> 31, has_pos = smax >= 0;
  uint32_t amax = umax & 0x7fffffffu;
  if (((uint32_t)smax & 0x7fffffffu) > amax) amax = (uint32_t)smax & 0x7fffffffu;
  if (amax >= 0x7f800000u) return false; /* inf or NaN */
  uint64_t hist[256] = {0};
  int lo = 1, hi = 0; /* exponents of the non-zero values */
  uint64_t nonzero = 0;
  if (amin != UINT32_MAX) {
    if (amin < 0x00800000u) return false; /* subnormal */
    lo = (int)(amin >> 23);
    hi = (int)(amax >> 23);
    if (hi - lo >= 64) return false; /* exponents mod 64 would collide */
    uint32_t c0[32], c1[32];
    for (int b = 0; b < 32; b++) {
      c0[b] = 8u * o->eights[0][b] + o->rest[0][b];
      /* Plane 1 rotated bit 28: residue b sits at bit b + 28. */
      c1[b] = 8u * o->eights[1][(b + 28) & 31] + o->rest[1][(b + 28) & 31];
    }
    for (int E = lo; E <= hi; E++) {
      int r = E & 31;
      hist[E] = E & 32 ? c1[r] : c0[r] - c1[r];
      nonzero += hist[E];
    }
  }
  uint64_t zeros = 16 * nvec - nonzero;
  /* above_binade[E]: non-zero values in the binades above E (E in lo .. hi). */
  uint64_t above_binade[256], acc = 0;
  for (int E = hi; E >= lo; E--) {
    above_binade[E] = acc;
    acc += hist[E];
  }
  const plane_tables *T = &F->plane_tab;
  uint64_t above[TH_COUNT] = {0};
  for (int j = 0; j < PLANE_SLOTS; j++) {
    int k = T->th_index[j];
    if (k < 0) continue;
    int Ek = T->th[j] >> 23;
    int pos = (Ek >> 2) & 31, pos2 = pos ^ 16;
    /* The other binades of the slot are wholly above T (and T2) or wholly
     * below: those above add one at bit pos or pos2, and with a T2 one at
     * the other bit too. */
    uint64_t above_same = 0, above_other = 0;
    for (int E = 4 * j; E < 256; E += 64)
      for (int d = 0; d < 4; d++)
        if (E + d > Ek && E + d >= lo && E + d <= hi)
          *(((E + d) >> 2 & 31) == pos ? &above_same : &above_other) += hist[E + d];
    uint64_t binades = Ek < lo ? nonzero : Ek > hi ? 0 : above_binade[Ek];
    uint64_t in = 8u * o->eights[2][pos] + o->rest[2][pos] - above_same;
    int k2 = T->th2_index[j];
    if (k2 < 0) {
      above[k] = in + binades;
      continue;
    }
    above[k] = in - above_other + binades;
    above[k2] = 8u * o->eights[2][pos2] + o->rest[2][pos2] - above_other - above_same + binades;
  }
  uint64_t neg = 0;
  for (int l = 0; l < 16; l++) {
    neg += o->neg[l];
  }
  for (int k = 0; k < TH_COUNT; k++)
    F->ind[k] += above[k];
  F->ind[IND_ZEROS] += zeros;
  F->ind[IND_NEGATIVES] += neg;
  F->values += 16 * nvec;
  for (int E = lo; E <= hi; E++)
    s->exp_hist[E - 127 - MP_HIST_MIN] += hist[E];
  /* Without a negative, the smallest x is +0 if there is a zero, else the
   * smallest |x|; without a positive, the largest is -0 or -(smallest |x|). */
  uint32_t mn = has_neg ? umax : zeros ? 0 : amin;
  uint32_t mx = has_pos ? (uint32_t)smax : zeros ? 0x80000000u : amin | 0x80000000u;
  int32_t kmin = bits_key(mn), kmax = bits_key(mx);
  if (kmin < F->key_min[0]) F->key_min[0] = kmin;
  if (kmax > F->key_max[0]) F->key_max[0] = kmax;
  if (amin != UINT32_MAX && amin - 1 < F->abs_min_m1[0]) F->abs_min_m1[0] = amin - 1;
  return true;
}

/* fp32, fp16 or bf16 (kind as for plane_load()) in blocks through the plane
 * kernel; blocks that fail its check, the ends, and blocks while the kernel
 * sits out go to the kernel before it (f32_run_avx512() and friends). */
static void plane_run(mp_stats *s, const src_info *I, f32_fast *F, const void *p, uint64_t n,
                      int kind) {
  plane_out o;
  size_t size = kind == 0 ? 4 : 2;
  uint64_t i = 0;
  for (;;) {
    uint64_t nvec = (n - i) / 16;
    if (nvec > PLANE_BLOCK_VECTORS) nvec = PLANE_BLOCK_VECTORS;
    nvec &= ~(uint64_t)7;
    uint64_t m = nvec ? 16 * nvec : n - i; /* the rest when no block is left */
    const void *q = (const char *)p + i * size;
    bool done = false;
    if (nvec == 0) {
      /* the tail goes below */
    } else if (F->plane_skip > 0) {
      F->plane_skip--;
    } else {
      if (kind == 0)
        f32_plane_kernel(&o, &F->plane_tab, q, nvec);
      else if (kind == 1)
        f16_plane_kernel(&o, &F->plane_tab, q, nvec);
      else
        bf16_plane_kernel(&o, &F->plane_tab, q, nvec);
      done = plane_commit(s, F, &o, nvec);
      if (done) {
        F->plane_fails = 0;
      } else {
        /* 1, 2, 4, ... blocks off after consecutive failures. */
        F->plane_skip = 1u << (F->plane_fails < 6 ? F->plane_fails : 6);
        F->plane_fails++;
      }
    }
    if (!done && m > 0) {
      if (kind == 0)
        f32_run_avx512(s, I, F, q, m);
      else if (kind == 1)
        f16_run_avx512(s, I, F, q, m);
      else
        bf16_run_avx512(s, I, F, q, m);
    }
    i += m;
    if (nvec == 0) break;
  }
}

static bool cpu_has_avx512(void) {
  return __builtin_cpu_supports("avx512f");
}

static bool cpu_has_planes(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vbmi") &&
         __builtin_cpu_supports("avx512bitalg") && __builtin_cpu_supports("gfni");
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
  RUN_F32_AVX2,
  RUN_F32_AVX512,
  RUN_PATTERNS
} run_kind;

typedef struct scanner {
  mp_stats *s;
  const src_info *I;
  mp_dtype dtype;
  run_kind kind;
  pattern_counts patterns;
  f64_fast *f64;
#ifdef MP_HAVE_X86
  f32_fast *f32;
#endif
} scanner;

static void scan_run(scanner *S, const void *p, uint64_t n) {
  switch (S->kind) {
#ifdef MP_HAVE_X86
  case RUN_F32_AVX2:
    f32_run_avx2(S->s, S->I, S->f32, p, n);
    break;
  case RUN_F32_AVX512:
    if (S->f32->use_planes)
      plane_run(S->s, S->I, S->f32, p, n, S->dtype == MP_FP32 ? 0 : S->dtype == MP_FP16 ? 1 : 2);
    else if (S->dtype == MP_FP16)
      f16_run_avx512(S->s, S->I, S->f32, p, n);
    else if (S->dtype == MP_BF16)
      bf16_run_avx512(S->s, S->I, S->f32, p, n);
    else
      f32_run_avx512(S->s, S->I, S->f32, p, n);
    break;
#endif
  case RUN_PATTERNS:
    pattern_run(S->s, S->I, S->dtype, &S->patterns, p, n);
    break;
  case RUN_F64_FAST:
    f64_run_fast(S->s, S->I, S->f64, p, n);
    break;
  default:
    portable_run(S->s, S->I, S->dtype, p, n);
    break;
  }
}

/* Pattern counting pays 2^16 counters per call: only worth it on big views. */
#define PATTERN16_MIN_ELEMENTS (1u << 18)

#ifdef MP_HAVE_X86
static void start_f32_fast(scanner *S, bool wide, bool pairs, bool planes) {
  S->f32 = malloc(sizeof(f32_fast));
  if (!S->f32) return;
  f32_fast_init(S->f32, wide ? 16 : 8);
  if (wide && planes && cpu_has_planes())
    S->f32->use_planes = plane_tables_init(&S->f32->plane_tab, S->f32->th_bits);
  if (pairs && S->f32->ok) {
    /* The escape buffer needs no clearing; banks and counts do. */
    pair_state *P = malloc(sizeof *P);
    if (P) {
      memset(P->bank, 0, sizeof P->bank);
      memset(P->exp, 0, sizeof P->exp);
      P->pending = 0;
      P->base = WINDOW_BASE_START;
    }
    S->f32->pairs = P;
  }
  if (!S->f32->ok || (pairs && !S->f32->pairs)) {
    free(S->f32);
    S->f32 = NULL;
    return;
  }
  S->kind = wide ? RUN_F32_AVX512 : RUN_F32_AVX2;
}
#endif

static void choose_kind(scanner *S, mp_scan_impl impl, uint64_t total) {
  S->kind = RUN_PORTABLE;
  if (impl == MP_SCAN_PORTABLE) return;
  switch (S->dtype) {
  case MP_FP64:
    if (total < F64_FAST_MIN_ELEMENTS) break;
    S->f64 = malloc(sizeof(f64_fast));
    if (!S->f64) break;
    f64_fast_init(S->f64, S->I);
    S->kind = RUN_F64_FAST;
    break;
  case MP_FP32:
#ifdef MP_HAVE_X86
    if ((cpu_has_avx2() || cpu_has_avx512()) && total >= 8) {
      bool wide = cpu_has_avx512() && impl != MP_SCAN_AVX2;
      start_f32_fast(S, wide, false, impl != MP_SCAN_AVX512_NO_PLANES);
    }
#endif
    break;
  case MP_FP16:
  case MP_BF16:
#ifdef MP_HAVE_X86
    /* With AVX-512, 16-bit sources are widened to fp32 in registers. */
    if (cpu_has_avx512() && impl != MP_SCAN_AVX2 && total >= 16) {
      start_f32_fast(S, true, true, impl != MP_SCAN_AVX512_NO_PLANES);
      if (S->kind != RUN_PORTABLE) break;
    }
#endif
    /* fall through */
  case MP_FP8_E4M3:
  case MP_FP8_E5M2: {
    unsigned bits = mp_dtype_size(S->dtype) * 8;
    if (bits == 16 && total < PATTERN16_MIN_ELEMENTS) break;
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
    f32_fast_finish(S->s, S->f32);
    free(S->f32->pairs);
    free(S->f32);
    break;
#endif
  case RUN_PATTERNS:
    pattern_fold(S->s, S->I, S->dtype, &S->patterns);
    free(S->patterns.cnt);
    break;
  case RUN_F64_FAST:
    f64_fast_finish(S->s, S->I, S->f64);
    free(S->f64);
    break;
  default:
    break;
  }
}

int mp_scan_with(mp_stats *s, const mp_view *v, mp_scan_impl impl) {
  int rc = check_view(s, v);
  if (rc < 0) return rc;
  if (v->rows == 0 || v->cols == 0) return 0;
  uint64_t batch = v->batch ? v->batch : 1;
  unsigned size = mp_dtype_size(v->dtype);
  scanner S = {.s = s, .I = info_of(v->dtype), .dtype = v->dtype};
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

int mp_scan(mp_stats *s, const mp_view *v) {
  return mp_scan_with(s, v, MP_SCAN_AUTO);
}

int mp_scan_contiguous(mp_stats *s, const void *data, uint64_t n) {
  if (!s) return -EINVAL;
  mp_view v = {.dtype = s->dtype, .data = data, .rows = n, .cols = 1, .ld = n, .batch = 1};
  return mp_scan(s, &v);
}
