/* The host scanner's fp32 path with AVX2: for normal and zero values every
 * cast outcome follows from ten integer compares of |x|'s bits with the
 * targets' thresholds, counted in byte lanes; min/max through
 * order-preserving integer keys. Exponents: in views of
 * F32A_PAIRS_MIN_ELEMENTS and more, as pairs (two neighbours' 6-bit codes in
 * the 63-binade window of pair_state, one 12-bit index counted in the banks
 * of 16-bit counters per two values: half the scalar increments, the part of
 * this path's time that was a third); in smaller ones, and in vectors a block
 * does not group by four, into eight scalar sub-histograms. A block of
 * vectors is counted without a check per vector and checked once at its end,
 * from its extremes. A block holding a non-zero exponent outside the window
 * is taken back and tried again once the window has moved to cover it, else
 * counted with the sub-histograms (f32_block_try). A block holding a
 * subnormal, inf or NaN is taken back and counted again with a check per
 * vector, whose vectors holding one go to acc_value(). */
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

/* The lane statistics and counts of the fp32 vector v, whose |x| bits are a
 * (see below), into the block's accumulators. */
#define F32A_VECTOR(v, a)                                                                          \
  do {                                                                                             \
    __m256i fa_ = (a); /* |x| bits */                                                              \
    __m256i is_zero_ = _mm256_cmpeq_epi32(fa_, zero);                                              \
    __m256i key_ = _mm256_xor_si256((v), _mm256_and_si256(_mm256_srai_epi32((v), 31), absmask));   \
    kmin = _mm256_min_epi32(kmin, key_);                                                           \
    kmax = _mm256_max_epi32(kmax, key_);                                                           \
    aminm1 = _mm256_min_epu32(aminm1, _mm256_add_epi32(fa_, minus_one));                           \
    __m256i neg_ = _mm256_cmpgt_epi32(minus_one, key_); /* x < 0, not -0 */                        \
    acc0 = _mm256_sub_epi8(acc0,                                                                   \
                           pack4(_mm256_cmpgt_epi32(fa_, th[0]), _mm256_cmpgt_epi32(fa_, th[1]),   \
                                 _mm256_cmpgt_epi32(fa_, th[2]), _mm256_cmpgt_epi32(fa_, th[3]))); \
    acc1 = _mm256_sub_epi8(acc1,                                                                   \
                           pack4(_mm256_cmpgt_epi32(fa_, th[4]), _mm256_cmpgt_epi32(fa_, th[5]),   \
                                 _mm256_cmpgt_epi32(fa_, th[6]), _mm256_cmpgt_epi32(fa_, th[7]))); \
    acc2 = _mm256_sub_epi8(acc2, pack4(_mm256_cmpgt_epi32(fa_, th[8]),                             \
                                       _mm256_cmpgt_epi32(fa_, th[9]), is_zero_, neg_));           \
  } while (0)

/* Exponent pairs: the 16 pair indices of four vectors of |x| bits (values
 * 2k and 2k + 1 of a vector form one, lo | hi << 6), in an order the packs
 * choose (the counts do not depend on it). Code: biased exponent - base,
 * WINDOW_CODES (none) for zero and for anything outside the window (a
 * non-zero one fails the block). */
#define F32A_PAIR_CODES(a, u)                                                                      \
  do {                                                                                             \
    __m256i c_ = _mm256_min_epu32(_mm256_sub_epi32(_mm256_srli_epi32(a, 23), basev), none);        \
    u = _mm256_or_si256(c_, _mm256_srli_epi64(c_, 26)); /* index in bits 0..11 of each qword */    \
  } while (0)

