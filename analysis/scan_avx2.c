/* The host scanner's fp32 path with AVX2: for normal and zero values every
 * cast outcome follows from ten integer compares of |x|'s bits with the
 * targets' thresholds, counted in byte lanes; exponents go to eight scalar
 * sub-histograms; min/max through order-preserving integer keys. A block of
 * vectors is counted without a check per vector and checked once at its end,
 * from its extremes; a block holding a subnormal, inf or NaN is taken back
 * and counted again with a check per vector, whose vectors holding one go to
 * acc_value(). */
#include <stdint.h>

#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
#define LOADV(p) _mm256_loadu_si256((const __m256i *)(p))
#define STOREV(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define F32_MAX_NORMAL_BITS 0x7f7fffff /* |x| bits above: inf or NaN */
#define F32_MIN_NORMAL_BITS 0x00800000 /* non-zero |x| bits below: subnormal */

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

/* A block's three vectors of byte counters added to the totals. */
__attribute__((target("avx2"))) static void add_block_counts(f32_fast *F, __m256i acc0,
                                                             __m256i acc1, __m256i acc2) {
  uint8_t bytes[32];
  STOREV(bytes, acc0);
  add_byte_counts(F, 0, bytes);
  STOREV(bytes, acc1);
  add_byte_counts(F, 1, bytes);
  STOREV(bytes, acc2);
  add_byte_counts(F, 2, bytes);
}

/* The lane statistics and counts of the fp32 vector v (see below), into the
 * block's accumulators. */
#define F32A_VECTOR(v)                                                                             \
  do {                                                                                             \
    __m256i a_ = _mm256_and_si256((v), absmask);                                                   \
    __m256i is_zero_ = _mm256_cmpeq_epi32(a_, zero);                                               \
    __m256i key_ = _mm256_xor_si256((v), _mm256_and_si256(_mm256_srai_epi32((v), 31), absmask));   \
    kmin = _mm256_min_epi32(kmin, key_);                                                           \
    kmax = _mm256_max_epi32(kmax, key_);                                                           \
    aminm1 = _mm256_min_epu32(aminm1, _mm256_add_epi32(a_, minus_one));                            \
    __m256i neg_ = _mm256_cmpgt_epi32(minus_one, key_); /* x < 0, not -0 */                        \
    acc0 = _mm256_sub_epi8(acc0,                                                                   \
                           pack4(_mm256_cmpgt_epi32(a_, th[0]), _mm256_cmpgt_epi32(a_, th[1]),     \
                                 _mm256_cmpgt_epi32(a_, th[2]), _mm256_cmpgt_epi32(a_, th[3])));   \
    acc1 = _mm256_sub_epi8(acc1,                                                                   \
                           pack4(_mm256_cmpgt_epi32(a_, th[4]), _mm256_cmpgt_epi32(a_, th[5]),     \
                                 _mm256_cmpgt_epi32(a_, th[6]), _mm256_cmpgt_epi32(a_, th[7])));   \
    acc2 = _mm256_sub_epi8(acc2, pack4(_mm256_cmpgt_epi32(a_, th[8]),                              \
                                       _mm256_cmpgt_epi32(a_, th[9]), is_zero_, neg_));            \
  } while (0)

/* A block of nvec vectors counted without a check per vector: false when it
 * holds a subnormal, inf or NaN, which its extremes show at its end (then
 * nothing of it is counted: its exponent counts are taken back). */
