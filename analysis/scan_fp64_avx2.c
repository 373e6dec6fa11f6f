/* The host scanner's fp64 path with AVX2 (CPUs without AVX-512): four values
 * at a time, every value compared with the target levels.
 *
 * For a normal fp64 value every cast outcome follows from whether |x|'s bits
 * lie above each target's three levels (mp_scan_f64_levels(): flush,
 * subnormal, overflow), as in scan_fp64_avx512.c; here each level is one
 * 64-bit compare, two levels' counts share a vector of 32-bit lanes. As there,
 * the kernel counts values in [2^-126, 2^127): the levels outside (bf16's)
 * are then implied, every non-zero value above those below, none above those
 * above; nine compares remain. Exponents are read from the source into four sub-histograms; zeros,
 * negatives, the min/max order keys and min |x| are kept per lane (AVX2 has
 * no 64-bit min/max: compare and blend).
 *
 * Nothing is checked per vector: a block of vectors is checked once at its
 * end, from its lanes' extremes. A block holding a non-zero value outside the
 * window (subnormal, inf and NaN included) has its exponent counts taken back and goes to the
 * scalar fp64 path (scan_fp64.c), and the kernel sits out the next 1, 2, 4 ... 64 blocks. */
#include <stdlib.h>
#include <string.h>

#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
#define F64A_ISA "avx2"
#define F64A_BLOCK_VECTORS 2048
#define F64A_PAIRS (F64_LEVELS / 2)
#define F64A_BITS_LO (897ull << 52)        /* |x| bits of 2^-126 */
#define F64A_BITS_HI ((1150ull << 52) - 1) /* largest |x| bits below 2^127 */

typedef struct f64a_block {
  int64_t kmin[4], kmax[4];
  int64_t tmin[4];               /* |x| bits - 1, top bit flipped (signed min) */
  uint32_t zn[8];                /* per lane: zeros, negatives */
  uint32_t above[F64A_PAIRS][8]; /* per lane: above level 2j, above level 2j + 1 */
} f64a_block;

bool mp_scan_f64a_init(f64_avx2 *F) {
  memset(F, 0, sizeof *F);
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t L[3];
    mp_scan_f64_levels(t, L);
    if (!(L[0] <= L[1] && L[1] <= L[2])) return false; /* the counts would not nest */
    for (int k = 0; k < 3; k++) {
      int j = 3 * t + k;
      /* below 2^63: compares alike as signed lanes */
      F->implied[j] = L[k] < F64A_BITS_LO ? 1 : L[k] >= F64A_BITS_HI ? 0 : -1;
      if (F->implied[j] < 0) {
        F->cmp_of[F->ncmp] = j;
        F->cmp[F->ncmp++] = (int64_t)L[k];
      }
    }
  }
  for (int c = F->ncmp; c < F64_LEVELS; c++) {
    F->cmp_of[c] = -1;
    F->cmp[c] = INT64_MAX; /* never below a value */
  }
  F->key_min = INT64_MAX;
  F->key_max = INT64_MIN;
  F->abs_min_m1 = UINT64_MAX;
  return true;
}

typedef uint64_t u64_alias __attribute__((may_alias));

/* np pairs of levels compared (the ones past the levels never count). */
__attribute__((target(F64A_ISA), always_inline)) static inline void
f64a_kernel_np(f64a_block *o, uint32_t (*sub)[2048], const int64_t *level, const double *p,
               uint64_t nvec, int np) {
  const __m256i absmask = _mm256_set1_epi64x(INT64_MAX), zero = _mm256_setzero_si256();
  const __m256i minus_one = _mm256_set1_epi64x(-1);
  __m256i kmin = _mm256_set1_epi64x(INT64_MAX), kmax = _mm256_set1_epi64x(INT64_MIN);
  __m256i tmin = _mm256_set1_epi64x(INT64_MAX), zn = zero;
  __m256i above[F64A_PAIRS];
  __m256i lev[F64_LEVELS];
  for (int k = 0; k < 2 * np; k++)
    lev[k] = _mm256_set1_epi64x(level[k]);
  for (int j = 0; j < np; j++)
    above[j] = zero;
  uint32_t *s0 = sub[0], *s1 = sub[1], *s2 = sub[2], *s3 = sub[3];
  for (uint64_t i = 0; i < nvec; i++) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(p + 4 * i));
    __m256i a = _mm256_and_si256(v, absmask);
    /* key = v ^ ((v >> 63) & absmask): the total order as signed integers */
    __m256i key = _mm256_xor_si256(v, _mm256_srli_epi64(_mm256_cmpgt_epi64(zero, v), 1));
    kmin = _mm256_blendv_epi8(kmin, key, _mm256_cmpgt_epi64(kmin, key));
    kmax = _mm256_blendv_epi8(kmax, key, _mm256_cmpgt_epi64(key, kmax));
    /* |x| - 1 with the top bit flipped: zeros go to INT64_MAX, the rest order as signed */
    __m256i t = _mm256_add_epi64(a, absmask);
    tmin = _mm256_blendv_epi8(tmin, t, _mm256_cmpgt_epi64(tmin, t));
    zn = _mm256_sub_epi32(zn, _mm256_blend_epi32(_mm256_cmpeq_epi64(a, zero),
                                                 _mm256_cmpgt_epi64(minus_one, key), 0xaa));
    _Pragma("GCC unroll 6") for (int j = 0; j < np; j++) {
      __m256i lo = _mm256_cmpgt_epi64(a, lev[2 * j]), hi = _mm256_cmpgt_epi64(a, lev[2 * j + 1]);
      above[j] = _mm256_sub_epi32(above[j], _mm256_blend_epi32(lo, hi, 0xaa));
    }
    const u64_alias *q = (const u64_alias *)(const void *)(p + 4 * i);
    s0[(q[0] >> 52) & 0x7ff]++;
    s1[(q[1] >> 52) & 0x7ff]++;
    s2[(q[2] >> 52) & 0x7ff]++;
    s3[(q[3] >> 52) & 0x7ff]++;
  }
  _mm256_storeu_si256((__m256i *)o->kmin, kmin);
  _mm256_storeu_si256((__m256i *)o->kmax, kmax);
  _mm256_storeu_si256((__m256i *)o->tmin, tmin);
  _mm256_storeu_si256((__m256i *)o->zn, zn);
  for (int j = 0; j < np; j++)
    _mm256_storeu_si256((__m256i *)o->above[j], above[j]);
  for (int j = np; j < F64A_PAIRS; j++)
    _mm256_storeu_si256((__m256i *)o->above[j], zero);
}

