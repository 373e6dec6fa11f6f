/* The host scanner's 8- and 16-bit paths with AVX2 (CPUs without AVX-512):
 * class ids, counted.
 *
 * As for the AVX-512 class planes (scan_classes.c), everything the record
 * counts for an 8- or 16-bit value is a function of its class: its binade
 * and, in the few binades that hold a target's threshold, the side of it.
 * Here each value gets a class id that rises with |x|: a code of its binade
 * plus the number of thresholds below |x| (one compare each, against the few
 * thresholds that fall inside a binade), so no per-binade table is needed.
 *
 * - fp16, bf16: the code is the fp32 biased exponent (fp16 widened exactly by
 *   vcvtph2ps, so its subnormals get theirs; bf16 has it in its bits) minus a
 *   base, saturating so that zeros get 0. Two ids form a 12-bit index; one
 *   scalar increment per two values into 16-bit counters in four banks (the
 *   vector unit computes the ids of the next values meanwhile), summed into
 *   class counts at the end of a block. bf16's codes cover a window of
 *   binades that moves with the data, as in scan_classes.c.
 * - fp8 (e4m3, e5m2): the code is the exponent field plus min(m, 2) for the
 *   magnitude byte m (the subnormals), written to a small buffer and counted
 *   from there in one of two ways, chosen per format by speed. e4m3 (20 ids):
 *   in byte lanes, each vpshufb turns the ids of one group of 16 into two
 *   nibble counters per byte (classes 2j and 2j + 1 add 1 and 16), added up
 *   for 15 steps and then summed by vpsadbw. e5m2 (34 ids, where that is one
 *   vector operation per two classes): two neighbouring ids form a 12-bit
 *   index (vpmaddubsw), counted by scalar increments into the same four
 *   banks of pair counters as for 16-bit sources.
 * min, max and min |x| come from integer max/min in lanes, negatives from a
 * compare. A block is checked at its end: no inf or NaN; for bf16 no
 * subnormal and every exponent in the window (else the window moves and the
 * block is counted again). A block that fails goes to the path these replace
 * (bit-pattern counts, or value by value for short runs); after a failure
 * the class kernel sits out 1, 2, 4 ... 64 blocks.
 *
 * The ids are checked when the tables are built: every magnitude's id as the
 * kernel computes it, and what acc_counts() counts for it; magnitudes of one
 * id that disagree mean no class path for the format. Each class adds its
 * count by that signature (what acc_counts() counts for each member), so the
 * counts are the portable path's by construction. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
#include <cpuid.h>

#define C2_ISA "avx2,f16c"
#define C2_INLINE __attribute__((target(C2_ISA), always_inline)) static inline
#define C2_IDS 64  /* class ids 0..63 */
#define C2_NTH 8   /* thresholds compared per value (unused ones never pass) */
#define C2_BANKS 4 /* 16-bit: pair counters */
/* 16-bit: steps of 32 values per kernel call; a pair counter takes at most
 * four counts per step (16 increments over four banks). */
#define C2_BLOCK16_STEPS MP_CLS2_BLOCK_STEPS
_Static_assert(4 * C2_BLOCK16_STEPS <= 65535, "pair counters are uint16");
/* fp8: steps of 32 bytes per kernel call, in chunks of 15 steps or fewer
 * between the vector and the counting pass (a nibble counter takes one count
 * per step); a pair counter takes at most four counts per step, as for
 * 16-bit sources. */
#define C2_BLOCK8_STEPS MP_CLS2_BLOCK_STEPS
#define C2_CHUNK8_STEPS 15
_Static_assert(4 * C2_BLOCK8_STEPS <= 65535, "pair counters are uint16");
#define C2_DIRECT_STEPS MP_CLS2_DIRECT_STEPS
/* fp8 ids the kernels count (below these: the classes), and the thresholds
 * each compares (unused ones, 0x7f, never pass: a kernel may compare more
 * than its format has, not fewer). */
#define C2_E4M3_IDS 20
#define C2_E5M2_IDS 34
#define C2_E4M3_NTH 2
#define C2_E5M2_NTH 1
/* Nibble planes (two ids each) a counting pass keeps in registers: more made
 * GCC spill counters. The kernel runs at most two passes. */
#define C2_PASS_PLANES 5
_Static_assert(C2_E4M3_IDS / 2 <= 2 * C2_PASS_PLANES, "e4m3's planes fit two passes");

struct cls2_scan {
  mp_dtype dtype;
  /* Ids: code(binade) + the count of th[0 .. nth) below |x|. 16-bit: code =
   * fp32 biased exponent - (base - 1), saturating; fp8: exponent field +
   * min(m, 2). */
  int base, width; /* 16-bit: the window of fp32 biased exponents */
  int nth;
  uint16_t th[C2_NTH]; /* |x| bits; unused: 0x7fff (16-bit), 0x7f (fp8) */
  int nid;             /* ids 0 .. nid - 1 are classes */
  cls_sig sig[C2_IDS]; /* what each class counts (its positive members') */
  uint64_t count[C2_IDS];
  uint64_t values, negatives;
  int32_t key_min, key_max; /* order keys: sign ? -1 - |x| bits : |x| bits */
  uint32_t abs_min;         /* smallest non-zero |x| bits (UINT32_MAX: none) */
  unsigned skip, fails;
  bool moved;           /* bf16: the window moved from the template's */
  pattern_counts pat;   /* failed blocks: bit-pattern counts (allocated on demand) */
  struct c2_work *work; /* pair counters, zero between blocks (allocated on demand) */
  uint32_t tail[256];   /* fp8: bytes after the last whole step */
};

/* All thresholds of a 16-bit format that fall inside a binade (bf16
 * subnormals left out: their blocks fail), by dtype; built once. */
typedef struct c2_format {
  bool ok;
  int nth_all;
  uint16_t th_all[32];
  int th_exp[32]; /* fp32 biased exponent of each */
  struct cls2_scan tmpl;
} c2_format;

static c2_format formats16[MP_DTYPE_COUNT];

static double c2_decode(mp_dtype d, uint32_t m) {
  switch (d) {
  case MP_FP16:
    return mp_fp16_to_float((uint16_t)m);
  case MP_BF16:
    return mp_bf16_to_float((uint16_t)m);
  case MP_FP8_E4M3:
    return mp_e4m3_to_float((uint8_t)m);
  default:
    return mp_e5m2_to_float((uint8_t)m);
  }
}

