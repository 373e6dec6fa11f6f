/* The host scanner's fp64 path with AVX-512 (design in scan_internal.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
bool mp_scan_f64v_init(f64_vec *F) {
  memset(F, 0, sizeof *F);
  for (int l = 0; l < 8; l++) {
    F->key_min[l] = INT64_MAX;
    F->key_max[l] = INT64_MIN;
    F->abs_min_m1[l] = UINT64_MAX;
  }
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t L[3]; /* |x| bits: below 2^63, so they compare alike as signed lanes */
    mp_scan_f64_levels(t, L);
    if (!(L[0] <= L[1] && L[1] <= L[2])) return false;
    for (int k = 0; k < 3; k++)
      F->level_bits[3 * t + k] = (int64_t)L[k];
  }
  return true;
}

/* Kernel calls end after this many vectors: the driver folds in between. */
#define F64V_KERNEL_VECTORS 4096
/* Sub-histogram bins are uint32 and take two counts per vector. */
#define F64V_FOLD_VECTORS (1ull << 30)

typedef uint64_t u64_alias __attribute__((may_alias));

#define LEV_REG(k) const __m512i L##k = _mm512_set1_epi64(F->level_bits[k]);
#define LEV_LOAD(k) __m512i c##k = _mm512_loadu_si512(F->lev[k]);
#define LEV_STORE(k) _mm512_storeu_si512(F->lev[k], c##k);
#define LEV_BUMP(k)                                                                                \
  c##k = _mm512_mask_sub_epi64(c##k, _mm512_cmpgt_epi64_mask(a, L##k), c##k, minus_one);
#define FOR_LEV(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
_Static_assert(F64_LEVELS == 12, "unrolled above");

/* Runs vectors from p + i while i + 8 <= n (at most F64V_KERNEL_VECTORS) and
 * returns where it stopped: before a vector holding a subnormal, inf or NaN,
 * or at the end. No call inside: the accumulators stay in registers. */
__attribute__((target("avx512f"), noinline)) static uint64_t f64_kernel(f64_vec *F, const double *p,
                                                                        uint64_t i, uint64_t n) {
  const __m512i absmask = _mm512_set1_epi64(INT64_MAX);
  const __m512i max_normal = _mm512_set1_epi64(0x7fefffffffffffffll);
  const __m512i min_normal = _mm512_set1_epi64(0x0010000000000000ll);
  const __m512i minus_one = _mm512_set1_epi64(-1);
  FOR_LEV(LEV_REG)
  FOR_LEV(LEV_LOAD)
  __m512i cz = _mm512_loadu_si512(F->zeros), cn = _mm512_loadu_si512(F->negatives);
  __m512i kmin = _mm512_loadu_si512(F->key_min), kmax = _mm512_loadu_si512(F->key_max);
  __m512i aminm1 = _mm512_loadu_si512(F->abs_min_m1);
  uint32_t *s0 = F->sub[0], *s1 = F->sub[1], *s2 = F->sub[2], *s3 = F->sub[3];
  uint64_t start = i;
  uint64_t end = n - i > 8 * (uint64_t)F64V_KERNEL_VECTORS ? i + 8 * F64V_KERNEL_VECTORS : n;
  for (; i + 8 <= end; i += 8) {
    __m512i v = _mm512_loadu_si512(p + i);
    __m512i a = _mm512_and_si512(v, absmask);
    __mmask8 nonzero = _mm512_test_epi64_mask(a, a);
    __mmask8 slow =
        _mm512_cmpgt_epu64_mask(a, max_normal) | (_mm512_cmplt_epu64_mask(a, min_normal) & nonzero);
    if (slow) break;
    /* key = v ^ ((v >> 63) & absmask): the total order as signed integers */
    __m512i key = _mm512_ternarylogic_epi64(v, _mm512_srai_epi64(v, 63), absmask, 0x78);
    kmin = _mm512_min_epi64(kmin, key);
    kmax = _mm512_max_epi64(kmax, key);
    aminm1 = _mm512_min_epu64(aminm1, _mm512_add_epi64(a, minus_one));
    cz = _mm512_mask_sub_epi64(cz, (__mmask8)~nonzero, cz, minus_one);
    cn = _mm512_mask_sub_epi64(cn, _mm512_cmplt_epi64_mask(key, minus_one), cn, minus_one);
    FOR_LEV(LEV_BUMP)
    const u64_alias *q = (const u64_alias *)(const void *)(p + i);
    s0[(q[0] >> 52) & 0x7ff]++;
    s1[(q[1] >> 52) & 0x7ff]++;
    s2[(q[2] >> 52) & 0x7ff]++;
    s3[(q[3] >> 52) & 0x7ff]++;
    s0[(q[4] >> 52) & 0x7ff]++;
    s1[(q[5] >> 52) & 0x7ff]++;
    s2[(q[6] >> 52) & 0x7ff]++;
    s3[(q[7] >> 52) & 0x7ff]++;
  }
  FOR_LEV(LEV_STORE)
  _mm512_storeu_si512(F->zeros, cz);
  _mm512_storeu_si512(F->negatives, cn);
  _mm512_storeu_si512(F->key_min, kmin);
  _mm512_storeu_si512(F->key_max, kmax);
  _mm512_storeu_si512(F->abs_min_m1, aminm1);
  F->vectors += (i - start) / 8;
  return i;
}

