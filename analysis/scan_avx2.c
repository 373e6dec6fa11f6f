/* The host scanner's fp32 path with AVX2: for normal and zero values every
 * cast outcome follows from ten integer compares of |x|'s bits with the
 * targets' thresholds, counted in byte lanes; exponents go to eight scalar
 * sub-histograms; min/max through order-preserving integer keys. Vectors
 * holding a subnormal, inf or NaN go to acc_value(). */
#include <stdint.h>

#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
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

__attribute__((target("avx2"))) void mp_scan_f32_run_avx2(mp_stats *s, const src_info *I,
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
    if (F->vectors >= F32_FOLD_EVERY) mp_scan_f32_fold(s, F);
  }
  STOREV(F->key_min, kmin);
  STOREV(F->key_max, kmax);
  STOREV(F->abs_min_m1, aminm1);
  for (; i < n; i++)
    acc_value(s, I, p[i], 1);
}
#endif