static bool c2_is8(mp_dtype d) {
  return d == MP_FP8_E4M3 || d == MP_FP8_E5M2;
}

/* |x| bits from which the class kernel does not count a value (inf, NaN). */
static uint32_t c2_special(mp_dtype d) {
  switch (d) {
  case MP_FP16:
    return F16_INF_BITS;
  case MP_BF16:
    return BF16_INF_BITS;
  case MP_FP8_E4M3:
    return 0x80; /* NaN (0x7f) is a class of its own */
  default:
    return E5M2_INF_BITS;
  }
}

/* fp32 biased exponent of a 16-bit magnitude (0 for zero), as the kernel has it. */
static int c2_exp16(mp_dtype d, uint32_t m) {
  if (d == MP_BF16) return (int)(m >> 7);
  return m == 0 ? 0 : mp_exponent_of(mp_fp16_to_float((uint16_t)m)) + 127;
}

/* The id the kernel computes for magnitude m. */
static int c2_id(const struct cls2_scan *C, uint32_t m) {
  int id;
  if (c2_is8(C->dtype)) {
    int shift = C->dtype == MP_FP8_E4M3 ? 3 : 2;
    id = (int)(m >> shift) + (int)(m < 2 ? m : 2);
  } else {
    id = c2_exp16(C->dtype, m) - (C->base - 1);
    if (id < 0) id = 0;
  }
  for (int k = 0; k < C->nth; k++)
    id += m > C->th[k];
  return id < C2_IDS - 1 ? id : C2_IDS - 1;
}

/* Class of every id from the magnitudes lo .. hi (inclusive) the kernel may
 * count; false if two magnitudes of one id disagree. */
static bool c2_assign(struct cls2_scan *C, const src_info *I, uint32_t lo, uint32_t hi) {
  bool seen[C2_IDS] = {false};
  C->nid = 0;
  for (uint32_t m = lo; m <= hi; m++) {
    double x = c2_decode(C->dtype, m);
    cls_sig g = mp_cls_sig_of(I, x);
    if (g.kind == 3) return false; /* inf: blocks holding one fail */
    int id = c2_id(C, m);
    if (id >= C2_IDS - 1) return false;
    if (!seen[id]) {
      seen[id] = true;
      C->sig[id] = g;
      if (id + 1 > C->nid) C->nid = id + 1;
    } else if (!mp_cls_sig_equal(&C->sig[id], &g)) {
      return false;
    }
  }
  for (int id = 0; id < C->nid; id++)
    if (!seen[id]) C->sig[id] = (cls_sig){0}; /* no member: never counted */
  return true;
}

/* bf16 (and fp16, with the whole range): ids for the window of fp32 biased
 * exponents base .. base + width - 1. */
static bool c2_window(struct cls2_scan *C, const c2_format *F, const src_info *I, int base,
                      int width) {
  C->base = base;
  C->width = width;
  C->nth = 0;
  for (int k = 0; k < F->nth_all; k++) {
    if (F->th_exp[k] < base || F->th_exp[k] > base + width - 1) continue;
    if (C->nth == C2_NTH) return false;
    C->th[C->nth++] = F->th_all[k];
  }
  for (int k = C->nth; k < C2_NTH; k++)
    C->th[k] = 0x7fff;
  if (width + C->nth >= C2_IDS - 1) return false;
  if (C->dtype == MP_FP16) return c2_assign(C, I, 0, 0x7bff);
  /* bf16: zero, then the window's binades. */
  if (!c2_assign(C, I, (uint32_t)base << 7, ((uint32_t)(base + width) << 7) - 1)) return false;
  C->sig[0] = mp_cls_sig_of(I, 0.0); /* zeros: id 0, below every binade of the window */
  return true;
}

/* bf16: a window holding exponents lo .. hi with a few binades to spare on
 * each side (as few thresholds to compare as the data allows), else as wide
 * as the ids allow. */
#define C2_SPARE 4
static bool c2_rebase(struct cls2_scan *C, const src_info *I, int lo, int hi) {
  const c2_format *F = &formats16[C->dtype];
  int least = hi - lo + 1, first = least + 2 * C2_SPARE;
  for (int width = first < 62 ? first : 62; width >= least; width--) {
    int base = lo - (width - least) / 2;
    if (base < 1) base = 1;
    if (base + width - 1 > 254) base = 255 - width;
    if (base > lo || base + width - 1 < hi) continue;
    if (c2_window(C, F, I, base, width)) return true;
  }
  return false;
}

static void c2_init_state(struct cls2_scan *C, mp_dtype d) {
  memset(C, 0, sizeof *C);
  C->dtype = d;
  C->key_min = INT32_MAX;
  C->key_max = INT32_MIN;
  C->abs_min = UINT32_MAX;
}

static void c2_build16(mp_dtype d) {
  c2_format *F = &formats16[d];
  const src_info *I = mp_scan_info_of(d);
  struct cls2_scan *C = &F->tmpl;
  c2_init_state(C, d);
  uint32_t first = d == MP_BF16 ? 0x80 : 1, special = c2_special(d);
  cls_sig prev = mp_cls_sig_of(I, c2_decode(d, first));
  for (uint32_t m = first + 1; m < special; m++) {
    cls_sig g = mp_cls_sig_of(I, c2_decode(d, m));
    if (c2_exp16(d, m) == c2_exp16(d, m - 1) && !mp_cls_sig_equal(&g, &prev)) {
      if (F->nth_all == 32) return;
      F->th_exp[F->nth_all] = c2_exp16(d, m);
      F->th_all[F->nth_all++] = (uint16_t)(m - 1);
    }
    prev = g;
  }
  if (d == MP_FP16) {
    /* Every binade: 2^-24 .. 2^15, fp32 exponents 103 .. 142. */
    F->ok = c2_window(C, F, I, 103, 40) && C->nth <= 6; /* the fp16 kernel compares six */
  } else {
    F->ok = c2_rebase(C, I, 127 - 30, 127 + 10); /* moves when blocks miss it */
  }
}

/* ---- fp8 tables ----------------------------------------------------------- */

