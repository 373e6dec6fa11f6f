/* Internals of the host scanner, shared by its paths: the per-source tables,
 * the per-value reference step (acc_value), and the state of the fp32-family
 * fast paths. analysis/scan.c picks a path per view; each path lives in its
 * own file:
 *   scan_portable.c  plain C per value, and bit-pattern counting (8/16-bit)
 *   scan_fp64.c      fp64, scalar, binned by exponent
 *   scan_fp64_avx512.c  fp64 with AVX-512, levels looked up per binade
 *   scan_fp64_avx2.c  fp64 with AVX2, every level compared
 *   scan_f32.c       state of the fp32/fp16/bf16 vector paths (init, folds, finish)
 *   scan_avx2.c      fp32 with AVX2
 *   scan_avx512.c    fp32, fp16, bf16 with AVX-512 (exponent pairs for 16-bit)
 *   scan_planes.c    fp32, fp16, bf16 with AVX-512 bit planes
 *   scan_classes.c   fp8, fp16, bf16 with AVX-512 class planes
 *   scan_classes_avx2.c  fp8, fp16, bf16 with AVX2 class ids
 * Every path produces bit-identical records (tests/analysis checks it). */
#ifndef MPPROF_ANALYSIS_SCAN_INTERNAL_H
#define MPPROF_ANALYSIS_SCAN_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "analysis/scan.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MP_HAVE_X86 1
#include <immintrin.h>

/* The vector kernels ask for the source lines SCAN_PREFETCH_AHEAD bytes ahead
 * of the step they are on (prefetcht0, one per 64-byte line the step reads).
 * A kernel's step is long (tens of vector operations per line), so the
 * hardware's own prefetch and out-of-order loads keep too few misses in
 * flight to hide memory's latency. On a 2-core Intel AVX-512 VM (2026-12-04,
 * `scan_host 256 3`, ratios to a read of the same 256 MiB) the fp16 class
 * kernel scanned 13.6 GB/s from cache but 5.6-7.7 from memory (0.48-0.51
 * of the read); 1, 2, 3 and 4 KB ahead gave 0.62, 0.69-0.71, 0.73-0.75 and
 * 0.73. With 3 KB: AVX-512 fp32 0.59-0.66 -> 0.69-0.71, 16-bit 0.47-0.51 ->
 * 0.72-0.74, fp8 0.46-0.57 -> 0.76-0.82, fp64 0.25-0.28 -> 0.68-0.69; the
 * AVX2 kernels 0.11-0.29 -> 0.26-0.54. From cache it costs AVX-512 fp32
 * about 6%. Prefetches never fault, and the address is formed as an
 * integer, so lines past the buffer's end are only asked for, never read.
 * The same lines SCAN_PREFETCH_L2_AHEAD bytes further on are asked for into
 * L2 (prefetcht1), so that the near prefetch finds them there: on the same
 * VM in a later session (`scan_host 256 3`, six runs alternating with
 * none), AVX-512 fp32 0.67-0.68 -> 0.76-0.85, fp16 0.67-0.69 -> 0.81-0.84,
 * bf16 0.69-0.71 -> 0.77-0.81; fp8, fp64 and the AVX2 kernels within their
 * run-to-run spread; 2 KB further gave 0.76 / 0.78 / 0.79, 4 KB 0.82 / 0.81
 * / 0.79, 16 KB as 8 KB. Cache-resident fp16 (2 MiB) unchanged (12.7-12.9
 * GB/s). On a 2-core AMD Zen 5 VM the L2 prefetch cost instead
 * (2026-12-07, `scan_host 256 3`, two runs each, the same build with and
 * without it, GB/s): fp32 13.6 / 10.9 -> 14.9 / 14.2, e4m3 15.7 / 13.6 ->
 * 16.5 / 17.3, e5m2 11.4 / 10.2 -> 12.5 / 12.1, fp64 12.2 / 10.8 -> 13.5 /
 * 13.9, fp16 and bf16 within their spread (12-14); 2 and 4 KB ahead into
 * L1 without it as 3 KB, 16 and 32 KB ahead into L2 no better. So it is
 * asked for on Intel CPUs only (mp_scan_prefetch_l2, set once with the
 * scanner's tables). Other distances: -DSCAN_PREFETCH_AHEAD=N,
 * -DSCAN_PREFETCH_L2_AHEAD=N (0: never an L2 prefetch). */
