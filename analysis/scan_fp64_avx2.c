/* The host scanner's fp64 path with AVX2 (CPUs without AVX-512): eight
 * values at a time, every value compared with the target levels.
 *
 * For a normal fp64 value every cast outcome follows from whether |x|'s bits
 * lie above each target's three levels (mp_scan_f64_levels(): flush,
 * subnormal, overflow), as in scan_fp64_avx512.c. As there, the kernel
 * counts values in [2^-126, 2^127): the levels outside (bf16's) are then
 * implied, every non-zero value above those below, none above those above;
 * nine compares remain. These formats' mantissas are short, so a level L
 * (the largest |x| not above it) or L + 1 has its low 32 bits 0, and with
 * u = 2 * (|x| >> 32) + (low 32 bits of |x| != 0), |x| > L exactly when
 * u > 2 * (L >> 32) (L's low half 0) or u > 2 * ((L + 1) >> 32) - 1 (L + 1's):
 * u fits 32 bits (|x| < 2^63), and eight values' u share a vector, one
 * compare per level for eight values (the path is not taken when neither
 * half is 0); one more compare counts values above the window (inf and NaN
 * too). Exponents are read from the source into four sub-histograms, whose
 * bin 0 gives the zeros. min, max and min |x| are kept per lane as doubles
 * (AVX2 has no 64-bit integer min/max; MINPD/MAXPD skip a NaN first operand),
 * the zeros' signs settled from the counts of sign bits and of -0.
 *
 * Nothing is checked per vector: a block of vectors is checked once at its
 * end, from its count above the window and its least |x|. A block holding a
 * non-zero value outside the window (subnormal, inf and NaN included) has
 * its exponent counts taken back and goes to the scalar fp64 path
 * (scan_fp64.c), and the kernel sits out the next 1, 2, 4 ... 64 blocks. */
#include <math.h>
#include <stdlib.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
#define F64A_ISA "avx2"
#define F64A_BLOCK_VECTORS 2048            /* of four values; even; 1,024 steps: 16-bit counts */
#define F64A_PAIRS ((F64_LEVELS + 2) / 2)  /* the levels and the window's top */
#define F64A_BITS_LO (897ull << 52)        /* |x| bits of 2^-126 */
#define F64A_BITS_HI ((1150ull << 52) - 1) /* largest |x| bits below 2^127 */

typedef struct f64a_block {
  double vmin[4], vmax[4]; /* over values not NaN (a zero of either sign for 0) */
  double tmin[4];          /* least |x| - 1 (bits) of non-zero x; +inf: none */
  int64_t sgn[4], nz[4];   /* per lane: sign bit set; -0 */
  /* per pair of compared levels 2j, 2j + 1: 16-bit counts, words 0-3 and
   * 8-11 of level 2j, 4-7 and 12-15 of level 2j + 1 (_mm256_packs_epi32) */
  uint16_t above[F64A_PAIRS][16];
} f64a_block;

static bool f64a_build(f64_avx2 *F) {
  memset(F, 0, sizeof *F);
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t L[3];
    mp_scan_f64_levels(t, L);
    if (!(L[0] <= L[1] && L[1] <= L[2])) return false; /* the counts would not nest */
    for (int k = 0; k < 3; k++) {
      int j = 3 * t + k;
      F->implied[j] = L[k] < F64A_BITS_LO ? 1 : L[k] >= F64A_BITS_HI ? 0 : -1;
      if (F->implied[j] < 0) {
        /* |x| > L: u > 2 * (L >> 32) where L's low half is 0, or where the
         * next value's is, |x| >= L + 1: u > 2 * ((L + 1) >> 32) - 1 */
        uint32_t T;
        if ((uint32_t)L[k] == 0)
          T = (uint32_t)(L[k] >> 31);
        else if ((uint32_t)(L[k] + 1) == 0)
          T = (uint32_t)((L[k] + 1) >> 31) - 1;
        else
          return false; /* not comparable by its high half */
        F->cmp_of[F->ncmp] = j;
        F->cmp[F->ncmp++] = (int32_t)(T ^ 0x80000000u);
      }
    }
  }
  for (int c = F->ncmp; c < F64_LEVELS; c++)
    F->cmp_of[c] = -1;
  /* after them, |x| above the window (inf and NaN too): the block is not counted */
  F->cmp[F->ncmp] = (int32_t)((uint32_t)(((F64A_BITS_HI + 1) >> 31) - 1) ^ 0x80000000u);
  for (int c = F->ncmp + 1; c < F64_LEVELS + 2; c++)
    F->cmp[c] = INT32_MAX; /* never below a value */
  F->key_min = INT64_MAX;
  F->key_max = INT64_MIN;
  F->abs_min_m1 = UINT64_MAX;
  return true;
}