static void c2_build8(mp_dtype d) {
  c2_format *F = &formats16[d];
  const src_info *I = mp_scan_info_of(d);
  struct cls2_scan *C = &F->tmpl;
  c2_init_state(C, d);
  /* Thresholds: where the outcome changes inside one exponent field. */
  int shift = d == MP_FP8_E4M3 ? 3 : 2;
  uint32_t special = c2_special(d);
  cls_sig prev = mp_cls_sig_of(I, c2_decode(d, 0));
  for (uint32_t m = 1; m < special; m++) {
    cls_sig g = mp_cls_sig_of(I, c2_decode(d, m));
    bool same_field = (m >> shift) == ((m - 1) >> shift);
    /* Inside field 0 the ids already split 0, 1 and 2.. (min(m, 2)). */
    if (same_field && !mp_cls_sig_equal(&g, &prev) && !(m <= 2)) {
      if (C->nth == C2_NTH) return;
      C->th[C->nth++] = (uint16_t)(m - 1);
    }
    prev = g;
  }
  for (int k = C->nth; k < C2_NTH; k++)
    C->th[k] = 0x7f;
  /* Each kernel compares a fixed number of thresholds. */
  F->ok = C->nth <= (d == MP_FP8_E4M3 ? C2_E4M3_NTH : C2_E5M2_NTH) &&
          c2_assign(C, I, 0, special - 1) &&
          C->nid <= (d == MP_FP8_E4M3 ? C2_E4M3_IDS : C2_E5M2_IDS);
}

static pthread_once_t c2_once = PTHREAD_ONCE_INIT;

static void c2_build_all(void) {
  c2_build16(MP_FP16);
  c2_build16(MP_BF16);
  c2_build8(MP_FP8_E4M3);
  c2_build8(MP_FP8_E5M2);
}

/* ---- 16-bit kernel -------------------------------------------------------- */

/* Short blocks' values by id (ids of 64 and more wrap), in four sets so that
 * runs of one id do not make one chain of dependent increments; a block of
 * C2_DIRECT_STEPS steps puts at most 8 C2_DIRECT_STEPS counts in a counter. */
typedef struct c2_direct {
  uint16_t c[4][C2_IDS];
} c2_direct;
_Static_assert(8 * C2_DIRECT_STEPS <= 65535, "direct counters are uint16");

typedef struct c2_out {
  uint16_t smax[16], umax[16], aminm1[16], neg[16];
  c2_direct dc; /* direct kernels */
} c2_out;

/* Pair indices (id of value 2k) | (id of value 2k + 1) << 6 of the 16 values
 * at q, in 32-bit lanes; the lane statistics of the values. kind 1: fp16, 2:
 * bf16. */
#define C2_16_IDS(q, out)                                                                          \
  do {                                                                                             \
    __m256i v_ = _mm256_loadu_si256((const __m256i *)(q));                                         \
    __m256i a_ = _mm256_and_si256(v_, absmask);                                                    \
    smax = _mm256_max_epi16(smax, v_);                                                             \
    umax = _mm256_max_epu16(umax, v_);                                                             \
    aminm1 = _mm256_min_epu16(aminm1, _mm256_add_epi16(a_, minus_one));                            \
    neg = _mm256_sub_epi16(neg, _mm256_cmpgt_epi16(_mm256_xor_si256(v_, sign), zero));             \
    __m256i e_, m_;                                                                                \
    if (kind == 1) {                                                                               \
      /* Widened in two halves, packed back: lanes in qword order 0, 2, 1, 3. */                   \
      __m256i lo_ = _mm256_castps_si256(_mm256_cvtph_ps(_mm256_castsi256_si128(a_)));              \
      __m256i hi_ = _mm256_castps_si256(_mm256_cvtph_ps(_mm256_extracti128_si256(a_, 1)));         \
      e_ = _mm256_packus_epi32(_mm256_srli_epi32(lo_, 23), _mm256_srli_epi32(hi_, 23));            \
      m_ = _mm256_permute4x64_epi64(a_, 0xd8);                                                     \
    } else {                                                                                       \
      e_ = _mm256_srli_epi16(a_, 7);                                                               \
      m_ = a_;                                                                                     \
    }                                                                                              \
    __m256i id_ = _mm256_subs_epu16(e_, basem1);                                                   \
    _Pragma("GCC unroll 8") for (int k_ = 0; k_ < nth; k_++) {                                     \
      id_ = _mm256_sub_epi16(id_, _mm256_cmpgt_epi16(m_, th[k_]));                                 \
    }                                                                                              \
    /* Ids of 64 and more (inf, NaN, outside the window: the block fails) spoil                    \
     * the index, but the mask keeps it inside the counters. */                                    \
    out = _mm256_and_si256(_mm256_or_si256(id_, _mm256_srli_epi32(id_, 10)), low12);               \
  } while (0)

/* A step's 16 pair indices into the four banks b0 .. b3 (scan_internal.h). */
#define C2_COUNT16(ix) PAIR_COUNT16(b0, b1, b2, b3, ix)

/* n (even) pair indices (id lo | id hi << 6) straight into counts by id. */
C2_INLINE void c2_count_direct(c2_direct *d, const uint16_t *ix, uint64_t n) {
  for (uint64_t k = 0; k < n; k += 2) {
    d->c[0][ix[k] & 63]++;
    d->c[1][(ix[k] >> 6) & 63]++;
    d->c[2][ix[k + 1] & 63]++;
    d->c[3][(ix[k + 1] >> 6) & 63]++;
  }
}

/* The counts of ids 0 .. nid - 1 (of all 64 when counting ids beyond). */
static void c2_direct_sum(const c2_direct *d, uint64_t *counts) {
  for (int id = 0; id < C2_IDS; id++)
    counts[id] = (uint64_t)d->c[0][id] + d->c[1][id] + d->c[2][id] + d->c[3][id];
}

