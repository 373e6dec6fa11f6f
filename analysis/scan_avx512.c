/* The host scanner's fp32, fp16 and bf16 path with AVX-512: the AVX2
 * computation sixteen values at a time in call-free kernels, 16-bit sources
 * widened to fp32 in registers and their exponents counted in pairs (large
 * views) or one by one from the widened vector. */
#include <limits.h>
#include <stdint.h>

#include "analysis/convert.h"
#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
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
      scan_prefetch(p + i, 1); /* 16-bit sources ask for each line twice */                        \
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
      if (!PAIRS && sizeof(T) == 4) {                                                              \
        hist_exponents8(sub, (const float *)(const void *)(p + i));                                \
        hist_exponents8(sub + 8, (const float *)(const void *)(p + i + 8));                        \
        continue;                                                                                  \
      }                                                                                            \
      if (!PAIRS) { /* 16-bit sources: the widened values, from the stack */                       \
        _Alignas(64) float w_[16];                                                                 \
        _mm512_store_si512(w_, v);                                                                 \
        hist_exponents8(sub, w_);                                                                  \
        hist_exponents8(sub + 8, w_ + 8);                                                          \
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
F32_KERNEL(f16_kernel_single, uint16_t, LOAD_F16, 0)
F32_KERNEL(bf16_kernel_single, uint16_t, LOAD_BF16, 0)

#undef TH_REG
#undef CNT_LOAD
#undef CNT_STORE
#undef CNT_BUMP
#undef FOR_TH
#undef FOR_IND

/* Kernel calls; vectors with a subnormal, inf or NaN and the tail go value
 * by value through acc_value(), and the lane counters are folded in time. */
#define F32_DRIVER(NAME, KERNEL, KERNEL_SINGLE, T, DECODE)                                         \
  void NAME(mp_stats *s, const src_info *I, f32_fast *F, const T *p, uint64_t n) {                 \
    pair_state *P = F->pairs;                                                                      \
    uint64_t i = 0;                                                                                \
    while (i + 16 <= n) {                                                                          \
      uint64_t j = P ? KERNEL(F, P, p, i, n) : KERNEL_SINGLE(F, P, p, i, n);                       \
      if (P && F->recent_escapes * 16 > j - i)                                                     \
        mp_scan_pair_rebase(F, INT_MAX, mp_scan_top_exponent(F));                                  \
      if (P && P->pending >= PAIR_FOLD_VECTORS) mp_scan_pair_fold(F);                              \
      if (F->vectors >= F32_FOLD_EVERY - KERNEL_VECTORS) mp_scan_f32_fold(s, F);                   \
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
F32_DRIVER(mp_scan_f32_run_avx512, f32_kernel, f32_kernel, float, AS_IS)
F32_DRIVER(mp_scan_f16_run_avx512, f16_kernel, f16_kernel_single, uint16_t, mp_fp16_to_float)
F32_DRIVER(mp_scan_bf16_run_avx512, bf16_kernel, bf16_kernel_single, uint16_t, mp_bf16_to_float)
#endif