/* The state every scan starts from but for sub[] (built once). */
static f64_avx2 f64a_start;
static bool f64a_start_ok;
static pthread_once_t f64a_start_once = PTHREAD_ONCE_INIT;

static void f64a_build_start(void) {
  f64a_start_ok = f64a_build(&f64a_start);
}

bool mp_scan_f64a_reset(f64_avx2 *F) {
  pthread_once(&f64a_start_once, f64a_build_start);
  memcpy(F, &f64a_start, offsetof(f64_avx2, sub));
  return f64a_start_ok;
}

bool mp_scan_f64a_init(f64_avx2 *F) {
  memset(F->sub, 0, sizeof F->sub);
  return mp_scan_f64a_reset(F);
}

typedef uint64_t u64_alias __attribute__((may_alias));

/* The lane statistics of four values v, as doubles: MINPD and MAXPD give
 * their second operand when the first is NaN, and |x| - 1 of a zero is a
 * NaN (all bits set), of a non-zero x a double that orders as |x|. Two zeros
 * compare equal (either may stay): the signs are settled at the commit. */
#define F64A_LANES(v)                                                                              \
  do {                                                                                             \
    __m256d d_ = _mm256_castsi256_pd(v);                                                           \
    __m256i t_ = _mm256_add_epi64(_mm256_and_si256((v), absmask), minus_one);                      \
    tmin = _mm256_min_pd(_mm256_castsi256_pd(t_), tmin);                                           \
    vmin = _mm256_min_pd(d_, vmin);                                                                \
    vmax = _mm256_max_pd(d_, vmax);                                                                \
    sgn = _mm256_add_epi64(sgn, _mm256_srli_epi64((v), 63));                                       \
    nz = _mm256_sub_epi64(nz, _mm256_cmpeq_epi64((v), negzero));                                   \
  } while (0)

/* np pairs of levels compared (the levels past the compared ones never count). */
__attribute__((target(F64A_ISA), always_inline)) static inline void
f64a_kernel_np(f64a_block *o, uint32_t (*sub)[2048], const int32_t *level, const double *p,
               uint64_t nvec, int np) {
  const __m256i absmask = _mm256_set1_epi64x(INT64_MAX), zero = _mm256_setzero_si256();
  const __m256i minus_one = _mm256_set1_epi64x(-1), one32 = _mm256_set1_epi32(1);
  const __m256i flip = _mm256_set1_epi32(INT32_MIN);
  const __m256i negzero = _mm256_set1_epi64x(INT64_MIN);
  __m256d vmin = _mm256_set1_pd(INFINITY), vmax = _mm256_set1_pd(-INFINITY), tmin = vmin;
  __m256i sgn = zero, nz = zero;
  __m256i above[F64A_PAIRS];
  for (int j = 0; j < np; j++)
    above[j] = zero;
  uint32_t *s0 = sub[0], *s1 = sub[1], *s2 = sub[2], *s3 = sub[3];
  for (uint64_t i = 0; i < nvec; i += 2) {
    scan_prefetch(p + 4 * i, 1);
    __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + 4 * i));
    __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + 4 * i + 4));
    F64A_LANES(v0);
    F64A_LANES(v1);
    /* u of the eight values (in some order), top bit flipped: the shift
     * drops the sign, the low halves add their "non-zero" bit */
    __m256i hi = _mm256_castps_si256(
        _mm256_shuffle_ps(_mm256_castsi256_ps(v0), _mm256_castsi256_ps(v1), 0xdd));
    __m256i lo = _mm256_castps_si256(
        _mm256_shuffle_ps(_mm256_castsi256_ps(v0), _mm256_castsi256_ps(v1), 0x88));
    __m256i u = _mm256_or_si256(_mm256_slli_epi32(hi, 1),
                                _mm256_andnot_si256(_mm256_cmpeq_epi32(lo, zero), one32));
    u = _mm256_xor_si256(u, flip);
    /* two levels' flags per vector of 16-bit counters (at most one count a
     * step: no overflow in a block); the levels stay in memory */
    for (int j = 0; j < np; j++) {
      __m256i c0 = _mm256_cmpgt_epi32(u, _mm256_set1_epi32(level[2 * j]));
      __m256i c1 = _mm256_cmpgt_epi32(u, _mm256_set1_epi32(level[2 * j + 1]));
      above[j] = _mm256_sub_epi16(above[j], _mm256_packs_epi32(c0, c1));
    }
    const u64_alias *q = (const u64_alias *)(const void *)(p + 4 * i);
    s0[(q[0] >> 52) & 0x7ff]++;
    s1[(q[1] >> 52) & 0x7ff]++;
    s2[(q[2] >> 52) & 0x7ff]++;
    s3[(q[3] >> 52) & 0x7ff]++;
    s0[(q[4] >> 52) & 0x7ff]++;
    s1[(q[5] >> 52) & 0x7ff]++;
    s2[(q[6] >> 52) & 0x7ff]++;
    s3[(q[7] >> 52) & 0x7ff]++;
  }
  _mm256_storeu_pd(o->vmin, vmin);
  _mm256_storeu_pd(o->vmax, vmax);
  _mm256_storeu_pd(o->tmin, tmin);
  _mm256_storeu_si256((__m256i *)o->sgn, sgn);
  _mm256_storeu_si256((__m256i *)o->nz, nz);
  for (int j = 0; j < F64A_PAIRS; j++)
    _mm256_storeu_si256((__m256i *)o->above[j], j < np ? above[j] : zero);
}

