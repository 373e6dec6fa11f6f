/* The host scanner's fp32, fp16 and bf16 path through AVX-512 bit planes. */
#include <stdint.h>
#include <string.h>

#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
/* ---- fp32, AVX-512 bit planes ---------------------------------------------
 *
 * The AVX-512 kernel (scan_avx512.c) spends about half its time on the exponent histogram
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
 * fails is counted again by the AVX-512 kernel (whose per-vector checks send
 * such vectors to acc_value()); nothing of the failed attempt is kept. After
 * a failed block the plane kernel sits out a growing number of blocks, so
 * that data which keeps failing costs little more than before. */
#define PLANE_ISA "avx512f,avx512bw,avx512dq,avx512vbmi,avx512bitalg,gfni"
#define PLANE_INLINE __attribute__((target(PLANE_ISA), always_inline)) static inline
#define PLANE_BLOCK_VECTORS 4096 /* per kernel call: 16-bit counters hold its counts */
#define PLANE_CHUNK_VECTORS 128  /* byte counters: 16 counts of at most 8 between widenings */

/* What one kernel call leaves for plane_commit(). */
typedef struct plane_out {
  int32_t smax[16];       /* signed max of x's bits: the largest x if any x has its sign clear */
  uint32_t umax[16];      /* unsigned max: the smallest x if any x has its sign set */
  uint32_t aminm1[16];    /* min of |x|'s bits - 1: zeros wrap to UINT32_MAX and drop out */
  uint64_t negatives;     /* x < -0, counted by the integer unit */
  uint16_t eights[3][32]; /* per plane and bit position: count of weight 8 */
  uint16_t rest[3][32];   /* the same, weight 1 (what the tree held at the end) */
} plane_out;

/* Sets up the tables; false if the thresholds do not fit them. */
bool mp_scan_plane_tables_init(plane_tables *T, const int32_t th_bits[TH_COUNT]) {
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
    negatives += (uint64_t)__builtin_popcount(_mm512_cmpgt_epu32_mask(v, signbit));                \
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
  __m512i aminm1 = _mm512_set1_epi32(-1);
  const __m512i signbit = _mm512_set1_epi32(INT32_MIN); /* -0: not above it */
  uint64_t negatives = 0; /* the vector unit bounds the kernel, the integer unit has room */
  __m512i ones0 = zero, ones1 = zero, ones2 = zero, twos0 = zero, twos1 = zero, twos2 = zero;
  __m512i fours0 = zero, fours1 = zero, fours2 = zero;
  memset(o->eights, 0, sizeof o->eights);
  for (uint64_t chunk = 0; chunk < nvec; chunk += PLANE_CHUNK_VECTORS) {
    uint64_t end = nvec - chunk < PLANE_CHUNK_VECTORS ? nvec : chunk + PLANE_CHUNK_VECTORS;
    __m512i b0 = zero, b1 = zero, b2 = zero;
    for (uint64_t i = chunk; i < end; i += 8) {
      uint64_t q = 16 * i;
      scan_prefetch((const char *)p + (kind == 0 ? 4 : 2) * q, kind == 0 ? 8 : 4);
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
  o->negatives = negatives;
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
  uint64_t neg = o->negatives;
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
 * sits out go to the AVX-512 kernel (mp_scan_f32_run_avx512() and friends). */
void mp_scan_plane_run(mp_stats *s, const src_info *I, f32_fast *F, const void *p, uint64_t n,
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
        mp_scan_f32_run_avx512(s, I, F, q, m);
      else if (kind == 1)
        mp_scan_f16_run_avx512(s, I, F, q, m);
      else
        mp_scan_bf16_run_avx512(s, I, F, q, m);
    }
    i += m;
    if (nvec == 0) break;
  }
}

bool mp_scan_cpu_has_planes(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vbmi") &&
         __builtin_cpu_supports("avx512bitalg") && __builtin_cpu_supports("gfni");
}
#endif