#undef LEV_REG
#undef LEV_LOAD
#undef LEV_STORE
#undef LEV_BUMP
#undef FOR_LEV

/* Biased exponents of the smallest non-zero and the largest |x| the lanes
 * have seen: only those bins of the sub-histograms can be non-zero. */
static void exponent_range(const f64_vec *F, int *lo, int *hi) {
  uint64_t aminm1 = UINT64_MAX, amax = 0;
  for (int l = 0; l < 8; l++) {
    if (F->abs_min_m1[l] < aminm1) aminm1 = F->abs_min_m1[l];
    int64_t k0 = F->key_min[l], k1 = F->key_max[l];
    uint64_t a0 = k0 == INT64_MAX ? 0 : k0 < 0 ? (uint64_t)~k0 & INT64_MAX : (uint64_t)k0;
    uint64_t a1 = k1 == INT64_MIN ? 0 : k1 < 0 ? (uint64_t)~k1 & INT64_MAX : (uint64_t)k1;
    if (a0 > amax) amax = a0;
    if (a1 > amax) amax = a1;
  }
  *lo = aminm1 == UINT64_MAX ? 2047 : (int)((aminm1 + 1) >> 52);
  *hi = (int)(amax >> 52);
}

static void f64v_fold(mp_stats *s, f64_vec *F) {
  int lo, hi;
  exponent_range(F, &lo, &hi);
  if (lo < 1) lo = 1;
  if (hi > 2046) hi = 2046;
  for (int E = lo; E <= hi; E++) {
    uint64_t c = 0;
    for (int b = 0; b < F64V_BANKS; b++) {
      c += F->sub[b][E];
      F->sub[b][E] = 0;
    }
    s->exp_hist[E - 1023 - MP_HIST_MIN] += c;
  }
  for (int b = 0; b < F64V_BANKS; b++)
    F->sub[b][0] = 0; /* zeros: counted by the lanes */
  for (int l = 0; l < 8; l++) {
    F->ind_zeros += F->zeros[l];
    F->ind_negatives += F->negatives[l];
    F->zeros[l] = F->negatives[l] = 0;
    for (int k = 0; k < F64_LEVELS; k++) {
      F->ind_lev[k] += F->lev[k][l];
      F->lev[k][l] = 0;
    }
  }
  F->values += F->vectors * 8;
  F->vectors = 0;
}

void mp_scan_f64v_run(mp_stats *s, const src_info *I, f64_vec *F, const double *p, uint64_t n) {
  uint64_t i = 0;
  while (i + 8 <= n) {
    uint64_t j = f64_kernel(F, p, i, n);
    if (F->vectors >= F64V_FOLD_VECTORS) f64v_fold(s, F);
    if (j == i) {
      for (int l = 0; l < 8; l++)
        acc_value(s, I, p[i + l], 1);
      j = i + 8;
    }
    i = j;
  }
  for (; i < n; i++)
    acc_value(s, I, p[i], 1);
}

void mp_scan_f64v_finish(mp_stats *s, f64_vec *F) {
  f64v_fold(s, F);
  if (F->values == 0) return;
  uint64_t nonzero = F->values - F->ind_zeros;
  s->count += F->values;
  s->zeros += F->ind_zeros;
  s->negatives += F->ind_negatives;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const uint64_t *c = &F->ind_lev[3 * t]; /* above flush, at least normal, overflowing */
    s->casts[t][MP_CAST_UNDERFLOW] += nonzero - c[0];
    s->casts[t][MP_CAST_SUBNORMAL] += c[0] - c[1];
    s->casts[t][MP_CAST_NORMAL] += c[1] - c[2];
    s->casts[t][MP_CAST_OVERFLOW] += c[2];
  }
  int64_t kmin = INT64_MAX, kmax = INT64_MIN;
  uint64_t aminm1 = UINT64_MAX;
  for (int l = 0; l < 8; l++) {
    if (F->key_min[l] < kmin) kmin = F->key_min[l];
    if (F->key_max[l] > kmax) kmax = F->key_max[l];
    if (F->abs_min_m1[l] < aminm1) aminm1 = F->abs_min_m1[l];
  }
  mp_scan_f64_note_extremes(s, kmin, kmax, aminm1);
}
#endif