__attribute__((target(F64A_ISA), noinline)) static void
f64a_kernel5(f64a_block *o, uint32_t (*sub)[2048], const int32_t *level, const double *p,
             uint64_t nvec) {
  f64a_kernel_np(o, sub, level, p, nvec, 5);
}

__attribute__((target(F64A_ISA), noinline)) static void
f64a_kernel_all(f64a_block *o, uint32_t (*sub)[2048], const int32_t *level, const double *p,
                uint64_t nvec) {
  f64a_kernel_np(o, sub, level, p, nvec, F64A_PAIRS);
}

/* The total order of doubles as signed integers (-0 < +0). */
static int64_t order_key(double x) {
  int64_t k;
  memcpy(&k, &x, sizeof k);
  return k < 0 ? k ^ INT64_MAX : k;
}

static uint64_t bits_of(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

/* Values of the block above compared level c (the pairs' word layout). */
static uint64_t above_level(const f64a_block *o, int c) {
  uint64_t n = 0;
  for (int l = 0; l < 8; l++)
    n += o->above[c / 2][(l & 3) + 4 * (c & 1) + 8 * (l >> 2)];
  return n;
}

static void f64a_fold(mp_stats *s, f64_avx2 *F) {
  /* Counts stay only where committed blocks' values were (a block that
   * failed took its counts back): the binades of the extremes' range. */
  uint64_t amax = 0;
  if (F->key_min != INT64_MAX) {
    uint64_t a0 = F->key_min < 0 ? (uint64_t)~F->key_min & INT64_MAX : (uint64_t)F->key_min;
    uint64_t a1 = F->key_max < 0 ? (uint64_t)~F->key_max & INT64_MAX : (uint64_t)F->key_max;
    amax = a0 > a1 ? a0 : a1;
  }
  int lo = F->abs_min_m1 == UINT64_MAX ? 2047 : (int)((F->abs_min_m1 + 1) >> 52);
  int hi = (int)(amax >> 52);
  if (lo < 1) lo = 1;
  if (hi > 2046) hi = 2046;
  for (int E = lo; E <= hi; E++) {
    uint64_t c = 0;
    for (int b = 0; b < 4; b++) {
      c += F->sub[b][E];
      F->sub[b][E] = 0;
    }
    s->exp_hist[E - 1023 - MP_HIST_MIN] += c;
  }
  for (int b = 0; b < 4; b++)
    F->sub[b][0] = 0; /* zeros: counted at each block's commit */
  F->zeros_seen = 0;
  F->pending = 0;
}

/* The block's lanes into F; false (and its exponent counts taken back) when
 * it holds a subnormal, inf or NaN. */
static bool f64a_commit(f64_avx2 *F, const f64a_block *o, const double *p, uint64_t nvec) {
  uint64_t outside = above_level(o, F->ncmp); /* the window's top, after the levels */
  double vmin = INFINITY, vmax = -INFINITY, tmin = INFINITY;
  for (int l = 0; l < 4; l++) {
    if (o->vmin[l] < vmin) vmin = o->vmin[l];
    if (o->vmax[l] > vmax) vmax = o->vmax[l];
    if (o->tmin[l] < tmin) tmin = o->tmin[l];
  }
  uint64_t aminm1 = tmin == INFINITY ? UINT64_MAX : bits_of(tmin);
  if (outside > 0 || (aminm1 != UINT64_MAX && aminm1 + 1 < F64A_BITS_LO)) {
    const u64_alias *q = (const u64_alias *)(const void *)p;
    for (uint64_t i = 0; i < 4 * nvec; i++)
      F->sub[i & 3][(q[i] >> 52) & 0x7ff]--;
    return false;
  }
  /* bin 0: zeros (the block holds no subnormal), since the last block counted */
  uint64_t bin0 = (uint64_t)F->sub[0][0] + F->sub[1][0] + F->sub[2][0] + F->sub[3][0];
  uint64_t zeros = bin0 - F->zeros_seen;
  F->zeros_seen = bin0;
  uint64_t sgn = 0, nz = 0;
  for (int l = 0; l < 4; l++) {
    sgn += (uint64_t)o->sgn[l];
    nz += (uint64_t)o->nz[l];
  }
  F->negatives += sgn - nz; /* x < 0: sign set, not -0 */
  F->zeros += zeros;
  /* an extreme that is a zero: -0 is the least where there is one, +0 the
   * greatest where there is one */
  if (vmin == 0) vmin = nz > 0 ? -0.0 : 0.0;
  if (vmax == 0) vmax = zeros > nz ? 0.0 : -0.0;
  int64_t kmin = order_key(vmin), kmax = order_key(vmax);
  for (int c = 0; c < F->ncmp; c++)
    F->ind_lev[F->cmp_of[c]] += above_level(o, c);
  for (int k = 0; k < F64_LEVELS; k++)
    if (F->implied[k] == 1) F->ind_lev[k] += 4 * nvec - zeros;
  if (kmin < F->key_min) F->key_min = kmin;
  if (kmax > F->key_max) F->key_max = kmax;
  if (aminm1 < F->abs_min_m1) F->abs_min_m1 = aminm1;
  F->values += 4 * nvec;
  F->pending += 4 * nvec;
  return true;
}

/* A block the kernel does not count: the scalar fp64 path. */
static uint64_t f64a_fallbacks;

uint64_t mp_scan_f64a_fallbacks(void) {
  return __atomic_load_n(&f64a_fallbacks, __ATOMIC_RELAXED);
}

static void f64a_slow(mp_stats *s, const src_info *I, f64_avx2 *F, const double *p, uint64_t n) {
  __atomic_fetch_add(&f64a_fallbacks, 1, __ATOMIC_RELAXED);
  if (!F->slow) {
    F->slow = malloc(sizeof *F->slow);
    if (F->slow) mp_scan_f64_init(F->slow, I);
  }
  if (F->slow) {
    mp_scan_f64_run(s, I, F->slow, p, n);
  } else {
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, p[i], 1);
  }
}