__attribute__((target("avx2"), always_inline)) static inline __m256i
pair_ix16(__m256i a0, __m256i a1, __m256i a2, __m256i a3, __m256i basev) {
  const __m256i none = _mm256_set1_epi32(WINDOW_CODES), low16 = _mm256_set1_epi32(0xffff);
  __m256i u0, u1, u2, u3;
  F32A_PAIR_CODES(a0, u0);
  F32A_PAIR_CODES(a1, u1);
  F32A_PAIR_CODES(a2, u2);
  F32A_PAIR_CODES(a3, u3);
  /* 16-bit lanes: index, hi code, index, hi code ... then the indices alone */
  __m256i m01 = _mm256_and_si256(_mm256_packus_epi32(u0, u1), low16);
  __m256i m23 = _mm256_and_si256(_mm256_packus_epi32(u2, u3), low16);
  return _mm256_packus_epi32(m01, m23);
}
#undef F32A_PAIR_CODES

/* Takes back the pair counts of the first 4 * (nvec / 4) vectors at p, in
 * the banks PAIR_COUNT16 put them in (index k of a group: bank k % 4). */
__attribute__((target("avx2"))) static void pairs_take_back(pair_state *P, const float *p,
                                                            uint64_t nvec) {
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff), basev = _mm256_set1_epi32(P->base);
  _Alignas(32) uint16_t ix[16];
  for (uint64_t j = 0; j + 4 <= nvec; j += 4) {
    const float *q = p + 8 * j;
    _mm256_store_si256((__m256i *)ix, pair_ix16(_mm256_and_si256(LOADV(q), absmask),
                                                _mm256_and_si256(LOADV(q + 8), absmask),
                                                _mm256_and_si256(LOADV(q + 16), absmask),
                                                _mm256_and_si256(LOADV(q + 24), absmask), basev));
    for (int k = 0; k < 16; k++)
      P->bank[k & 3][ix[k]]--;
  }
}

typedef enum f32a_rc { F32A_OK, F32A_SPECIAL, F32A_WINDOW } f32a_rc;

/* A block of nvec vectors counted without a check per vector, its exponents
 * as pairs in P (NULL: all into the sub-histograms): F32A_SPECIAL when it
 * holds a subnormal, inf or NaN, F32A_WINDOW when (with pairs) a non-zero
 * exponent falls outside the window, *lo .. *hi the block's non-zero
 * exponents; its extremes show either at its end, and then nothing of it is
 * counted (its exponent counts are taken back). */