#ifndef SCAN_PREFETCH_AHEAD
#define SCAN_PREFETCH_AHEAD 3072
#endif
#ifndef SCAN_PREFETCH_L2_AHEAD
#define SCAN_PREFETCH_L2_AHEAD 8192
#endif

/* Whether scan_prefetch asks for the lines SCAN_PREFETCH_L2_AHEAD on (set
 * by mp_scan_prepare() and every scan before its kernels run). */
extern bool mp_scan_prefetch_l2;

__attribute__((always_inline)) static inline void scan_prefetch(const void *p, unsigned lines) {
  uintptr_t a = (uintptr_t)p + SCAN_PREFETCH_AHEAD;
  for (unsigned l = 0; l < lines; l++)
    _mm_prefetch((const char *)(a + 64u * l), _MM_HINT_T0);
  if (SCAN_PREFETCH_L2_AHEAD > 0 && mp_scan_prefetch_l2)
    for (unsigned l = 0; l < lines; l++)
      _mm_prefetch((const char *)(a + SCAN_PREFETCH_L2_AHEAD + 64u * l), _MM_HINT_T1);
}
#endif

/* |x| bits of +inf: every magnitude from it up is inf or NaN (the class
 * kernels, AVX-512 and AVX2, leave those out of their extremes or to other
 * paths). e4m3 has no inf. */
#define F16_INF_BITS 0x7c00u
#define BF16_INF_BITS 0x7f80u
#define E5M2_INF_BITS 0x7cu

/* fp64 has the widest range: emax - emin_sub + 1 bins. */
#define SRC_MAX_BINS (1023 + 1074 + 1)
#define OUTCOME_BOUNDARY 0xff

typedef struct src_info {
  int lo, hi; /* histogram range of the source */
  /* outcome[t][e - lo]: the cast outcome shared by the whole binade, or
   * OUTCOME_BOUNDARY when the binade straddles one of t's thresholds. */
  uint8_t outcome[MP_TARGET_COUNT][SRC_MAX_BINS];
} src_info;

/* The tables of source dtype d (built once). */
const src_info *mp_scan_info_of(mp_dtype d);

/* ---- the portable per-value path ---------------------------------------- */

static inline bool total_less(double a, double b) {
  if (a < b) return true;
  return a == b && signbit(a) && !signbit(b);
}

/* min, max and max |x| of the record after a finite value x. */
static inline void acc_extremes(mp_stats *s, double x) {
  if (isnan(s->min) || total_less(x, s->min)) s->min = x;
  if (isnan(s->max) || total_less(s->max, x)) s->max = x;
  double a = fabs(x);
  if (isnan(s->absmax) || a > s->absmax) s->absmax = a;
}

/* Every field of c copies of x but min, max, max |x| and min |x|: the counts
 * (class folds add these for a whole class from one member). */
static inline void acc_counts(mp_stats *s, const src_info *I, double x, uint64_t c) {
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
  if (x == 0) {
    s->zeros += c;
    return;
  }
  /* floor(log2|x|): the biased exponent for normal doubles (every value of
   * the narrower sources is one), ilogb() for fp64 subnormals. */
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  if (e == -1023) e = ilogb(x);
  s->exp_hist[e - MP_HIST_MIN] += c;
  int i = e - I->lo;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint8_t o = I->outcome[t][i];
    if (o == OUTCOME_BOUNDARY) o = (uint8_t)mp_cast_classify(x, (mp_target)t);
    s->casts[t][o] += c;
  }
}

/* c copies of the value x into s (c > 1 when folding pattern counts). */
static inline void acc_value(mp_stats *s, const src_info *I, double x, uint64_t c) {
  if (isfinite(x)) {
    acc_extremes(s, x);
    if (x != 0 && fabs(x) < s->min_abs_nonzero) s->min_abs_nonzero = fabs(x);
  }
  acc_counts(s, I, x, c);
}