C2_INLINE void c2_16_kernel(c2_out *o, uint16_t (*bank)[C2_IDS * C2_IDS], const struct cls2_scan *C,
                            const uint16_t *p, uint64_t nsteps, int kind, int nth, bool direct) {
  const __m256i absmask = _mm256_set1_epi16(0x7fff), minus_one = _mm256_set1_epi16(-1);
  const __m256i sign = _mm256_set1_epi16((short)0x8000), zero = _mm256_setzero_si256();
  const __m256i basem1 = _mm256_set1_epi16((short)(C->base - 1));
  const __m256i low12 = _mm256_set1_epi32(0xfff);
  __m256i th[C2_NTH];
  for (int k = 0; k < nth; k++)
    th[k] = _mm256_set1_epi16((short)C->th[k]);
  __m256i smax = _mm256_set1_epi16((short)0x8000), umax = zero, aminm1 = minus_one, neg = zero;
  uint16_t *b0 = NULL, *b1 = NULL, *b2 = NULL, *b3 = NULL; /* direct: no banks (bank NULL) */
  if (!direct) {
    b0 = bank[0];
    b1 = bank[1];
    b2 = bank[2];
    b3 = bank[3];
  } else {
    memset(&o->dc, 0, sizeof o->dc);
  }
  /* A step's pair indices are stored and counted during the next step, so
   * that the vector unit computes ids while the integer unit counts. */
  _Alignas(32) uint16_t ixbuf[2][16];
  for (uint64_t i = 0; i < nsteps; i++) {
    __m256i x0, x1;
    scan_prefetch(p + 32 * i, 1);
    C2_16_IDS(p + 32 * i, x0);
    C2_16_IDS(p + 32 * i + 16, x1);
    _mm256_store_si256((__m256i *)ixbuf[i & 1], _mm256_packus_epi32(x0, x1));
    if (i > 0 && direct) c2_count_direct(&o->dc, ixbuf[(i - 1) & 1], 16);
    if (i > 0 && !direct) C2_COUNT16(ixbuf[(i - 1) & 1]);
  }
  if (nsteps > 0 && direct) c2_count_direct(&o->dc, ixbuf[(nsteps - 1) & 1], 16);
  if (nsteps > 0 && !direct) C2_COUNT16(ixbuf[(nsteps - 1) & 1]);
  _mm256_storeu_si256((__m256i *)o->smax, smax);
  _mm256_storeu_si256((__m256i *)o->umax, umax);
  _mm256_storeu_si256((__m256i *)o->aminm1, aminm1);
  _mm256_storeu_si256((__m256i *)o->neg, neg);
}
#undef C2_16_IDS

__attribute__((target(C2_ISA), noinline)) static void
f16_kernel(c2_out *o, uint16_t (*bank)[C2_IDS * C2_IDS], const struct cls2_scan *C,
           const uint16_t *p, uint64_t nsteps) {
  c2_16_kernel(o, bank, C, p, nsteps, 1, 6, false);
}

/* Short blocks (C2_DIRECT_STEPS): counts by id, no banks; bf16 with every
 * threshold compare (unused ones never pass). */
__attribute__((target(C2_ISA), noinline)) static void
f16_kernel_direct(c2_out *o, const struct cls2_scan *C, const uint16_t *p, uint64_t nsteps) {
  c2_16_kernel(o, NULL, C, p, nsteps, 1, 6, true);
}

__attribute__((target(C2_ISA), noinline)) static void
bf16_kernel_direct(c2_out *o, const struct cls2_scan *C, const uint16_t *p, uint64_t nsteps) {
  c2_16_kernel(o, NULL, C, p, nsteps, 2, C2_NTH, true);
}

/* bf16 by the number of thresholds in the window (compares cost). */
#define C2_BF16_KERNEL(NAME, NTH)                                                                  \
  __attribute__((target(C2_ISA), noinline)) static void NAME(                                      \
      c2_out *o, uint16_t(*bank)[C2_IDS * C2_IDS], const struct cls2_scan *C, const uint16_t *p,   \
      uint64_t nsteps) {                                                                           \
    c2_16_kernel(o, bank, C, p, nsteps, 2, NTH, false);                                            \
  }
C2_BF16_KERNEL(bf16_kernel4, 4)
C2_BF16_KERNEL(bf16_kernel6, 6)
C2_BF16_KERNEL(bf16_kernel8, C2_NTH)

static void bf16_kernel(c2_out *o, uint16_t (*bank)[C2_IDS * C2_IDS], const struct cls2_scan *C,
                        const uint16_t *p, uint64_t nsteps) {
  (C->nth <= 4 ? bf16_kernel4 : C->nth <= 6 ? bf16_kernel6 : bf16_kernel8)(o, bank, C, p, nsteps);
}

/* ---- blocks --------------------------------------------------------------- */

/* min, max and min |x| of a block from its lanes (see plane_commit() in
 * scan_planes.c): smax is the largest x if any x has its sign clear, umax the
 * smallest if any has it set. */
static void c2_block_extremes(struct cls2_scan *C, int32_t smax, uint32_t umax, uint32_t aminm1,
                              unsigned bits, uint64_t zeros) {
  unsigned signbit = 1u << (bits - 1), none = (1u << bits) - 1, mag = signbit - 1;
  bool has_neg = umax & signbit, has_pos = smax >= 0;
  uint32_t amin = aminm1 == none ? UINT32_MAX : aminm1 + 1;
  if (!has_neg && !has_pos && zeros == 0 && amin == UINT32_MAX) return; /* nothing finite */
  uint32_t mn = has_neg ? umax : zeros ? 0 : amin;
  uint32_t mx = has_pos ? (uint32_t)smax : zeros ? signbit : (amin | signbit);
  int32_t kmin = mn & signbit ? -1 - (int32_t)(mn & mag) : (int32_t)mn;
  int32_t kmax = mx & signbit ? -1 - (int32_t)(mx & mag) : (int32_t)mx;
  if (kmin < C->key_min) C->key_min = kmin;
  if (kmax > C->key_max) C->key_max = kmax;
  if (amin < C->abs_min) C->abs_min = amin;
}

typedef enum { C2_OK, C2_FAIL, C2_WINDOW } c2_rc;

/* Largest |x| and smallest non-zero |x| - 1 of the lanes. */
static void c2_lane_range(const int32_t *smax, const uint32_t *umax, const uint32_t *aminm1,
                          int lanes, unsigned bits, uint32_t *ret_amax, uint32_t *ret_aminm1,
                          int32_t *ret_smax, uint32_t *ret_umax) {
  unsigned signbit = 1u << (bits - 1), none = (1u << bits) - 1;
  int32_t sm = INT32_MIN;
  uint32_t um = 0, am = none;
  for (int l = 0; l < lanes; l++) {
    if (smax[l] > sm) sm = smax[l];
    if (umax[l] > um) um = umax[l];
    if (aminm1[l] < am) am = aminm1[l];
  }
  uint32_t amax = um & signbit ? um & (signbit - 1) : 0;
  if (sm >= 0 && (uint32_t)sm > amax) amax = (uint32_t)sm;
  *ret_amax = amax;
  *ret_aminm1 = am;
  *ret_smax = sm;
  *ret_umax = um;
}