__attribute__((target("avx2"))) static f32a_rc
f32_block_unchecked(f32_fast *F, pair_state *P, const float *p, uint64_t nvec, int *lo, int *hi) {
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
  const __m256i minus_one = _mm256_set1_epi32(-1);
  const __m256i zero = _mm256_setzero_si256();
  __m256i th[TH_COUNT];
  for (int k = 0; k < TH_COUNT; k++)
    th[k] = _mm256_set1_epi32(F->th_bits[k]);
  __m256i kmin = _mm256_set1_epi32(INT32_MAX), kmax = _mm256_set1_epi32(INT32_MIN);
  __m256i aminm1 = minus_one;
  __m256i acc0 = zero, acc1 = zero, acc2 = zero;
  uint64_t j = 0;
  if (P) {
    const __m256i basev = _mm256_set1_epi32(P->base);
    uint16_t *b0 = P->bank[0], *b1 = P->bank[1], *b2 = P->bank[2], *b3 = P->bank[3];
    /* A group's indices are counted during the next group (the vector unit
     * computes while the integer unit counts; a vector store reloaded in
     * pieces at once stalls store forwarding). */
    _Alignas(32) uint16_t ixbuf[2][16];
    for (; j + 4 <= nvec; j += 4) {
      __m256i a0, a1, a2, a3;
#define F32A_LOAD(q, a)                                                                            \
  do {                                                                                             \
    scan_prefetch(p + 8 * (j + q), 1);                                                             \
    __m256i v_ = LOADV(p + 8 * (j + q));                                                           \
    a = _mm256_and_si256(v_, absmask);                                                             \
    F32A_VECTOR(v_, a);                                                                            \
  } while (0)
      F32A_LOAD(0, a0);
      F32A_LOAD(1, a1);
      F32A_LOAD(2, a2);
      F32A_LOAD(3, a3);
#undef F32A_LOAD
      _mm256_store_si256((__m256i *)ixbuf[(j >> 2) & 1], pair_ix16(a0, a1, a2, a3, basev));
      if (j > 0) PAIR_COUNT16(b0, b1, b2, b3, ixbuf[((j >> 2) - 1) & 1]);
    }
    if (j > 0) PAIR_COUNT16(b0, b1, b2, b3, ixbuf[((j >> 2) - 1) & 1]);
  }
  const uint64_t j0 = j; /* vectors from here: exponents into the sub-histograms */
  for (; j < nvec; j++) {
    scan_prefetch(p + 8 * j, 1); /* each line asked for twice: cheaper than a test */
    __m256i v = LOADV(p + 8 * j);
    F32A_VECTOR(v, _mm256_and_si256(v, absmask));
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
  f32a_rc rc = F32A_OK;
  if (amax > F32_MAX_NORMAL_BITS || (am != UINT32_MAX && am + 1 < F32_MIN_NORMAL_BITS)) {
    rc = F32A_SPECIAL;
  } else if (P && am != UINT32_MAX) {
    *lo = (int)((am + 1) >> 23);
    *hi = (int)(amax >> 23);
    if (*lo < P->base || *hi > P->base + WINDOW_CODES - 1) rc = F32A_WINDOW;
  }
  if (rc != F32A_OK) {
    if (P) pairs_take_back(P, p, j0);
    unhist_exponents8(F->sub, p + 8 * j0, 8 * (nvec - j0));
    return rc;
  }
  if (P) P->pending += j0;
  add_block_counts(F, acc0, acc1, acc2);
  STOREV(F->key_min, _mm256_min_epi32(LOADV(F->key_min), kmin));
  STOREV(F->key_max, _mm256_max_epi32(LOADV(F->key_max), kmax));
  STOREV(F->abs_min_m1, _mm256_min_epu32(LOADV(F->abs_min_m1), aminm1));
  F->vectors += nvec;
  return F32A_OK;
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
    F32A_VECTOR(v, a);
    hist_exponents8(F->sub, p + 8 * j);
    fast++;
  }
  add_block_counts(F, acc0, acc1, acc2);
  STOREV(F->key_min, kmin);
  STOREV(F->key_max, kmax);
  STOREV(F->abs_min_m1, aminm1);
  F->vectors += fast;
}

/* Blocks committed with exponent pairs (tests: the window follows the data). */
static uint64_t f32a_pair_blocks;

uint64_t mp_scan_f32a_pair_blocks(void) {
  return __atomic_load_n(&f32a_pair_blocks, __ATOMIC_RELAXED);
}

/* A block unchecked, its exponents as pairs unless the pairs sit out: a
 * block the window does not hold is tried again once the window moves to
 * cover it, else without pairs, which then sit out the next 1, 2, 4 ... 64
 * blocks (data spanning more binades than the window: one try a block would
 * scan it twice). */
static f32a_rc f32_block_try(f32_fast *F, const float *p, uint64_t nvec) {
  pair_state *P = F->pairs;
  if (P && F->pair_skip > 0) {
    F->pair_skip--;
    P = NULL;
  }
  if (P && P->pending + nvec > F32A_PAIR_FOLD_VECTORS) mp_scan_pair_fold(F);
  int lo = 0, hi = 0;
  f32a_rc rc = f32_block_unchecked(F, P, p, nvec, &lo, &hi);
  if (rc == F32A_WINDOW && mp_scan_pair_rebase(F, lo, hi))
    rc = f32_block_unchecked(F, P, p, nvec, &lo, &hi);
  if (rc == F32A_WINDOW) {
    F->pair_skip = 1u << (F->pair_fails < 6 ? F->pair_fails : 6);
    F->pair_fails++;
    return f32_block_unchecked(F, NULL, p, nvec, &lo, &hi);
  }
  if (rc == F32A_OK && P) {
    F->pair_fails = 0;
    __atomic_fetch_add(&f32a_pair_blocks, 1, __ATOMIC_RELAXED);
  }
  return rc;
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
      done = f32_block_try(F, p + i, nvec) == F32A_OK;
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