/* What acc_counts() counts for one value: the class paths (scan_classes.c,
 * scan_classes_avx2.c) put values with equal signatures in one class. */
typedef struct cls_sig {
  uint8_t kind; /* 0: not in any class (NaN), 1: zero, 2: finite non-zero, 3: inf */
  int16_t e;
  uint8_t out[MP_TARGET_COUNT];
} cls_sig;

static inline bool mp_cls_sig_equal(const cls_sig *a, const cls_sig *b) {
  return a->kind == b->kind && a->e == b->e && memcmp(a->out, b->out, sizeof a->out) == 0;
}

static inline cls_sig mp_cls_sig_of(const src_info *I, double x) {
  cls_sig g = {0};
  if (isnan(x)) return g;
  if (isinf(x)) {
    g.kind = 3;
    return g;
  }
  if (x == 0) {
    g.kind = 1;
    return g;
  }
  g.kind = 2;
  g.e = (int16_t)mp_exponent_of(x);
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint8_t o = I->outcome[t][g.e - I->lo];
    if (o == OUTCOME_BOUNDARY) o = (uint8_t)mp_cast_classify(x, (mp_target)t);
    g.out[t] = o;
  }
  return g;
}

/* acc_counts() of c values of signature g (a class's count, added without
 * classifying a member again: mp_cls_sig_of is what acc_counts counts). */
static inline void acc_sig_counts(mp_stats *s, const cls_sig *g, uint64_t c) {
  s->count += c;
  switch (g->kind) {
  case 0:
    s->nans += c;
    return;
  case 1:
    s->zeros += c;
    return;
  case 3:
    s->pos_infs += c; /* a class's members are positive */
    return;
  default:
    break;
  }
  s->exp_hist[g->e - MP_HIST_MIN] += c;
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    s->casts[t][g->out[t]] += c;
}

void mp_scan_portable_run(mp_stats *s, const src_info *I, mp_dtype d, const void *p, uint64_t n);

/* ---- pattern counting for 8- and 16-bit sources (scan_portable.c) ------- */

typedef struct pattern_counts {
  uint32_t *cnt; /* 2^bits counters per bank: two banks for 16-bit sources, eight for 8-bit */
  unsigned bits;
  unsigned banks;
  uint64_t pending;
} pattern_counts;

void mp_scan_pattern_run(mp_stats *s, const src_info *I, mp_dtype d, pattern_counts *P,
                         const void *p, uint64_t n);
void mp_scan_pattern_fold(mp_stats *s, const src_info *I, mp_dtype d, pattern_counts *P);

/* scan.c, tests: every counter the workspace's states hold is zero (what
 * taking them again relies on). */
bool mp_scan_ws_clean(const struct mp_scan_ws *ws);

/* ---- fp64, scalar (scan_fp64.c) ------------------------------------------ */

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
/* From a workspace's kept state (mp_scan_ws) the vector paths start at once:
 * from about 96 values they beat value by value (2-core Zen 5 VM, thread
 * CPU: 64 values 645 ns against 502, 96 667 against 755, 128 694 against
 * 1019, 256 652 against 2028). */
#define F64_KEPT_MIN_ELEMENTS 96

/* Target t's three fp64 levels as |x| bits: a value is at least subnormal,
 * normal, overflowing when its |x| bits exceed ret[0], ret[1], ret[2]. */
void mp_scan_f64_levels(int t, uint64_t ret[3]);
/* min, max, absmax and min |x| of the record from the extremes of order keys
 * (u ^ ((u >> 63) & INT64_MAX)) and of |x| bits - 1 (UINT64_MAX: none). */
void mp_scan_f64_note_extremes(mp_stats *s, int64_t key_min, int64_t key_max, uint64_t abs_min_m1);
/* The vector fp64 kernels' totals into s: `values` scanned, of them zeros
 * and negatives, and per target three level counts (above its flush, at
 * least its smallest normal, overflowing) of the non-zero values. */