/* Pair counters into class counts (ids below nid), zeroing them. */
static void c2_fold_pairs(uint16_t (*bank)[C2_IDS * C2_IDS], int nid, uint64_t *counts) {
  for (int hi = 0; hi < nid; hi++)
    for (int lo = 0; lo < nid; lo++) {
      uint32_t c = 0;
      for (int b = 0; b < C2_BANKS; b++) {
        c += bank[b][hi * C2_IDS + lo];
        bank[b][hi * C2_IDS + lo] = 0;
      }
      counts[hi] += c;
      counts[lo] += c;
    }
}

/* bank NULL: a direct kernel's block (its counts by id in o->dc). */
static c2_rc c2_16_commit(struct cls2_scan *C, uint16_t (*bank)[C2_IDS * C2_IDS], const c2_out *o,
                          uint64_t n, int *ret_lo, int *ret_hi) {
  int32_t smax_l[16];
  uint32_t umax_l[16], aminm1_l[16];
  for (int l = 0; l < 16; l++) {
    smax_l[l] = (int16_t)o->smax[l];
    umax_l[l] = o->umax[l];
    aminm1_l[l] = o->aminm1[l];
  }
  uint32_t amax, aminm1, umax;
  int32_t smax;
  c2_lane_range(smax_l, umax_l, aminm1_l, 16, 16, &amax, &aminm1, &smax, &umax);
  bool bf16 = C->dtype == MP_BF16;
  c2_rc rc = C2_OK;
  if (amax >= c2_special(C->dtype)) rc = C2_FAIL;
  if (rc == C2_OK && aminm1 != 0xffff && bf16) {
    uint32_t amin = aminm1 + 1;
    int lo = (int)(amin >> 7), hi = (int)(amax >> 7);
    if (amin < 0x80) {
      rc = C2_FAIL; /* subnormal */
    } else if (lo < C->base || hi > C->base + C->width - 1) {
      rc = C2_WINDOW;
      *ret_lo = lo;
      *ret_hi = hi;
    }
  }
  if (rc != C2_OK) {
    if (bank) memset(bank, 0, sizeof(uint16_t) * C2_BANKS * C2_IDS * C2_IDS);
    return rc;
  }
  uint64_t counts[C2_IDS] = {0}, total = 0;
  if (bank)
    c2_fold_pairs(bank, C->nid, counts);
  else
    c2_direct_sum(&o->dc, counts);
  for (int id = 0; id < C->nid; id++)
    total += counts[id];
  if (total != n) { /* cannot happen: a value without a class */
    if (bank) memset(bank, 0, sizeof(uint16_t) * C2_BANKS * C2_IDS * C2_IDS);
    return C2_FAIL;
  }
  for (int id = 0; id < C->nid; id++)
    C->count[id] += counts[id];
  C->values += n;
  for (int l = 0; l < 16; l++)
    C->negatives += o->neg[l];
  c2_block_extremes(C, smax, umax, aminm1, 16, counts[0]);
  return C2_OK;
}

/* The class counts into s (acc_sig_counts(): what acc_counts() counts for a member). */
static void c2_fold_counts(mp_stats *s, struct cls2_scan *C) {
  for (int id = 0; id < C->nid; id++) {
    if (C->count[id]) acc_sig_counts(s, &C->sig[id], C->count[id]);
    C->count[id] = 0;
  }
}

/* Blocks the kernels counted, and blocks they left to the fallback (tests). */
static uint64_t c2_blocks, c2_fallbacks;

uint64_t mp_scan_cls2_blocks(void) {
  return __atomic_load_n(&c2_blocks, __ATOMIC_RELAXED);
}

uint64_t mp_scan_cls2_fallbacks(void) {
  return __atomic_load_n(&c2_fallbacks, __ATOMIC_RELAXED);
}

/* A block the class kernel did not count: bit patterns (from 2^18 values on,
 * or once the counters exist), else value by value. */
static void c2_fallback(mp_stats *s, const src_info *I, struct cls2_scan *C, const void *p,
                        uint64_t n) {
  __atomic_fetch_add(&c2_fallbacks, 1, __ATOMIC_RELAXED);
  unsigned bits = c2_is8(C->dtype) ? 8 : 16;
  if (!C->pat.cnt && (bits == 8 || n >= (1u << 18))) {
    unsigned banks = bits == 16 ? 2 : 8;
    C->pat.cnt = calloc((size_t)banks << bits, sizeof(uint32_t));
    C->pat.bits = bits;
    C->pat.banks = banks;
  }
  if (C->pat.cnt)
    mp_scan_pattern_run(s, I, C->dtype, &C->pat, p, n);
  else
    mp_scan_portable_run(s, I, C->dtype, p, n);
}

static void c2_note_failure(struct cls2_scan *C, bool done) {
  if (done) {
    C->fails = 0;
  } else {
    C->skip = 1u << (C->fails < 6 ? C->fails : 6);
    C->fails++;
  }
}

typedef struct c2_work {
  uint16_t bank[C2_BANKS][C2_IDS * C2_IDS];
} c2_work;

static void c2_16_run(mp_stats *s, const src_info *I, struct cls2_scan *C, const uint16_t *p,
                      uint64_t n) {
  c2_out o;
  uint64_t i = 0;
  while (n - i >= 32) {
    uint64_t nsteps = (n - i) / 32;
    if (nsteps > C2_BLOCK16_STEPS) nsteps = C2_BLOCK16_STEPS;
    uint64_t m = 32 * nsteps;
    bool done = false;
    if (C->skip > 0) {
      C->skip--;
    } else {
      bool direct = nsteps <= C2_DIRECT_STEPS; /* no banks */
      if (!direct && !C->work) C->work = calloc(1, sizeof *C->work);
      c2_work *W = C->work;
      for (int attempt = 0; (direct || W) && attempt < 2 && !done; attempt++) {
        bool f16 = C->dtype == MP_FP16;
        if (direct)
          (f16 ? f16_kernel_direct : bf16_kernel_direct)(&o, C, p + i, nsteps);
        else
          (f16 ? f16_kernel : bf16_kernel)(&o, W->bank, C, p + i, nsteps);
        int lo = 0, hi = 0;
        c2_rc rc = c2_16_commit(C, direct ? NULL : W->bank, &o, m, &lo, &hi);
        if (rc == C2_OK) {
          done = true;
        } else if (rc == C2_WINDOW && attempt == 0) {
          c2_fold_counts(s, C); /* ids change with the window */
          C->moved = true;
          if (!c2_rebase(C, I, lo, hi)) {
            /* Back to a window that fits the tables (the block goes below). */
            c2_rebase(C, I, 127 - 30, 127 + 10);
            break;
          }
        } else {
          break;
        }
      }
      if (done) __atomic_fetch_add(&c2_blocks, 1, __ATOMIC_RELAXED);
      c2_note_failure(C, done);
    }
    if (!done) c2_fallback(s, I, C, p + i, m);
    i += m;
  }
  for (; i < n; i++)
    acc_value(s, I, c2_decode(C->dtype, p[i]), 1);
}