__attribute__((target(F64A_ISA), noinline)) static void
f64a_kernel5(f64a_block *o, uint32_t (*sub)[2048], const int64_t *level, const double *p,
             uint64_t nvec) {
  f64a_kernel_np(o, sub, level, p, nvec, 5);
}

__attribute__((target(F64A_ISA), noinline)) static void
f64a_kernel6(f64a_block *o, uint32_t (*sub)[2048], const int64_t *level, const double *p,
             uint64_t nvec) {
  f64a_kernel_np(o, sub, level, p, nvec, F64A_PAIRS);
}

static uint64_t key_abs_bits(int64_t k) {
  return k < 0 ? (uint64_t)~k & INT64_MAX : (uint64_t)k;
}

static void f64a_fold(mp_stats *s, f64_avx2 *F) {
  for (int E = 1; E <= 2046; E++) {
    uint64_t c = 0;
    for (int b = 0; b < 4; b++) {
      c += F->sub[b][E];
      F->sub[b][E] = 0;
    }
    s->exp_hist[E - 1023 - MP_HIST_MIN] += c;
  }
  for (int b = 0; b < 4; b++)
    F->sub[b][0] = 0; /* zeros: counted by the lanes */
  F->pending = 0;
}

/* The block's lanes into F; false (and its exponent counts taken back) when
 * it holds a subnormal, inf or NaN. */
static bool f64a_commit(f64_avx2 *F, const f64a_block *o, const double *p, uint64_t nvec) {
  int64_t kmin = INT64_MAX, kmax = INT64_MIN, tmin = INT64_MAX;
  for (int l = 0; l < 4; l++) {
    if (o->kmin[l] < kmin) kmin = o->kmin[l];
    if (o->kmax[l] > kmax) kmax = o->kmax[l];
    if (o->tmin[l] < tmin) tmin = o->tmin[l];
  }
  uint64_t aminm1 = (uint64_t)tmin ^ (1ull << 63);
  uint64_t amax = key_abs_bits(kmin) > key_abs_bits(kmax) ? key_abs_bits(kmin) : key_abs_bits(kmax);
  if (amax > F64A_BITS_HI || (aminm1 != UINT64_MAX && aminm1 + 1 < F64A_BITS_LO)) {
    const u64_alias *q = (const u64_alias *)(const void *)p;
    for (uint64_t i = 0; i < 4 * nvec; i++)
      F->sub[i & 3][(q[i] >> 52) & 0x7ff]--;
    return false;
  }
  uint64_t zeros = 0;
  for (int l = 0; l < 4; l++) {
    zeros += o->zn[2 * l];
    F->negatives += o->zn[2 * l + 1];
  }
  F->zeros += zeros;
  for (int c = 0; c < F->ncmp; c++)
    for (int l = 0; l < 4; l++)
      F->ind_lev[F->cmp_of[c]] += o->above[c / 2][2 * l + c % 2];
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
  while (n - i >= 4) {
    uint64_t nvec = (n - i) / 4;
    if (nvec > F64A_BLOCK_VECTORS) nvec = F64A_BLOCK_VECTORS;
    bool done = false;
    if (F->skip > 0) {
      F->skip--;
    } else {
      (F->ncmp <= 10 ? f64a_kernel5 : f64a_kernel6)(&o, F->sub, F->cmp, p + i, nvec);
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