void mp_scan_f64a_run(mp_stats *s, const src_info *I, f64_avx2 *F, const double *p, uint64_t n) {
  f64a_block o;
  uint64_t i = 0;
  while (n - i >= 8) {
    uint64_t nvec = (n - i) / 8 * 2; /* the kernel takes two vectors a step */
    if (nvec > F64A_BLOCK_VECTORS) nvec = F64A_BLOCK_VECTORS;
    bool done = false;
    if (F->skip > 0) {
      F->skip--;
    } else {
      (F->ncmp / 2 + 1 <= 5 ? f64a_kernel5 : f64a_kernel_all)(&o, F->sub, F->cmp, p + i, nvec);
      done = f64a_commit(F, &o, p + i, nvec);
      if (done) {
        F->fails = 0;
      } else {
        F->skip = 1u << (F->fails < 6 ? F->fails : 6);
        F->fails++;
      }
    }
    if (!done) f64a_slow(s, I, F, p + i, 4 * nvec);
    if (F->pending >= F64_FOLD_EVERY) f64a_fold(s, F);
    i += 4 * nvec;
  }
  for (; i < n; i++)
    acc_value(s, I, p[i], 1);
}

void mp_scan_f64a_finish(mp_stats *s, const src_info *I, f64_avx2 *F) {
  f64a_fold(s, F);
  if (F->slow) {
    mp_scan_f64_finish(s, I, F->slow);
    free(F->slow);
    F->slow = NULL;
  }
  if (F->values == 0) return;
  mp_scan_f64_add_levels(s, F->values, F->zeros, F->negatives, F->ind_lev);
  mp_scan_f64_note_extremes(s, F->key_min, F->key_max, F->abs_min_m1);
}
#endif