void mp_scan_f64_add_levels(mp_stats *s, uint64_t values, uint64_t zeros, uint64_t negatives,
                            const uint64_t ind_lev[3 * MP_TARGET_COUNT]);
void mp_scan_f64_init(f64_fast *F, const src_info *I);
void mp_scan_f64_run(mp_stats *s, const src_info *I, f64_fast *F, const double *p, uint64_t n);
void mp_scan_f64_finish(mp_stats *s, const src_info *I, f64_fast *F);

/* A class-plane kernel call (a block, scan_classes.c) takes at most
 * MP_CLS_BLOCK_STEPS steps of 128 values, in chunks of MP_CLS_CHUNK_STEPS
 * steps whose byte counters take at most 8 per two steps (31 such: 248 of
 * 255; tests fill them with runs of one class). */
#define MP_CLS_BLOCK_STEPS 2048
#define MP_CLS_CHUNK_STEPS 62

/* The AVX-512 fp64 kernel (scan_fp64_avx512.c, f64_vec) packs per-lane
 * counts into fields of 64 / nfields bits, at most this many: a kernel call
 * ends after 2^bits - 1 vectors (a field takes one count per vector),
 * unpacking its fields, so wider fields make fewer calls (7 fields today:
 * 9 bits, 511 vectors; at 6 bits, 63, the unpacking took a sixth of the
 * time). Tests fill the widest. */
#define F64V_FIELD_BITS_MAX 12

/* ---- fp32 family, vector paths (x86) -------------------------------------- */

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
_Static_assert(sizeof(pair_count) == 2, "mp_scan_pair_fold reads four counters a word");
/* A vector of `lanes` values makes lanes / 2 pairs, spread evenly over the
 * banks: counts a bank bin takes at most per vector. */
#define PAIRS_PER_BANK(lanes) ((lanes) / 2 / PAIR_BANKS)
#define PAIR_PER_BANK PAIRS_PER_BANK(16)
/* Bank counters are uint16: fold before any could pass 65535. */
#define PAIR_FOLD_VECTORS ((65535 / PAIR_PER_BANK) - PAIR_KERNEL_VECTORS)
#define WINDOW_CODES 63 /* binades in the window; code 63 is "none" */
#define WINDOW_BASE_START (127 - 45)
#define WINDOW_BASE_MAX (254 - WINDOW_CODES + 1)

/* The AVX2 fp32 path's pairs (scan_avx2.c): four to a vector of 8 values,
 * one per bank, so the banks fold before any counter could pass 65535. Only
 * views of F32A_PAIRS_MIN_ELEMENTS and more take them: below that the banks'
 * clearing and fold cost more than the halved increments save. */
#define F32A_PAIR_PER_BANK PAIRS_PER_BANK(8)
#define F32A_PAIR_FOLD_VECTORS (65535 / F32A_PAIR_PER_BANK)
#define F32A_PAIRS_MIN_ELEMENTS (1u << 15)

/* fp16 and bf16 views below this count their exponents one value at a time
 * on the AVX-512 path, not in pairs: the pairs' fold reads a corner of the
 * banks that grows with the square of the binades seen, which is most of a
 * small scan (2-core Zen 5 VM, values over 40 binades, thread CPU,
 * MP_SCAN_AVX512_NO_PLANES with and without pairs: 64 values 1392 -> 419 ns,
 * 1024 3012 -> 901, 65536 41.8 -> 34.0 us; through MP_SCAN_AUTO, where 64
 * to 127 values take this path alone: 64 values 1412 -> 438 ns). On that
 * VM single counts were faster at every size (4M values 2.50 -> 2.18 ms);
 * pairs were chosen on an Intel VM for large views, kept there. */
#define F16_PAIRS_MIN_ELEMENTS (1u << 16)

typedef struct pair_state {
  pair_count bank[PAIR_BANKS][64 * 64];
  uint32_t escapes[PAIR_KERNEL_VECTORS * 16 + 16]; /* biased exponents outside the window */
  uint64_t exp[256];                               /* folded exponent counts, by biased exponent */
  uint64_t pending;                                /* vectors in the banks since the last fold */
  int base;                                        /* biased exponent of code 0 */
} pair_state;