/* ---- fp8 kernel ----------------------------------------------------------- */

typedef struct c2_out8 {
  uint64_t counts[C2_IDS];
  uint8_t smax[32], umax[32], aminm1[32];
  uint64_t neg;
} c2_out8;

/* Nibble-counter sums of a kernel call, by plane j (classes 2j, 2j + 1 of
 * the ids counted that way): in 64-bit lanes, the low nibbles' sum and the
 * whole bytes' sum (low + 16 high), so that a chunk's counters are added
 * with two vpsadbw and the lanes are summed once per call. */
typedef struct c2_nib {
  __m256i low[C2_E4M3_IDS / 2], all[C2_E4M3_IDS / 2];
} c2_nib;

/* The nibble counters of 15 steps or fewer into the sums. */
C2_INLINE void c2_8_flush(c2_nib *sum, const __m256i *acc, int j0, int np) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
  for (int j = 0; j < np; j++) {
    __m256i lo = _mm256_sad_epu8(_mm256_and_si256(acc[j], low4), zero);
    sum->low[j0 + j] = _mm256_add_epi64(sum->low[j0 + j], lo);
    sum->all[j0 + j] = _mm256_add_epi64(sum->all[j0 + j], _mm256_sad_epu8(acc[j], zero));
  }
}

C2_INLINE uint64_t c2_lanes64(__m256i v) {
  __m128i h = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return (uint64_t)_mm_cvtsi128_si64(h) + (uint64_t)_mm_extract_epi64(h, 1);
}

/* Planes j0 .. j0 + np - 1 (ids 2 j0 .. 2 (j0 + np) - 1, np <= 8) over n
 * steps of ids: nibble counters in registers, added to the sums at the end
 * (C2_PASS_PLANES a pass: eight spilled counters and copied the others
 * every step). */
C2_INLINE void c2_8_group(c2_nib *sum, const uint8_t *ids, uint64_t n, int j0, int np) {
  const __m256i sat = _mm256_set1_epi8(0x70), base = _mm256_set1_epi8((char)(2 * j0));
  /* Table j: 1 at id 2j, 16 at id 2j + 1 (less the pass's first id). */
  static const uint8_t tabs[8][16] = {{1, 16},
                                      {0, 0, 1, 16},
                                      {0, 0, 0, 0, 1, 16},
                                      {0, 0, 0, 0, 0, 0, 1, 16},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 1, 16},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 16},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 16},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 16}};
  __m256i acc[8];
  for (int j = 0; j < np; j++)
    acc[j] = _mm256_setzero_si256();
  for (uint64_t i = 0; i < n; i++) {
    /* Ids outside the pass's 16 get bit 7 from the saturating add (ids below
     * it wrap to 0xf0 or more): vpshufb gives 0. */
    __m256i id = _mm256_loadu_si256((const __m256i *)(ids + 32 * i));
    __m256i idx = _mm256_adds_epu8(j0 ? _mm256_sub_epi8(id, base) : id, sat);
    _Pragma("GCC unroll 8") for (int j = 0; j < np; j++) {
      __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tabs[j]));
      acc[j] = _mm256_add_epi8(_mm256_shuffle_epi8(t, idx), acc[j]);
    }
  }
  c2_8_flush(sum, acc, j0, np);
}

/* Pair indices of n steps (16 a step) counted by scalar increments into the
 * four banks: the integer unit counts while the vector unit computes the next
 * chunk's ids (as C2_COUNT16 splits them: L2-resident e5m2 on the Intel VM
 * 0.205 ns a value, against 0.22 by sixteen single loads; counting the
 * previous step's pairs inside the id loop, as the 16-bit kernel does, was
 * slower here, 0.25). */
C2_INLINE void c2_8_pairs(uint16_t (*bank)[C2_IDS * C2_IDS], const uint16_t *ix, uint64_t n) {
  uint16_t *b0 = bank[0], *b1 = bank[1], *b2 = bank[2], *b3 = bank[3];
  for (uint64_t k = 0; k < n; k++)
    C2_COUNT16(ix + 16 * k);
}

/* nsteps steps of 32 bytes; shift: mantissa bits; nan: e4m3, whose NaN is a
 * class of its own (left out of min, max and negatives); np: nibble-counter
 * planes (ids below 2 np), or 0: pair counters in bank, folded into o->counts
 * at the end (bank NULL: pairs counted by id as they come, for short
 * blocks). Each chunk: ids into a buffer with the lane statistics, then
 * counted from the buffer (nibbles: one pass per C2_PASS_PLANES planes, two
 * passes at most, so that each pass's counters stay in registers). */