__attribute__((target("avx2"))) static bool f32_block_unchecked(f32_fast *F, const float *p,
                                                                uint64_t nvec) {
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
  const __m256i minus_one = _mm256_set1_epi32(-1);
  const __m256i zero = _mm256_setzero_si256();
  __m256i th[TH_COUNT];
  for (int k = 0; k < TH_COUNT; k++)
    th[k] = _mm256_set1_epi32(F->th_bits[k]);
  __m256i kmin = _mm256_set1_epi32(INT32_MAX), kmax = _mm256_set1_epi32(INT32_MIN);
  __m256i aminm1 = minus_one;
  __m256i acc0 = zero, acc1 = zero, acc2 = zero;
  for (uint64_t j = 0; j < nvec; j++) {
    scan_prefetch(p + 8 * j, 1); /* each line asked for twice: cheaper than a test */
    __m256i v = LOADV(p + 8 * j);
    F32A_VECTOR(v);
    hist_exponents8(F->sub, p + 8 * j);
  }
  int32_t bmin[8], bmax[8];
  uint32_t bam[8];
  STOREV(bmin, kmin);
  STOREV(bmax, kmax);
  STOREV(bam, aminm1);
  uint32_t amax = 0, am = UINT32_MAX;
  for (int l = 0; l < 8; l++) {
    uint32_t a0 = bmin[l] < 0 ? (uint32_t)~bmin[l] & 0x7fffffff : (uint32_t)bmin[l];
    uint32_t a1 = bmax[l] < 0 ? (uint32_t)~bmax[l] & 0x7fffffff : (uint32_t)bmax[l];
    if (a0 > amax) amax = a0;
    if (a1 > amax) amax = a1;
    if (bam[l] < am) am = bam[l];
  }
  if (amax > F32_MAX_NORMAL_BITS || (am != UINT32_MAX && am + 1 < F32_MIN_NORMAL_BITS)) {
    unhist_exponents8(F->sub, p, 8 * nvec);
    return false;
  }
  add_block_counts(F, acc0, acc1, acc2);
  STOREV(F->key_min, _mm256_min_epi32(LOADV(F->key_min), kmin));
  STOREV(F->key_max, _mm256_max_epi32(LOADV(F->key_max), kmax));
  STOREV(F->abs_min_m1, _mm256_min_epu32(LOADV(F->abs_min_m1), aminm1));
  F->vectors += nvec;
  return true;
}

/* A block of nvec vectors checked vector by vector: a vector holding a
 * subnormal, inf or NaN goes to acc_value(). */
__attribute__((target("avx2"))) static void
f32_block_checked(mp_stats *s, const src_info *I, f32_fast *F, const float *p, uint64_t nvec) {
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
  const __m256i max_normal = _mm256_set1_epi32(F32_MAX_NORMAL_BITS);
  const __m256i min_normal = _mm256_set1_epi32(F32_MIN_NORMAL_BITS);
  const __m256i minus_one = _mm256_set1_epi32(-1);
  const __m256i zero = _mm256_setzero_si256();
  __m256i th[TH_COUNT];
  for (int k = 0; k < TH_COUNT; k++)
    th[k] = _mm256_set1_epi32(F->th_bits[k]);
  __m256i kmin = LOADV(F->key_min), kmax = LOADV(F->key_max), aminm1 = LOADV(F->abs_min_m1);
  __m256i acc0 = zero, acc1 = zero, acc2 = zero;
  uint64_t fast = 0;
  for (uint64_t j = 0; j < nvec; j++) {
    scan_prefetch(p + 8 * j, 1);
    __m256i v = LOADV(p + 8 * j);
    __m256i a = _mm256_and_si256(v, absmask);
    /* inf/NaN, or subnormal (below min normal but not zero). */
    __m256i slow = _mm256_or_si256(
        _mm256_cmpgt_epi32(a, max_normal),
        _mm256_andnot_si256(_mm256_cmpeq_epi32(a, zero), _mm256_cmpgt_epi32(min_normal, a)));
    if (!_mm256_testz_si256(slow, slow)) {
      for (int l = 0; l < 8; l++)
        acc_value(s, I, p[8 * j + l], 1);
      continue;
    }
    F32A_VECTOR(v);
    hist_exponents8(F->sub, p + 8 * j);
    fast++;
  }
  add_block_counts(F, acc0, acc1, acc2);
  STOREV(F->key_min, kmin);
  STOREV(F->key_max, kmax);
  STOREV(F->abs_min_m1, aminm1);
  F->vectors += fast;
}

/* Blocks are counted unchecked; one that holds a subnormal, inf or NaN is
 * counted again checked, and the unchecked kernel sits out the next 1, 2,
 * 4 ... 64 blocks. */
void mp_scan_f32_run_avx2(mp_stats *s, const src_info *I, f32_fast *F, const float *p, uint64_t n) {
  uint64_t i = 0;
  while (i + 8 <= n) {
    uint64_t nvec = (n - i) / 8;
    if (nvec > F32_BLOCK_VECTORS) nvec = F32_BLOCK_VECTORS;
    bool done = false;
    if (F->avx2_skip > 0) {
      F->avx2_skip--;
    } else {
      done = f32_block_unchecked(F, p + i, nvec);
      if (done) {
        F->avx2_fails = 0;
      } else {
        F->avx2_skip = 1u << (F->avx2_fails < 6 ? F->avx2_fails : 6);
        F->avx2_fails++;
      }
    }
    if (!done) f32_block_checked(s, I, F, p + i, nvec);
    if (F->vectors >= F32_FOLD_EVERY) mp_scan_f32_fold(s, F);
    i += 8 * nvec;
  }
  for (; i < n; i++)
    acc_value(s, I, p[i], 1);
}
#endif