/* Tables of the bit-plane kernel (scan_planes.c). */
#define PLANE_SLOTS 16
typedef struct plane_tables {
  /* By (E >> 2) mod 16: threshold bits (INT32_MAX: none), and a second,
   * higher threshold in the same binade. */
  int32_t th[PLANE_SLOTS], th2[PLANE_SLOTS];
  int th_index[PLANE_SLOTS], th2_index[PLANE_SLOTS]; /* TH_ index, or -1 */
} plane_tables;

typedef struct f32_fast {
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
  unsigned plane_skip;            /* blocks the plane kernel sits out */
  unsigned plane_fails;           /* consecutive blocks that failed its check */
  unsigned avx2_skip, avx2_fails; /* the same for the AVX2 kernel's unchecked blocks */
  unsigned pair_skip, pair_fails; /* the same for its exponent pairs (window misses) */
  /* Last, so that mp_scan_f32_reset clears every field before it: exponent
   * counts per lane, indexed by the biased exponent (all zero between scans:
   * mp_scan_f32_fold clears what it reads). */
  uint32_t sub[F32_LANES][256];
} f32_fast;

/* Sub-histogram lanes take one count per vector; fold long before 2^32. */
#define F32_FOLD_EVERY (1ull << 30)
/* Byte counters take one count per vector. */
#define F32_BLOCK_VECTORS 255

static inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
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

/* Takes back what hist_exponents8 counted for p[0 .. n) (n a multiple of
 * 8): value j of each eight went to sub-histogram (j & 7) / 2 + 4 * (j & 1). */
static inline void unhist_exponents8(uint32_t (*sub)[256], const float *p, uint64_t n) {
  for (uint64_t j = 0; j < n; j++)
    sub[(j & 7) >> 1 | (j & 1) << 2][(float_bits(p[j]) >> 23) & 0xff]--;
}

/* Pair counting (the AVX2 class kernels, the AVX2 fp32 exponents): 16-bit
 * indices into four banks of 16-bit counters b0 .. b3, one increment per
 * index. Four indices of a 64-bit word: */
#define PAIR_COUNT4(b0, b1, b2, b3, word)                                                          \
  do {                                                                                             \
    uint64_t w_ = (word);                                                                          \
    __asm__("" : "+r"(w_)); /* in a register, not spilled for the loads */                         \
    b0[w_ & 0xffff]++;                                                                             \
    b1[(w_ >> 16) & 0xffff]++;                                                                     \
    b2[(w_ >> 32) & 0xffff]++;                                                                     \
    b3[w_ >> 48]++;                                                                                \
  } while (0)

/* The 16 pair indices of one step at ix into the banks: eight read as two
 * 64-bit words and split in registers, eight read one by one, which spreads
 * the work over the load ports and the integer units (2-core Intel AVX-512 VM,
 * L2-resident fp16: 0.355 ns a value, against 0.376 for 16 single loads and
 * 0.41 for all 16 through vmovq / vpextrq). */
#define PAIR_COUNT16(b0, b1, b2, b3, ix)                                                           \
  do {                                                                                             \
    const uint16_t *ix_ = (ix);                                                                    \
    uint64_t w0_, w1_;                                                                             \
    memcpy(&w0_, ix_, 8);                                                                          \
    memcpy(&w1_, ix_ + 4, 8);                                                                      \
    PAIR_COUNT4(b0, b1, b2, b3, w0_);                                                              \
    PAIR_COUNT4(b0, b1, b2, b3, w1_);                                                              \
    b0[ix_[8]]++;                                                                                  \
    b1[ix_[9]]++;                                                                                  \
    b2[ix_[10]]++;                                                                                 \
    b3[ix_[11]]++;                                                                                 \
    b0[ix_[12]]++;                                                                                 \
    b1[ix_[13]]++;                                                                                 \
    b2[ix_[14]]++;                                                                                 \
    b3[ix_[15]]++;                                                                                 \
  } while (0)