C2_INLINE void c2_8_kernel(c2_out8 *o, uint16_t (*bank)[C2_IDS * C2_IDS], const struct cls2_scan *C,
                           const uint8_t *p, uint64_t nsteps, int shift, bool nan, int nth,
                           int np) {
  bool direct = !bank; /* pairs straight into counts by id */
  c2_direct dc;
  if (np == 0 && direct) memset(&dc, 0, sizeof dc);
  const __m256i low7 = _mm256_set1_epi8(0x7f), zero = _mm256_setzero_si256();
  const __m256i emask = _mm256_set1_epi8((char)(0x7f >> shift)), two = _mm256_set1_epi8(2);
  const __m256i minus_one = _mm256_set1_epi8(-1), sign = _mm256_set1_epi8((char)0x80);
  const __m256i one = _mm256_set1_epi8(1);
  const __m256i t0 = _mm256_set1_epi8((char)C->th[0]), t1 = _mm256_set1_epi8((char)C->th[1]);
  __m256i smax = _mm256_set1_epi8((char)0x80), umax = zero, aminm1 = minus_one, neg = zero;
  __m256i neg_sum = zero;
  const __m256i pairw = _mm256_set1_epi16(64 << 8 | 1);
  uint16_t buf[16 * C2_CHUNK8_STEPS] __attribute__((aligned(32))); /* ids or pair indices */
  const uint8_t *ids = (const uint8_t *)buf;
  c2_nib nib;
  for (int j = 0; j < np; j++)
    nib.low[j] = nib.all[j] = zero;
  memset(o->counts, 0, sizeof o->counts);
  for (uint64_t chunk = 0; chunk < nsteps; chunk += C2_CHUNK8_STEPS) {
    /* Byte counters of negatives take one count per step; the chunk's ids
     * are counted once its stores are done (a vector store reloaded in
     * pieces at once stalls store-to-load forwarding). */
    uint64_t len = nsteps - chunk < C2_CHUNK8_STEPS ? nsteps - chunk : C2_CHUNK8_STEPS;
    const uint8_t *q = p + 32 * chunk;
    for (uint64_t i = 0; i < len; i++) {
      scan_prefetch(q + 32 * i, 1); /* each line asked for twice: cheaper than a test */
      __m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * i));
      __m256i m = _mm256_and_si256(v, low7);
      __m256i isneg;
      if (nan) {
        /* The lanes take v + 1, where the NaNs (0x7f, 0xff) wrap to 0x80 and
         * 0: below every other byte with the same sign, so neither can be
         * smax or umax once one is taken off at the end, unless no other
         * byte of that sign came. Negatives: v + 1 in 0x82 .. 0xff. */
        __m256i w = _mm256_add_epi8(v, one);
        smax = _mm256_max_epi8(smax, w);
        umax = _mm256_max_epu8(umax, w);
        isneg = _mm256_cmpgt_epi8(_mm256_xor_si256(w, sign), one);
      } else {
        smax = _mm256_max_epi8(smax, v);
        umax = _mm256_max_epu8(umax, v);
        isneg = _mm256_cmpgt_epi8(_mm256_xor_si256(v, sign), zero); /* sign, m != 0 */
      }
      /* e4m3: a NaN's m - 1 (0x7e) is above every finite one (0x7d at most),
       * taken for none at the end. */
      aminm1 = _mm256_min_epu8(aminm1, _mm256_sub_epi8(m, one));
      neg = _mm256_sub_epi8(neg, isneg);
      __m256i id = _mm256_and_si256(_mm256_srli_epi16(m, shift), emask);
      id = _mm256_add_epi8(id, _mm256_min_epu8(m, two));
      if (nth > 0) id = _mm256_sub_epi8(id, _mm256_cmpgt_epi8(m, t0));
      if (nth > 1) id = _mm256_sub_epi8(id, _mm256_cmpgt_epi8(m, t1));
      /* Pairs: lo + 64 hi (ids stay below 64 for every byte, inf and NaN included). */
      if (np == 0) id = _mm256_maddubs_epi16(id, pairw);
      _mm256_store_si256((__m256i *)(buf + 16 * i), id);
    }
    if (np == 0 && direct) {
      c2_count_direct(&dc, buf, 16 * len);
    } else if (np == 0) {
      c2_8_pairs(bank, buf, len);
    } else { /* written out so that each pass's plane count is a constant */
      const int k = C2_PASS_PLANES;
      c2_8_group(&nib, ids, len, 0, np < k ? np : k);
      if (np > k) c2_8_group(&nib, ids, len, k, np - k);
    }
    neg_sum = _mm256_add_epi64(neg_sum, _mm256_sad_epu8(neg, zero));
    neg = zero;
  }
  if (nan) { /* back to v's terms, NaNs out (saturating: an empty lane stays empty) */
    smax = _mm256_subs_epi8(smax, one);
    umax = _mm256_subs_epu8(umax, one);
    aminm1 = _mm256_or_si256(aminm1, _mm256_cmpeq_epi8(aminm1, _mm256_set1_epi8(0x7e)));
  }
  _mm256_storeu_si256((__m256i *)o->smax, smax);
  _mm256_storeu_si256((__m256i *)o->umax, umax);
  _mm256_storeu_si256((__m256i *)o->aminm1, aminm1);
  uint64_t ns[4];
  _mm256_storeu_si256((__m256i *)ns, neg_sum);
  o->neg = ns[0] + ns[1] + ns[2] + ns[3];
  if (np == 0 && !direct) c2_fold_pairs(bank, C->nid, o->counts);
  if (np == 0 && direct) c2_direct_sum(&dc, o->counts);
  for (int j = 0; j < np; j++) {
    uint64_t low = c2_lanes64(nib.low[j]);
    o->counts[2 * j] = low;
    o->counts[2 * j + 1] = (c2_lanes64(nib.all[j]) - low) / 16;
  }
}

/* e4m3's 20 ids by nibble counters, e5m2's 34 as pairs: L2-resident data on
 * the 2-core Intel AVX-512 VM, e4m3 0.146-0.16 ns a value by nibbles (0.205
 * before the five-plane passes, the vpsadbw sums and -O3), e5m2 0.19-0.20 as
 * pairs against 0.235 by nibbles; a hybrid (a chunk's first 15 steps by
 * nibbles, 5 to 60 more as pairs counted inside the nibble passes) was no
 * faster than pairs. */
__attribute__((target(C2_ISA), noinline)) static void
e4m3_kernel(c2_out8 *o, uint16_t (*bank)[C2_IDS * C2_IDS], const struct cls2_scan *C,
            const uint8_t *p, uint64_t nsteps) {
  c2_8_kernel(o, bank, C, p, nsteps, 3, true, C2_E4M3_NTH, C2_E4M3_IDS / 2);
}

__attribute__((target(C2_ISA), noinline)) static void
e5m2_kernel(c2_out8 *o, uint16_t (*bank)[C2_IDS * C2_IDS], const struct cls2_scan *C,
            const uint8_t *p, uint64_t nsteps) {
  c2_8_kernel(o, bank, C, p, nsteps, 2, false, C2_E5M2_NTH, 0);
}