/* scan_f32.c: state shared by the vector paths. init: the state a scan
 * starts from; reset: the same from a state whose sub[] is all zero (a
 * finished one: mp_scan_f32_finish leaves it so), without clearing sub. */
void mp_scan_f32_init(f32_fast *F, int lanes);
void mp_scan_f32_reset(f32_fast *F, int lanes);
void mp_scan_f32_fold(mp_stats *s, f32_fast *F);
void mp_scan_f32_finish(mp_stats *s, f32_fast *F);
/* Biased exponent of the largest |x| the lanes' keys have seen (0 if none). */
int mp_scan_top_exponent(const f32_fast *F);
void mp_scan_pair_fold(f32_fast *F);
/* The window moved (the banks folded first) to hold the non-zero exponents
 * lo .. top, with a binade to spare above top where lo allows (lo = INT_MAX:
 * only top to hold); false, and the window left as it was, if no window
 * holds them. */
bool mp_scan_pair_rebase(f32_fast *F, int lo, int top);

/* scan_avx2.c */
void mp_scan_f32_run_avx2(mp_stats *s, const src_info *I, f32_fast *F, const float *p, uint64_t n);
/* Blocks (F32_BLOCK_VECTORS vectors or the rest of a run) the AVX2 kernel
 * committed with exponent pairs, process-wide. */
uint64_t mp_scan_f32a_pair_blocks(void);

/* scan_avx512.c */
void mp_scan_f32_run_avx512(mp_stats *s, const src_info *I, f32_fast *F, const float *p,
                            uint64_t n);
void mp_scan_f16_run_avx512(mp_stats *s, const src_info *I, f32_fast *F, const uint16_t *p,
                            uint64_t n);
void mp_scan_bf16_run_avx512(mp_stats *s, const src_info *I, f32_fast *F, const uint16_t *p,
                             uint64_t n);

/* scan_fp64_avx512.c: fp64 eight values at a time. Every cast outcome of a
 * normal fp64 value follows from its binade and, in the few binades holding
 * one of the targets' levels (the fp64 scalar path's level_bits: flush,
 * subnormal, overflow; at most two per binade), from whether |x|'s bits lie
 * above it. Values are counted by binade (exponents read straight from the
 * source into four sub-histograms); a level's binade is looked up in a
 * sixteen-slot table (slot (E >> slot_shift) mod 16, one vpermt2q per level
 * rank), and a value above it adds that binade's weight, one field of
 * a packed per-lane counter (binades without levels that share the slot
 * weigh 0), in place of a compare per level. The kernel also counts zeros
 * and negatives and keeps the min/max keys and min |x| per lane. Vectors
 * holding a value outside [2^-126, 2^127) (subnormal, inf, NaN, or in a
 * binade of bf16's limits, which would need more slots and fields) take
 * acc_value(). */
#define F64_LEVELS (3 * MP_TARGET_COUNT)
#define F64V_BANKS 4
#define F64V_SLOTS 16
#define F64V_FIELDS 10 /* binades with levels in the window */
typedef struct f64_vec {
  int64_t level_bits[F64_LEVELS]; /* target t: 3t flush, 3t + 1 subnormal, 3t + 2 overflow */
  /* By level rank in its binade (0: lower, 1: higher) and slot: the level
   * (INT64_MAX: none); by slot, the weight of its level binade's field (0:
   * none; a binade's levels of both ranks share its field). */
  int64_t slot_level[2][F64V_SLOTS];
  uint64_t slot_weight[F64V_SLOTS];
  int slot_shift;
  /* Per level: its binade, its rank (-1: binade outside the window), field. */
  int level_binade[F64_LEVELS], level_rank[F64_LEVELS], level_field[F64_LEVELS];
  int nfields;    /* fields in use: the binades holding levels */
  int field_bits; /* each field's width in the kernel's packed counters */
  /* Per rank, field and lane: values above the level, unpacked from the
   * kernel's fields at the end of each call. */
  uint64_t above[2][F64V_FIELDS][8];
  uint64_t zeros[8], negatives[8];
  int64_t key_min[8], key_max[8];
  uint64_t abs_min_m1[8];
  uint64_t vectors; /* in the lanes since the last fold */
  uint64_t values;  /* folded */
  uint64_t ind_zeros, ind_negatives, ind_lev[F64_LEVELS];
  /* Last (see mp_scan_f64v_reset): by biased exponent, bin 0 collecting
   * zeros; all zero between scans (the fold clears what it reads). */
  uint32_t sub[F64V_BANKS][2048];
} f64_vec;

/* false when the levels do not nest or do not fit the slot table (the path
 * cannot count them). */
bool mp_scan_f64v_init(f64_vec *F);
/* The same for a finished state (sub[] all zero), without clearing sub. */
bool mp_scan_f64v_reset(f64_vec *F);
void mp_scan_f64v_run(mp_stats *s, const src_info *I, f64_vec *F, const double *p, uint64_t n);
void mp_scan_f64v_finish(mp_stats *s, f64_vec *F);

/* scan_fp64_avx2.c: fp64 four values at a time, each compared with the
 * levels inside [2^-126, 2^127) (cast counts as for scan_fp64_avx512.c);
 * blocks holding a non-zero value outside go to the scalar path (design in
 * the file). */
typedef struct f64_avx2 {
  /* Levels by index, target t: 3t flush, 3t + 1 subnormal, 3t + 2 overflow.
   * implied: 1 below the kernel's window, 0 above it, -1 compared. */
  int8_t implied[F64_LEVELS];
  int ncmp;
  /* The compared levels as the kernel compares them (scan_fp64_avx2.c),
   * then the window's top (|x| >= 2^127), then INT32_MAX (never below u). */
  int32_t cmp[F64_LEVELS + 2];
  int cmp_of[F64_LEVELS];       /* their level index */
  uint64_t ind_lev[F64_LEVELS]; /* values above each level */
  uint64_t values, zeros, negatives;
  uint64_t pending;    /* values in sub since the last fold */
  uint64_t zeros_seen; /* sub's bin 0 at the last block counted (zeros) */
  int64_t key_min, key_max;
  uint64_t abs_min_m1;
  unsigned skip, fails;
  f64_fast *slow; /* blocks the kernel does not count (allocated on demand) */
  /* Last (see mp_scan_f64a_reset): by biased exponent, bin 0 collecting
   * zeros; all zero between scans (the fold clears what it reads). */
  uint32_t sub[4][2048];
} f64_avx2;

/* false when the levels do not nest (the path cannot count them). */
bool mp_scan_f64a_init(f64_avx2 *F);
bool mp_scan_f64a_reset(f64_avx2 *F);
void mp_scan_f64a_run(mp_stats *s, const src_info *I, f64_avx2 *F, const double *p, uint64_t n);
void mp_scan_f64a_finish(mp_stats *s, const src_info *I, f64_avx2 *F);
/* Blocks handed to the scalar path since the process started (tests). */
uint64_t mp_scan_f64a_fallbacks(void);

/* scan.c: the kernel a scan of total elements of d with impl runs on this
 * CPU ("portable", "patterns", "f64_fast", "f64_avx2", "f64_avx512",
 * "f32_avx2", "f32_avx2_pairs", "f32_avx512", "f32_avx512_planes",
 * "classes", "classes_avx2"); NULL for a dtype that cannot be scanned. For tests: a
 * kernel whose tables the build refused would otherwise only cost speed. */
const char *mp_scan_path_name(mp_dtype d, uint64_t total, mp_scan_impl impl);

/* scan_planes.c */
/* Sets up the tables; false if the thresholds do not fit them. */
bool mp_scan_plane_tables_init(plane_tables *T, const int32_t th_bits[TH_COUNT]);
/* fp32, fp16 or bf16 (kind 0, 1, 2) in blocks through the plane kernel. */
void mp_scan_plane_run(mp_stats *s, const src_info *I, f32_fast *F, const void *p, uint64_t n,
                       int kind);