static c2_rc c2_8_commit(struct cls2_scan *C, uint16_t (*bank)[C2_IDS * C2_IDS], const c2_out8 *o,
                         uint64_t n) {
  int32_t smax_l[32];
  uint32_t umax_l[32], aminm1_l[32];
  for (int l = 0; l < 32; l++) {
    smax_l[l] = (int8_t)o->smax[l];
    umax_l[l] = o->umax[l];
    aminm1_l[l] = o->aminm1[l];
  }
  uint32_t amax, aminm1, umax;
  int32_t smax;
  c2_lane_range(smax_l, umax_l, aminm1_l, 32, 8, &amax, &aminm1, &smax, &umax);
  uint64_t total = 0;
  for (int id = 0; id < C->nid; id++)
    total += o->counts[id];
  /* inf or NaN (ids beyond the classes: pair counters the fold left), or a
   * value without a class (cannot happen). */
  if (amax >= c2_special(C->dtype) || total != n) {
    if (bank) memset(bank, 0, sizeof(uint16_t) * C2_BANKS * C2_IDS * C2_IDS);
    return C2_FAIL;
  }
  for (int id = 0; id < C->nid; id++)
    C->count[id] += o->counts[id];
  C->values += n;
  C->negatives += o->neg;
  c2_block_extremes(C, smax, umax, aminm1, 8, o->counts[0]);
  return C2_OK;
}

static void c2_8_run(mp_stats *s, const src_info *I, struct cls2_scan *C, const uint8_t *p,
                     uint64_t n) {
  c2_out8 o;
  uint64_t i = 0;
  while (n - i >= 32) {
    uint64_t nsteps = (n - i) / 32;
    if (nsteps > C2_BLOCK8_STEPS) nsteps = C2_BLOCK8_STEPS;
    uint64_t m = 32 * nsteps;
    bool done = false;
    if (C->skip > 0) {
      C->skip--;
    } else {
      /* e4m3 counts by nibbles, short e5m2 blocks directly: no banks. */
      bool e4m3 = C->dtype == MP_FP8_E4M3, banks = !e4m3 && nsteps > C2_DIRECT_STEPS;
      if (banks && !C->work) C->work = calloc(1, sizeof *C->work);
      if (!banks || C->work) {
        uint16_t(*bank)[C2_IDS * C2_IDS] = banks ? C->work->bank : NULL;
        (e4m3 ? e4m3_kernel : e5m2_kernel)(&o, bank, C, p + i, nsteps);
        c2_rc rc = c2_8_commit(C, bank, &o, m);
        done = rc == C2_OK;
      }
      if (done) __atomic_fetch_add(&c2_blocks, 1, __ATOMIC_RELAXED);
      c2_note_failure(C, done);
    }
    if (!done) c2_fallback(s, I, C, p + i, m);
    i += m;
  }
  for (; i < n; i++)
    C->tail[p[i]]++;
}

/* ---- the path ------------------------------------------------------------- */

/* AVX2 (which also says the OS saves ymm state) and F16C (vcvtph2ps; cpuid
 * leaf 1, ecx bit 29: clang's __builtin_cpu_supports does not know it). */
bool mp_scan_cpu_has_classes_avx2(void) {
  unsigned a, b, c, d;
  return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
}

_Static_assert(sizeof(struct cls2_scan) <= MP_CLS2_BYTES, "a class state fits its workspace slot");
_Static_assert(sizeof(struct c2_work) <= MP_CLS2_WORK_BYTES, "pair counters fit the workspace's");

bool mp_scan_cls2_init_at(cls2_scan *C, mp_dtype d, void *work) {
  if (!mp_scan_cpu_has_classes_avx2()) return false;
  pthread_once(&c2_once, c2_build_all);
  if (d < 0 || d >= MP_DTYPE_COUNT || !formats16[d].ok) return false;
  memcpy(C, &formats16[d].tmpl, sizeof *C);
  C->work = work;
  return true;
}

cls2_scan *mp_scan_cls2_start(mp_dtype d) {
  struct cls2_scan *C = malloc(sizeof *C);
  if (C && !mp_scan_cls2_init_at(C, d, NULL)) {
    free(C);
    C = NULL;
  }
  return C;
}

void mp_scan_cls2_restart(cls2_scan *C, void *work) {
  const struct cls2_scan *T = &formats16[C->dtype].tmpl;
  if (C->moved) {
    memcpy(C, T, sizeof *C);
  } else {
    memset(C->count, 0, sizeof C->count);
    C->values = C->negatives = 0;
    C->key_min = T->key_min;
    C->key_max = T->key_max;
    C->abs_min = T->abs_min;
    C->skip = T->skip;
    C->fails = T->fails;
    memset(C->tail, 0, sizeof C->tail);
  }
  C->work = work;
  C->pat = T->pat; /* freed by finish */
}

bool mp_scan_cls2_clean(const cls2_scan *C) {
  for (int id = 0; id < C2_IDS; id++)
    if (C->count[id]) return false;
  if (C->work)
    for (int b = 0; b < C2_BANKS; b++)
      for (int i = 0; i < C2_IDS * C2_IDS; i++)
        if (C->work->bank[b][i]) return false;
  return true;
}

void mp_scan_cls2_free(cls2_scan *C) {
  if (!C) return;
  free(C->work);
  free(C->pat.cnt);
  free(C);
}

void mp_scan_cls2_run(mp_stats *s, const src_info *I, cls2_scan *C, const void *p, uint64_t n) {
  if (c2_is8(C->dtype))
    c2_8_run(s, I, C, p, n);
  else
    c2_16_run(s, I, C, p, n);
}

void mp_scan_cls2_finish(mp_stats *s, const src_info *I, cls2_scan *C) {
  bool fp8 = c2_is8(C->dtype);
  if (fp8)
    for (int v = 0; v < 256; v++)
      if (C->tail[v]) acc_value(s, I, c2_decode(C->dtype, (uint32_t)v), C->tail[v]);
  if (C->pat.cnt) {
    mp_scan_pattern_fold(s, I, C->dtype, &C->pat);
    free(C->pat.cnt);
    C->pat.cnt = NULL;
  }
  if (C->values == 0) return;
  c2_fold_counts(s, C);
  s->negatives += C->negatives;
  if (C->key_min == INT32_MAX) return; /* nothing finite */
  unsigned bits = fp8 ? 8 : 16, signbit = 1u << (bits - 1);
  uint32_t bmin = C->key_min < 0 ? (uint32_t)(-1 - C->key_min) | signbit : (uint32_t)C->key_min;
  uint32_t bmax = C->key_max < 0 ? (uint32_t)(-1 - C->key_max) | signbit : (uint32_t)C->key_max;
  acc_extremes(s, c2_decode(C->dtype, bmin));
  acc_extremes(s, c2_decode(C->dtype, bmax));
  if (C->abs_min != UINT32_MAX) {
    double a = c2_decode(C->dtype, C->abs_min);
    if (a < s->min_abs_nonzero) s->min_abs_nonzero = a;
  }
}
#endif