/* The CPU has what the plane kernel needs. */
bool mp_scan_cpu_has_planes(void);

/* scan_classes.c: fp8, fp16 and bf16 through class planes. */
typedef struct cls_scan cls_scan;
bool mp_scan_cpu_has_classes(void);
/* A scan's state for source d; NULL where the CPU or the format does not fit. */
cls_scan *mp_scan_cls_start(mp_dtype d);
/* fp16 and bf16 blocks that fail the kernel's check, and the ends, go to F's
 * path (F unused for fp8). */
void mp_scan_cls_run(mp_stats *s, const src_info *I, cls_scan *C, f32_fast *F, const void *p,
                     uint64_t n);
void mp_scan_cls_finish(mp_stats *s, const src_info *I, cls_scan *C);
/* A scan's state for source d made at C (MP_CLS_BYTES): false where the CPU
 * or the format does not fit. restart: a finished scan's state C made the
 * state a scan of its dtype starts from, without copying the tables unless
 * a window moved (mp_scan_ws). */
#define MP_CLS_BYTES 16384
/* 16-bit blocks the class-plane kernel handed to the path it replaces since
 * the process started (tests: finite data in the window never falls back, so
 * a kernel bug, which fails the block's check, cannot hide behind the
 * fallback). */
uint64_t mp_scan_cls_fallbacks(void);
bool mp_scan_cls_init_at(cls_scan *C, mp_dtype d);
void mp_scan_cls_restart(cls_scan *C);
/* Tests: every counter of a finished state C is zero. */
bool mp_scan_cls_clean(const cls_scan *C);

/* scan_classes_avx2.c: fp8, fp16 and bf16 through class ids with AVX2. */
typedef struct cls2_scan cls2_scan;
bool mp_scan_cpu_has_classes_avx2(void);
/* A scan's state for source d; NULL where the CPU or the format does not fit. */
cls2_scan *mp_scan_cls2_start(mp_dtype d);
void mp_scan_cls2_run(mp_stats *s, const src_info *I, cls2_scan *C, const void *p, uint64_t n);
void mp_scan_cls2_finish(mp_stats *s, const src_info *I, cls2_scan *C);
/* As mp_scan_cls_init_at and mp_scan_cls_restart, the state given work
 * (MP_CLS2_WORK_BYTES, its pair counters: all zero, and all zero again
 * after each block) where mp_scan_cls2_start's allocates its own.
 * mp_scan_cls2_free: a state of mp_scan_cls2_start and what it holds. */
#define MP_CLS2_BYTES 4096
#define MP_CLS2_WORK_BYTES 32768
bool mp_scan_cls2_init_at(cls2_scan *C, mp_dtype d, void *work);
void mp_scan_cls2_restart(cls2_scan *C, void *work);
void mp_scan_cls2_free(cls2_scan *C);
bool mp_scan_cls2_clean(const cls2_scan *C);
/* Blocks the class kernel handed to the path it replaces since the process
 * started (tests: finite in-window data never falls back, so a kernel bug
 * cannot hide behind the fallback). */
uint64_t mp_scan_cls2_fallbacks(void);
/* Steps a class-kernel call (a block) takes at most: of 32 values for 16-bit
 * sources, of 32 bytes for fp8. */
#define MP_CLS2_BLOCK_STEPS 8192
/* Blocks of at most this many steps (fp8 e5m2, fp16, bf16) count their pair
 * indices straight into counts by id, not into the banks, whose fold reads
 * the nid^2 pair counters of four banks: most of a small view's scan. 2-core
 * Zen 5 VM, MP_SCAN_AVX2 through a workspace, values over 40 binades, banks
 * against direct: fp16 256 values 4111 -> 358 ns, 8192 6215 -> 3993, 16384
 * (512 steps) 8451 -> 7761 ns; bf16 256 5590 -> 397. */
#define MP_CLS2_DIRECT_STEPS 512
/* Blocks the class kernels counted (committed) since the process started
 * (tests: the kernels run at all, rather than a path whose tables the build
 * refused). */
uint64_t mp_scan_cls2_blocks(void);
#endif

#endif
