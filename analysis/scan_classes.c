/* The host scanner's 8- and 16-bit paths through class planes (AVX-512 VBMI,
 * BITALG, GFNI: Ice Lake, Zen 4 and later).
 *
 * An 8- or 16-bit value has few binades, so everything the record counts
 * (zero, exponent bin, the cast outcome for every target, inf) is a function
 * of a small "class" of the value: its binade, and in the few binades that
 * straddle a target's threshold, which side of it. Each value becomes a code
 * byte; one table lookup per plane (vpermi2b, 128 entries) turns the code
 * into one bit of a byte, eight classes per plane byte; the planes of two
 * steps are summed per bit position (two carry-save levels, then a byte
 * transpose per qword by gf2p8affineqb and byte popcounts of the carries of
 * weight 4). 16-bit sources store a chunk's class ids and then count them in
 * passes of two planes, so that each pass's counters stay in registers (six
 * or seven planes' at once spilled: 2-core Zen 5 VM, from cache, fp16 16.1
 * -> 19.3 GB/s, bf16 13.3 -> 17.0); fp8 counts from registers as it goes
 * (from memory the passes made e4m3 slower). At the end each class adds its
 * count by its signature (mp_cls_sig_of: what acc_counts() counts for each of
 * its members), so the counts are the portable path's by construction. min,
 * max and min |x| come from integer max/min of the bits in lanes, as in the
 * fp32 kernels.
 *
 * - fp8 (e4m3, e5m2): the code is the byte itself; the table ignores its
 *   sign bit, which goes into bit 7 of planes 0 and 1 through one ternary
 *   logic op: "negative" (non-zero, non-NaN) and "-inf". NaN is what no class
 *   counts. Every byte is counted exactly: no block is ever redone.
 * - bf16: the code is the biased exponent relative to a window of binades
 *   (saturating subtract: zeros get 0), bit 6 set where the value is above the
 *   threshold of its binade (a 64-entry table by exponent mod 64, vpermi2w).
 * - fp16: two table lookups, on the high byte and on the low byte
 *   (subnormals), give the class id of the binade directly (the larger of the
 *   two: ids rise with the binade); a value above its binade's threshold adds
 *   1 (the class above is the next id), so fp16 needs no class-id lookup.
 *   The flag comes from the bytes as well: a third lookup by the high byte
 *   gives the low byte above which the value is flagged (a high byte wholly
 *   above its threshold has the flag in its class already).
 *   A 16-bit block is checked at its end: no inf or NaN, for bf16 no
 *   subnormal and every exponent in the window (else the window moves and the
 *   block is counted again). A block that fails goes to the fp16/bf16 path
 *   these replace (scan_planes.c, scan_avx512.c).
 * The class tables are built from the format: for every magnitude, its code
 * (as the kernel computes it) and what acc_counts() would count for it; codes
 * whose magnitudes disagree mean the format does not fit (no class path). */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
#define CLS_ISA "avx512f,avx512bw,avx512dq,avx512vbmi,avx512bitalg,gfni"
#define CLS_INLINE __attribute__((target(CLS_ISA), always_inline)) static inline
#define CLS_PLANES_MAX 8
#define CLS_MAX (8 * CLS_PLANES_MAX)
#define CLS16_PLANES_FP16 6
#define CLS16_PLANES_BF16 7 /* at most: six where the window's classes fit */
#define CLS_NOCLASS 63      /* class id of codes no class takes: no plane bit */

struct cls_scan {
  mp_dtype dtype;
  int planes;                       /* of the kernel */
  int per_plane;                    /* classes per plane: 7 (fp8, bit 7 signed) or 8 */
  uint8_t cid[128];                 /* code -> class id */
  uint8_t plut[CLS_PLANES_MAX][64]; /* class id -> plane byte */
  uint16_t th[64];                  /* 16-bit: threshold by slot (0x7fff: none) */
  int nclass;
  cls_sig sig[CLS_MAX];                 /* what each class counts (its positive members') */
  uint64_t count[CLS_MAX];              /* values per class */
  uint64_t values, negatives, neg_infs; /* neg_infs: fp8 */
  uint64_t classed;                     /* values in class counts already folded */
  int32_t key_min, key_max;             /* order keys: sign ? -1 - |x| bits : |x| bits */
  uint32_t abs_min;                     /* smallest non-zero |x| bits (UINT32_MAX: none) */
  /* 16-bit: class per (group, flag) — group: biased exponent (bf16) or
   * binade code (fp16); the window (bf16) maps codes to groups. */
  cls_sig gsig[256][2];
  int base, width; /* bf16: codes 1..width are exponents base..base + width - 1 */
  uint8_t hb_code[128], lb_code[128], lb_top;   /* fp16 binade codes */
  uint8_t hb_cid[128], lb_cid[128], lb_top_cid; /* fp16: the class ids of those codes */
  /* fp16, by high byte (its low 7 bits): the low byte above which a value
   * is flagged (0xff: none; a high byte whose values are all flagged has
   * the flag in hb_cid instead). */
  uint8_t hb_flag_above[128];
  unsigned skip, fails; /* 16-bit: blocks to sit out after failures */
  bool moved;           /* bf16: the window moved from the template's */
  uint32_t tail[256];   /* fp8: bytes after the last whole step */
  /* Last (not copied from the template): a kernel's class ids of one chunk
   * and the padding of an odd step. */
  _Alignas(64) uint8_t ids[128 * (MP_CLS_CHUNK_STEPS + 1)];
};

/* A chunk's byte counters take at most 8 a double step (an odd step is one
 * too); a block's 16-bit ones, 8 a double step of each of its chunks. */
_Static_assert(8 * ((MP_CLS_CHUNK_STEPS + 1) / 2) <= 255, "byte counters hold a chunk");
_Static_assert(8 * ((MP_CLS_BLOCK_STEPS + MP_CLS_CHUNK_STEPS - 1) / MP_CLS_CHUNK_STEPS) *
                       ((MP_CLS_CHUNK_STEPS + 1) / 2) <=
                   65535,
               "16-bit counters hold a block");

/* What one kernel call leaves. */
typedef struct cls_out {
  uint16_t fours[CLS_PLANES_MAX][64];      /* carry counts (weight 4) by byte position 8q + bit */
  uint16_t ones[CLS_PLANES_MAX][64];       /* the rest (weight 1) */
  uint16_t smax[32], umax[32], aminm1[32]; /* 16-bit lanes; fp8 in the low byte */
  uint64_t negatives;                      /* 16-bit */
} cls_out;

/* Adds key -> class of sig (a new class if no equal one yet). false: too many. */
static bool cls_assign(cls_scan *C, int key, const cls_sig *g) {
  int id = 0;
  while (id < C->nclass && !mp_cls_sig_equal(&C->sig[id], g))
    id++;
  if (id == C->nclass) {
    if (id >= C->planes * C->per_plane || id >= CLS_NOCLASS) return false;
    C->sig[id] = *g;
    C->nclass++;
  }
  C->cid[key] = (uint8_t)id;
  C->plut[id / C->per_plane][id] |= (uint8_t)(1u << (id % C->per_plane));
  return true;
}

static void cls_reset_tables(cls_scan *C) {
  memset(C->cid, CLS_NOCLASS, sizeof C->cid);
  memset(C->plut, 0, sizeof C->plut);
  C->nclass = 0;
}

/* ---- fp8 ----------------------------------------------------------------- */

static bool cls8_tables(cls_scan *C, const src_info *I) {
  cls_reset_tables(C);
  for (int m = 0; m < 128; m++) {
    double x =
        C->dtype == MP_FP8_E4M3 ? mp_e4m3_to_float((uint8_t)m) : mp_e5m2_to_float((uint8_t)m);
    cls_sig g = mp_cls_sig_of(I, x);
    if (g.kind == 0) continue; /* NaN: counted as what no class takes */
    if (!cls_assign(C, m, &g)) return false;
    if (g.kind >= 2) C->plut[0][C->cid[m]] |= 0x80; /* "negative" when the sign is set */
    if (g.kind == 3) C->plut[1][C->cid[m]] |= 0x80; /* "-inf" */
  }
  return C->nclass <= C->planes * C->per_plane;
}

/* Per bit position of a plane summed over its bytes: byte 8q + k of the
 * result counts bit k in the eight bytes of qword q (gf2p8affineqb with x as
 * the matrix transposes each qword's 8x8 bits). */
CLS_INLINE __m512i cls_bitcounts(__m512i x) {
  const __m512i columns = _mm512_set1_epi64(0x8040201008040201ll);
  return _mm512_popcnt_epi8(_mm512_gf2p8affine_epi64_epi8(columns, x, 0));
}

CLS_INLINE void cls_add_words(uint16_t *w, __m512i bytes) {
  __m512i lo = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(bytes));
  __m512i hi = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(bytes, 1));
  _mm512_storeu_si512(w, _mm512_add_epi16(_mm512_loadu_si512(w), lo));
  _mm512_storeu_si512(w + 32, _mm512_add_epi16(_mm512_loadu_si512(w + 32), hi));
}

/* Four vectors of class ids (two steps) into one plane: one lookup per
 * vector gives each value's plane byte (sign: bit 7 from the id's, where the
 * table has it); two carry-save levels, on and tw, sum them per bit position,
 * and the carries of weight 4 are bit counted into the byte counters ac (at
 * most 8 a call). */
CLS_INLINE void cls_add4(__m512i tab, __m512i *on, __m512i *tw, __m512i *ac, const __m512i *id,
                         bool sign) {
  __m512i x[4];
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++) {
    x[v] = _mm512_permutexvar_epi8(id[v], tab);
    if (sign) x[v] = _mm512_ternarylogic_epi32(x[v], id[v], _mm512_set1_epi8((char)0x80), 0xd0);
  }
  __m512i ca = _mm512_ternarylogic_epi32(*on, x[0], x[1], 0xe8); /* majority */
  __m512i s = _mm512_ternarylogic_epi32(*on, x[0], x[1], 0x96);  /* sum */
  __m512i cb = _mm512_ternarylogic_epi32(s, x[2], x[3], 0xe8);
  *on = _mm512_ternarylogic_epi32(s, x[2], x[3], 0x96);
  __m512i c4 = _mm512_ternarylogic_epi32(*tw, ca, cb, 0xe8);
  *tw = _mm512_ternarylogic_epi32(*tw, ca, cb, 0x96);
  *ac = _mm512_add_epi8(*ac, cls_bitcounts(c4));
}

/* Planes k0 .. k0 + nk - 1 (nk <= 2: their state stays in registers) over
 * n double steps of 16-bit class ids at ids (four vectors of 64 each), the
 * levels kept from pass to pass in ones and twos, the carries of weight 4
 * added to o->fours at the end. */
CLS_INLINE void cls_pass(cls_out *o, const cls_scan *C, __m512i *ones, __m512i *twos,
                         const uint8_t *ids, uint64_t n, int k0, int nk) {
  __m512i tab[2], on[2], tw[2], ac[2];
#pragma GCC unroll 2
  for (int k = 0; k < nk; k++) {
    tab[k] = _mm512_loadu_si512(C->plut[k0 + k]);
    on[k] = ones[k0 + k];
    tw[k] = twos[k0 + k];
    ac[k] = _mm512_setzero_si512();
  }
  for (uint64_t j = 0; j < n; j++) {
    __m512i id[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++)
      id[v] = _mm512_load_si512(ids + 256 * j + 64 * v);
#pragma GCC unroll 2
    for (int k = 0; k < nk; k++)
      cls_add4(tab[k], &on[k], &tw[k], &ac[k], id, false);
  }
#pragma GCC unroll 2
  for (int k = 0; k < nk; k++) {
    ones[k0 + k] = on[k];
    twos[k0 + k] = tw[k];
    cls_add_words(o->fours[k0 + k], ac[k]);
  }
}

/* A chunk of len steps (two id vectors each) at ids through every plane, in
 * passes of two planes; an odd step is paired with one of ids no class takes. */
CLS_INLINE void cls_chunk_planes(cls_out *o, const cls_scan *C, __m512i *ones, __m512i *twos,
                                 uint8_t *ids, uint64_t len, int np) {
  if (len & 1) {
    _mm512_store_si512(ids + 128 * len, _mm512_set1_epi8(CLS_NOCLASS));
    _mm512_store_si512(ids + 128 * len + 64, _mm512_set1_epi8(CLS_NOCLASS));
  }
#pragma GCC unroll 4
  for (int k0 = 0; k0 < np; k0 += 2)
    cls_pass(o, C, ones, twos, ids, (len + 1) / 2, k0, np - k0 < 2 ? np - k0 : 2);
}

/* The levels left at the end into o->ones: twos' bit counts twice, ones' once. */
CLS_INLINE void cls_finish_planes(cls_out *o, const __m512i *ones, const __m512i *twos, int np) {
  memset(o->ones, 0, sizeof o->ones);
  for (int k = 0; k < np; k++) {
    __m512i t = cls_bitcounts(twos[k]);
    cls_add_words(o->ones[k], _mm512_add_epi8(_mm512_add_epi8(t, t), cls_bitcounts(ones[k])));
  }
}

/* nsteps steps of 128 bytes from p, two at a time: the planes of their class
 * ids straight from registers (through a buffer, as for 16-bit sources, the
 * data came from memory slower). special: magnitudes at or above it are inf
 * or NaN (left out of min and max). */
CLS_INLINE void cls8_kernel(cls_out *o, const cls_scan *C, const uint8_t *p, uint64_t nsteps,
                            int np, int nsign, uint8_t special) {
  __m512i ptab[CLS_PLANES_MAX], ones[CLS_PLANES_MAX], twos[CLS_PLANES_MAX], acc[CLS_PLANES_MAX];
  for (int k = 0; k < np; k++)
    ptab[k] = _mm512_loadu_si512(C->plut[k]);
  const __m512i cid_lo = _mm512_loadu_si512(C->cid), cid_hi = _mm512_loadu_si512(C->cid + 64);
  const __m512i zero = _mm512_setzero_si512(), signbit = _mm512_set1_epi8((char)0x80);
  const __m512i low7 = _mm512_set1_epi8(0x7f), spec = _mm512_set1_epi8((char)special);
  const __m512i minus_one = _mm512_set1_epi8(-1);
  for (int k = 0; k < np; k++)
    ones[k] = twos[k] = acc[k] = zero;
  __m512i smax = _mm512_set1_epi8((char)0x80), umax = zero, aminm1 = minus_one;
  memset(o->fours, 0, sizeof o->fours);
  /* The lane statistics of v, and its class ids with its sign in bit 7. */
#define CLS8_ONE(v, id)                                                                            \
  do {                                                                                             \
    __m512i m_ = _mm512_and_si512((v), low7);                                                      \
    __mmask64 fin_ = _mm512_cmplt_epu8_mask(m_, spec);                                             \
    smax = _mm512_mask_max_epi8(smax, fin_, smax, (v));                                            \
    umax = _mm512_mask_max_epu8(umax, fin_, umax, (v));                                            \
    aminm1 = _mm512_mask_min_epu8(aminm1, fin_, aminm1, _mm512_add_epi8(m_, minus_one));           \
    id = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(cid_lo, (v), cid_hi), (v), signbit,    \
                                   0xf8); /* id | v & 0x80 */                                      \
  } while (0)
  for (uint64_t chunk = 0; chunk < nsteps; chunk += MP_CLS_CHUNK_STEPS) {
    uint64_t end = nsteps - chunk < MP_CLS_CHUNK_STEPS ? nsteps : chunk + MP_CLS_CHUNK_STEPS;
    for (uint64_t i = chunk; i < end; i += 2) {
      const uint8_t *q = p + 128 * i;
      scan_prefetch(q, 4);
      __m512i id[4];
      CLS8_ONE(_mm512_loadu_si512(q), id[0]);
      CLS8_ONE(_mm512_loadu_si512(q + 64), id[1]);
      if (i + 1 < end) {
        CLS8_ONE(_mm512_loadu_si512(q + 128), id[2]);
        CLS8_ONE(_mm512_loadu_si512(q + 192), id[3]);
      } else { /* an odd step: no class for the other */
        id[2] = id[3] = _mm512_set1_epi8(CLS_NOCLASS);
      }
#pragma GCC unroll 8
      for (int k = 0; k < np; k++)
        cls_add4(ptab[k], &ones[k], &twos[k], &acc[k], id, k < nsign);
    }
    for (int k = 0; k < np; k++) {
      cls_add_words(o->fours[k], acc[k]);
      acc[k] = zero;
    }
  }
#undef CLS8_ONE
  cls_finish_planes(o, ones, twos, np);
  /* Bytes into the 16-bit lanes' low bytes: signed max as signed words. */
  _mm512_storeu_si512(o->smax, _mm512_cvtepi8_epi16(_mm512_castsi512_si256(
                                   _mm512_max_epi8(smax, _mm512_shuffle_i64x2(smax, smax, 0x4e)))));
  _mm512_storeu_si512(o->umax, _mm512_cvtepu8_epi16(_mm512_castsi512_si256(
                                   _mm512_max_epu8(umax, _mm512_shuffle_i64x2(umax, umax, 0x4e)))));
  _mm512_storeu_si512(o->aminm1, _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_min_epu8(
                                     aminm1, _mm512_shuffle_i64x2(aminm1, aminm1, 0x4e)))));
}

__attribute__((target(CLS_ISA), noinline)) static void
e4m3_kernel(cls_out *o, const cls_scan *C, const uint8_t *p, uint64_t nsteps) {
  cls8_kernel(o, C, p, nsteps, 3, 1, 0x7f);
}

__attribute__((target(CLS_ISA), noinline)) static void
e5m2_kernel(cls_out *o, const cls_scan *C, const uint8_t *p, uint64_t nsteps) {
  cls8_kernel(o, C, p, nsteps, 5, 2, E5M2_INF_BITS);
}

/* Count of class bit b of plane k over the block. */
static uint64_t plane_bit_count(const cls_out *o, int k, int b) {
  uint64_t c = 0;
  for (int q = 0; q < 8; q++)
    c += 4u * o->fours[k][8 * q + b] + o->ones[k][8 * q + b];
  return c;
}

/* A block's count of every class (ids 0 .. nclass - 1), plane by plane. */
static void cls_block_counts(const cls_scan *C, const cls_out *o, uint64_t counts[CLS_MAX]) {
  for (int k = 0, id = 0; id < C->nclass; k++) {
    uint32_t c[8] = {0};
    for (int q = 0; q < 8; q++)
      for (int b = 0; b < 8; b++)
        c[b] += 4u * o->fours[k][8 * q + b] + o->ones[k][8 * q + b];
    for (int b = 0; b < C->per_plane && id < C->nclass; b++)
      counts[id++] = c[b];
  }
}

/* Adds an fp8 block's class counts to C; returns its zeros. */
static uint64_t cls_commit_counts(cls_scan *C, const cls_out *o) {
  uint64_t zeros = 0, counts[CLS_MAX];
  cls_block_counts(C, o, counts);
  for (int id = 0; id < C->nclass; id++) {
    C->count[id] += counts[id];
    if (C->sig[id].kind == 1) zeros = counts[id];
  }
  return zeros;
}

static void cls_note_extremes(cls_scan *C, uint32_t mn, uint32_t mx, uint32_t amin,
                              unsigned signbit) {
  uint32_t mag = signbit - 1;
  int32_t kmin = mn & signbit ? -1 - (int32_t)(mn & mag) : (int32_t)mn;
  int32_t kmax = mx & signbit ? -1 - (int32_t)(mx & mag) : (int32_t)mx;
  if (kmin < C->key_min) C->key_min = kmin;
  if (kmax > C->key_max) C->key_max = kmax;
  if (amin < C->abs_min) C->abs_min = amin;
}

/* min and max of a block from the lanes (see plane_commit() in
 * scan_planes.c): smax is the largest x if any x has its sign clear, umax
 * the smallest if any has it set. */
static void cls_block_extremes(cls_scan *C, const cls_out *o, int lanes, unsigned bits,
                               uint64_t zeros) {
  unsigned signbit = 1u << (bits - 1), none = (1u << bits) - 1;
  int32_t smax = INT32_MIN;
  uint32_t umax = 0, aminm1 = none;
  for (int l = 0; l < lanes; l++) {
    int32_t sv = bits == 8 ? (int8_t)o->smax[l] : (int16_t)o->smax[l];
    if (sv > smax) smax = sv;
    if (o->umax[l] > umax) umax = o->umax[l];
    if (o->aminm1[l] < aminm1) aminm1 = o->aminm1[l];
  }
  bool has_neg = umax & signbit, has_pos = smax >= 0;
  uint32_t amin = aminm1 == none ? UINT32_MAX : aminm1 + 1;
  if (!has_neg && !has_pos && zeros == 0 && amin == UINT32_MAX) return; /* nothing finite */
  uint32_t mn = has_neg ? umax : zeros ? 0 : amin;
  uint32_t mx = has_pos ? (uint32_t)smax : zeros ? signbit : (amin | signbit);
  cls_note_extremes(C, mn, mx, amin, signbit);
}

/* ---- 16-bit -------------------------------------------------------------- */

/* The kernel's code and flag of magnitude m (without the bf16 window). */
static int cls16_group(const cls_scan *C, uint32_t m) {
  if (C->dtype == MP_BF16) return (int)(m >> 7);
  int h = C->hb_code[(m >> 8) & 0x7f];
  int l = m & 0x80 ? C->lb_top : C->lb_code[m & 0x7f];
  return h > l ? h : l;
}

static int cls16_slot(const cls_scan *C, uint32_t m) {
  return (int)(m >> (C->dtype == MP_BF16 ? 7 : 9)) & 63;
}

static double cls16_decode(const cls_scan *C, uint32_t m) {
  return C->dtype == MP_BF16 ? mp_bf16_to_float((uint16_t)m) : mp_fp16_to_float((uint16_t)m);
}

/* fp16 binade codes: 0 zero, 1 .. 40 the binades 2^-24 .. 2^15. */
static int f16_binade_code(uint32_t m) {
  return m == 0 ? 0 : mp_exponent_of(mp_fp16_to_float((uint16_t)m)) + 25;
}

/* Thresholds and per-(group, flag) classes; false if the format does not fit. */
static bool cls16_init_groups(cls_scan *C, const src_info *I) {
  if (C->dtype == MP_FP16) {
    for (int h = 0; h < 128; h++)
      C->hb_code[h] =
          (uint8_t)((uint32_t)h < F16_INF_BITS >> 8 ? f16_binade_code((uint32_t)h << 8) : 63);
    for (int l = 0; l < 128; l++)
      C->lb_code[l] = (uint8_t)f16_binade_code((uint32_t)l);
    C->lb_top = (uint8_t)f16_binade_code(0x80);
  }
  uint32_t inf_bits = C->dtype == MP_BF16 ? BF16_INF_BITS : F16_INF_BITS;
  for (int j = 0; j < 64; j++)
    C->th[j] = 0x7fff;
  /* A threshold wherever an outcome changes between neighbours of one group
   * (bf16 subnormals are left out: blocks holding one fail their check). */
  uint32_t first = C->dtype == MP_BF16 ? 0x80 : 1;
  int32_t level[256];
  for (int k = 0; k < 256; k++)
    level[k] = -1;
  cls_sig prev = mp_cls_sig_of(I, cls16_decode(C, first - 1));
  for (uint32_t m = first; m < inf_bits; m++) {
    cls_sig g = mp_cls_sig_of(I, cls16_decode(C, m));
    if (m > first && cls16_group(C, m) == cls16_group(C, m - 1) && !mp_cls_sig_equal(&g, &prev)) {
      int j = cls16_slot(C, m - 1);
      if (C->th[j] != 0x7fff && C->th[j] != m - 1) return false;
      C->th[j] = (uint16_t)(m - 1);
      level[cls16_group(C, m)] = (int32_t)(m - 1);
    }
    prev = g;
  }
  /* A group may span several slots (fp16: two per binade): those above its
   * threshold's slot flag every value. */
  for (uint32_t m = first; m < inf_bits; m++) {
    int32_t L = level[cls16_group(C, m)];
    int j = cls16_slot(C, m);
    if (L < 0 || (int32_t)m <= L || j == cls16_slot(C, (uint32_t)L)) continue;
    if (C->th[j] != 0x7fff && C->th[j] != 0) return false;
    C->th[j] = 0;
  }
  memset(C->gsig, 0, sizeof C->gsig);
  uint8_t seen[256][2] = {{0}};
  for (uint32_t m = 0; m < inf_bits; m++) {
    if (C->dtype == MP_BF16 && m > 0 && m < 0x80) continue; /* subnormal: blocks fail */
    int grp = cls16_group(C, m), f = m > C->th[cls16_slot(C, m)];
    double x = cls16_decode(C, m);
    cls_sig g = mp_cls_sig_of(I, x);
    if (!seen[grp][f]) {
      seen[grp][f] = 1;
      C->gsig[grp][f] = g;
    } else if (!mp_cls_sig_equal(&C->gsig[grp][f], &g)) {
      return false;
    }
  }
  return true;
}

/* Plane tables for the current window (bf16) or the binade codes (fp16). */
static bool cls16_tables(cls_scan *C) {
  cls_reset_tables(C);
  for (int code = 0; code < 64; code++) {
    int grp = code;
    if (C->dtype == MP_BF16) {
      if (code > C->width) break;
      grp = code == 0 ? 0 : C->base + code - 1;
      if (grp > 255) break;
    }
    for (int f = 0; f < 2; f++) {
      const cls_sig *g = &C->gsig[grp][f];
      if (g->kind == 0) continue;
      if (!cls_assign(C, code | f << 6, g)) return false;
    }
  }
  if (C->dtype == MP_BF16) return true;
  /* fp16: class ids rise with the binade code and a flagged value's class is
   * the next one, so the byte lookups can give class ids directly (the
   * larger of the two) and the flag adds 1: no class-id lookup per value. */
  uint8_t base[64];
  int last = 0;
  for (int code = 0; code < 64; code++) {
    bool f0 = C->gsig[code][0].kind, f1 = C->gsig[code][1].kind;
    int d = f0 ? C->cid[code] : f1 ? C->cid[code | 0x40] - 1 : last;
    if ((f0 && f1 && C->cid[code | 0x40] != d + 1) || d < last) return false;
    base[code] = (uint8_t)d;
    last = d;
  }
  for (int k = 0; k < 128; k++) {
    C->hb_cid[k] = base[C->hb_code[k] & 63];
    C->lb_cid[k] = base[C->lb_code[k] & 63];
  }
  C->lb_top_cid = base[C->lb_top & 63];
  /* The flag from the bytes: within one high byte the flagged values are
   * those above some low byte (the flag is |x| > th of a slot of 512). */
  for (int h = 0; h < 128; h++) {
    int above = -1; /* the last unflagged low byte */
    for (int l = 0; l < 256; l++) {
      uint32_t m = (uint32_t)h << 8 | (uint32_t)l;
      if (m >= F16_INF_BITS) break; /* inf, NaN: blocks holding them fail */
      bool f = m > C->th[cls16_slot(C, m)];
      if (!f && above != l - 1) return false; /* flagged values not on top */
      if (!f) above = l;
    }
    if (above < 0 && h > 0) C->hb_cid[h]++; /* all flagged; ch >= cl here */
    if (above < 0 && h == 0) return false;  /* cannot be: zero is never flagged */
    C->hb_flag_above[h] = (uint8_t)(above < 0 ? 0xff : above);
  }
  /* What the kernel computes, checked for every finite magnitude. */
  for (uint32_t m = 0; m < F16_INF_BITS; m++) {
    uint32_t h = m >> 8, l = m & 0xff;
    int ch = C->hb_cid[h], cl = l & 0x80 ? C->lb_top_cid : C->lb_cid[l];
    int id = (ch > cl ? ch : cl) + (l > C->hb_flag_above[h]);
    int want = base[cls16_group(C, m) & 63] + (m > C->th[cls16_slot(C, m)]);
    if (id != want) return false;
  }
  return true;
}

/* bf16: a window holding exponents lo .. hi, as wide as the planes allow. */
static bool cls16_rebase(cls_scan *C, int lo, int hi) {
  /* Six planes where they hold the classes with two binades to spare on
   * each side (fewer lookups per value), else seven. */
  for (int np = CLS16_PLANES_BF16 - 1; np <= CLS16_PLANES_BF16; np++) {
    C->planes = np;
    int least = hi - lo + 1 + (np < CLS16_PLANES_BF16 ? 4 : 0);
    for (int width = 62; width >= least; width--) {
      int base = lo - (width - (hi - lo + 1)) / 2;
      if (base < 1) base = 1;
      if (base + width - 1 > 254) base = 255 - width;
      if (base > lo || base + width - 1 < hi) continue;
      C->base = base;
      C->width = width;
      if (cls16_tables(C)) return true;
    }
  }
  C->width = 0;
  cls16_tables(C);
  return false;
}

/* nsteps steps of 128 values (two code vectors) from p (ids: the chunk's
 * class ids, in the state); kind 1 fp16, 2 bf16. */
CLS_INLINE void cls16_kernel(cls_out *o, const cls_scan *C, uint8_t *ids, const uint16_t *p,
                             uint64_t nsteps, int np, int kind) {
  __m512i ones[CLS_PLANES_MAX], twos[CLS_PLANES_MAX];
  const __m512i cid_lo = _mm512_loadu_si512(C->cid), cid_hi = _mm512_loadu_si512(C->cid + 64);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i absmask = _mm512_set1_epi16(0x7fff), minus_one = _mm512_set1_epi16(-1);
  const __m512i negzero = _mm512_set1_epi16((short)0x8000);
  const __m512i th_lo = _mm512_loadu_si512(C->th), th_hi = _mm512_loadu_si512(C->th + 32);
  const __m512i fa_lo = _mm512_loadu_si512(C->hb_flag_above);
  const __m512i fa_hi = _mm512_loadu_si512(C->hb_flag_above + 64);
  const __m512i basem1 = _mm512_set1_epi8((char)(C->base - 1));
  /* Byte i < 32: byte 2i of the first source; i >= 32: byte 2(i - 32) of the second. */
  __m512i even = _mm512_set_epi8(126, 124, 122, 120, 118, 116, 114, 112, 110, 108, 106, 104, 102,
                                 100, 98, 96, 94, 92, 90, 88, 86, 84, 82, 80, 78, 76, 74, 72, 70,
                                 68, 66, 64, 62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36,
                                 34, 32, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi8(even, _mm512_set1_epi8(1));
  const __m512i hb_lo = _mm512_loadu_si512(C->hb_cid), hb_hi = _mm512_loadu_si512(C->hb_cid + 64);
  const __m512i lb_lo = _mm512_loadu_si512(C->lb_cid), lb_hi = _mm512_loadu_si512(C->lb_cid + 64);
  const __m512i lb_top = _mm512_set1_epi8((char)C->lb_top_cid);
  /* bf16: bit 6 marks a flagged code; fp16 (class ids): the next class. */
  const __m512i flag_add = _mm512_set1_epi8(kind == 2 ? 0x40 : 1);
  for (int k = 0; k < np; k++)
    ones[k] = twos[k] = zero;
  __m512i smax = _mm512_set1_epi16((short)0x8000), umax = zero, aminm1 = minus_one;
  uint64_t negatives = 0; /* counted by the integer unit: the vector unit bounds the kernel */
  memset(o->fours, 0, sizeof o->fours);
  /* Lane statistics of v, and (bf16) its exponents and flags: |x| above its
   * slot's threshold. */
#define CLS16_ONE(v, idx, flags)                                                                   \
  do {                                                                                             \
    __m512i a_ = _mm512_and_si512((v), absmask);                                                   \
    smax = _mm512_max_epi16(smax, (v));                                                            \
    umax = _mm512_max_epu16(umax, (v));                                                            \
    aminm1 = _mm512_min_epu16(aminm1, _mm512_add_epi16(a_, minus_one));                            \
    negatives += (uint64_t)__builtin_popcount(_mm512_cmpgt_epu16_mask((v), negzero));              \
    if (kind == 2) {                                                                               \
      idx = _mm512_srli_epi16((v), 7);                                                             \
      flags = _mm512_cmpgt_epu16_mask(a_, _mm512_permutex2var_epi16(th_lo, idx, th_hi));           \
    }                                                                                              \
  } while (0)
  /* 64 values (v, w) into one code vector. */
#define CLS16_CODES(v, w, c)                                                                       \
  do {                                                                                             \
    __m512i iv_ = zero, iw_ = zero;                                                                \
    __mmask32 fv_ = 0, fw_ = 0;                                                                    \
    __mmask64 f_;                                                                                  \
    CLS16_ONE(v, iv_, fv_);                                                                        \
    CLS16_ONE(w, iw_, fw_);                                                                        \
    if (kind == 2) {                                                                               \
      c = _mm512_subs_epu8(_mm512_permutex2var_epi8(iv_, even, iw_), basem1);                      \
      f_ = _mm512_kunpackd((__mmask64)fw_, (__mmask64)fv_);                                        \
    } else {                                                                                       \
      __m512i hb_ = _mm512_permutex2var_epi8((v), odd, (w));                                       \
      __m512i lb_ = _mm512_permutex2var_epi8((v), even, (w));                                      \
      __m512i ch_ = _mm512_permutex2var_epi8(hb_lo, hb_, hb_hi);                                   \
      __m512i cl_ = _mm512_permutex2var_epi8(lb_lo, lb_, lb_hi);                                   \
      cl_ = _mm512_mask_mov_epi8(cl_, _mm512_movepi8_mask(lb_), lb_top);                           \
      c = _mm512_max_epu8(ch_, cl_);                                                               \
      f_ = _mm512_cmpgt_epu8_mask(lb_, _mm512_permutex2var_epi8(fa_lo, hb_, fa_hi));               \
    }                                                                                              \
    c = _mm512_mask_add_epi8(c, f_, c, flag_add);                                                  \
  } while (0)
  for (uint64_t chunk = 0; chunk < nsteps; chunk += MP_CLS_CHUNK_STEPS) {
    uint64_t len = nsteps - chunk < MP_CLS_CHUNK_STEPS ? nsteps - chunk : MP_CLS_CHUNK_STEPS;
    for (uint64_t i = 0; i < len; i++) {
      const uint16_t *q = p + 128 * (chunk + i);
      scan_prefetch(q, 4);
      __m512i c0, c1;
      __m512i v0 = _mm512_loadu_si512(q), v1 = _mm512_loadu_si512(q + 32);
      __m512i v2 = _mm512_loadu_si512(q + 64), v3 = _mm512_loadu_si512(q + 96);
      CLS16_CODES(v0, v1, c0);
      CLS16_CODES(v2, v3, c1);
      if (kind == 2) { /* bf16 codes into class ids (fp16's are already) */
        c0 = _mm512_permutex2var_epi8(cid_lo, c0, cid_hi);
        c1 = _mm512_permutex2var_epi8(cid_lo, c1, cid_hi);
      }
      _mm512_store_si512(ids + 128 * i, c0);
      _mm512_store_si512(ids + 128 * i + 64, c1);
    }
    cls_chunk_planes(o, C, ones, twos, ids, len, np);
  }
#undef CLS16_ONE
#undef CLS16_CODES
  cls_finish_planes(o, ones, twos, np);
  _mm512_storeu_si512(o->smax, smax);
  _mm512_storeu_si512(o->umax, umax);
  _mm512_storeu_si512(o->aminm1, aminm1);
  o->negatives = negatives;
}

__attribute__((target(CLS_ISA), noinline)) static void
f16_kernel(cls_out *o, const cls_scan *C, uint8_t *ids, const uint16_t *p, uint64_t nsteps) {
  cls16_kernel(o, C, ids, p, nsteps, CLS16_PLANES_FP16, 1);
}

__attribute__((target(CLS_ISA), noinline)) static void
bf16_kernel(cls_out *o, const cls_scan *C, uint8_t *ids, const uint16_t *p, uint64_t nsteps) {
  cls16_kernel(o, C, ids, p, nsteps, CLS16_PLANES_BF16, 2);
}

__attribute__((target(CLS_ISA), noinline)) static void
bf16_kernel6(cls_out *o, const cls_scan *C, uint8_t *ids, const uint16_t *p, uint64_t nsteps) {
  cls16_kernel(o, C, ids, p, nsteps, CLS16_PLANES_BF16 - 1, 2);
}

typedef enum { COMMIT_OK, COMMIT_FAIL, COMMIT_WINDOW } commit_rc;

/* Checks a 16-bit block and adds it to C if it passes. */
static commit_rc cls16_commit(cls_scan *C, const cls_out *o, uint64_t nsteps) {
  int32_t smax = INT32_MIN;
  uint32_t umax = 0, aminm1 = 0xffff;
  for (int l = 0; l < 32; l++) {
    if ((int16_t)o->smax[l] > smax) smax = (int16_t)o->smax[l];
    if (o->umax[l] > umax) umax = o->umax[l];
    if (o->aminm1[l] < aminm1) aminm1 = o->aminm1[l];
  }
  uint32_t amax = umax & 0x8000 ? umax & 0x7fff : 0;
  if (smax >= 0 && (uint32_t)smax > amax) amax = (uint32_t)smax;
  bool bf16 = C->dtype == MP_BF16;
  if (amax >= (bf16 ? BF16_INF_BITS : F16_INF_BITS)) return COMMIT_FAIL; /* inf or NaN */
  if (aminm1 != 0xffff && bf16) {
    uint32_t amin = aminm1 + 1;
    if (amin < 0x80) return COMMIT_FAIL; /* subnormal */
    int lo = (int)(amin >> 7), hi = (int)(amax >> 7);
    if (lo < C->base || hi > C->base + C->width - 1) return COMMIT_WINDOW;
  }
  uint64_t counts[CLS_MAX], total = 0;
  cls_block_counts(C, o, counts);
  for (int id = 0; id < C->nclass; id++)
    total += counts[id];
  uint64_t n = 128 * nsteps;
  if (total != n) return COMMIT_FAIL; /* cannot happen: a value without a class */
  uint64_t zeros = 0;
  for (int id = 0; id < C->nclass; id++) {
    C->count[id] += counts[id];
    if (C->sig[id].kind == 1) zeros = counts[id];
  }
  C->values += n;
  C->negatives += o->negatives;
  cls_block_extremes(C, o, 32, 16, zeros);
  return COMMIT_OK;
}

/* ---- the path ------------------------------------------------------------- */

bool mp_scan_cpu_has_classes(void) {
  return mp_scan_cpu_has_planes();
}

/* Per source dtype, the state a scan starts from (tables built once). */
static cls_scan *templates[MP_DTYPE_COUNT];
static pthread_once_t templates_once = PTHREAD_ONCE_INIT;

static cls_scan *build_template(mp_dtype d) {
  const src_info *I = mp_scan_info_of(d);
  cls_scan *C = calloc(1, sizeof *C);
  if (!C) return NULL;
  C->dtype = d;
  C->key_min = INT32_MAX;
  C->key_max = INT32_MIN;
  C->abs_min = UINT32_MAX;
  bool ok;
  if (d == MP_FP8_E4M3 || d == MP_FP8_E5M2) {
    C->planes = d == MP_FP8_E4M3 ? 3 : 5;
    C->per_plane = 7;
    ok = cls8_tables(C, I);
  } else {
    C->planes = d == MP_FP16 ? CLS16_PLANES_FP16 : CLS16_PLANES_BF16;
    C->per_plane = 8;
    ok = cls16_init_groups(C, I);
    if (ok && d == MP_BF16)
      cls16_rebase(C, 127 - 30, 127 + 10); /* a first window: moves when blocks miss it */
    else if (ok)
      ok = cls16_tables(C);
  }
  if (!ok) {
    free(C);
    return NULL;
  }
  return C;
}

static void build_templates(void) {
  const mp_dtype ds[] = {MP_FP8_E4M3, MP_FP8_E5M2, MP_FP16, MP_BF16};
  for (int k = 0; k < 4; k++)
    templates[ds[k]] = build_template(ds[k]);
}

_Static_assert(sizeof(struct cls_scan) <= MP_CLS_BYTES, "a class state fits its workspace slot");

bool mp_scan_cls_init_at(cls_scan *C, mp_dtype d) {
  if (!mp_scan_cpu_has_classes()) return false;
  pthread_once(&templates_once, build_templates);
  if (d < 0 || d >= MP_DTYPE_COUNT || !templates[d]) return false;
  memcpy(C, templates[d], offsetof(cls_scan, ids));
  return true;
}

cls_scan *mp_scan_cls_start(mp_dtype d) {
  cls_scan *C = aligned_alloc(64, sizeof *C); /* ids: aligned stores */
  if (C && !mp_scan_cls_init_at(C, d)) {
    free(C);
    C = NULL;
  }
  return C;
}

void mp_scan_cls_restart(cls_scan *C) {
  const cls_scan *T = templates[C->dtype];
  if (C->moved) {
    memcpy(C, T, offsetof(cls_scan, ids));
    return;
  }
  memset(C->count, 0, sizeof C->count);
  C->values = C->negatives = C->neg_infs = C->classed = 0;
  C->key_min = T->key_min;
  C->key_max = T->key_max;
  C->abs_min = T->abs_min;
  C->skip = T->skip;
  C->fails = T->fails;
  memset(C->tail, 0, sizeof C->tail);
}

bool mp_scan_cls_clean(const cls_scan *C) {
  for (int id = 0; id < CLS_MAX; id++)
    if (C->count[id]) return false;
  return true;
}

static void cls8_run(cls_scan *C, const uint8_t *p, uint64_t n) {
  cls_out o;
  uint64_t i = 0;
  while (n - i >= 128) {
    uint64_t nsteps = (n - i) / 128;
    if (nsteps > MP_CLS_BLOCK_STEPS) nsteps = MP_CLS_BLOCK_STEPS;
    if (C->dtype == MP_FP8_E4M3)
      e4m3_kernel(&o, C, p + i, nsteps);
    else
      e5m2_kernel(&o, C, p + i, nsteps);
    uint64_t n_block = 128 * nsteps, zeros = cls_commit_counts(C, &o);
    C->values += n_block;
    C->negatives += plane_bit_count(&o, 0, 7);
    if (C->dtype == MP_FP8_E5M2) C->neg_infs += plane_bit_count(&o, 1, 7);
    cls_block_extremes(C, &o, 32, 8, zeros);
    i += n_block;
  }
  for (; i < n; i++)
    C->tail[p[i]]++;
}

/* The class counts into s (acc_sig_counts(): what acc_counts() counts for a member). */
static void cls_fold_counts(mp_stats *s, cls_scan *C) {
  for (int id = 0; id < C->nclass; id++) {
    if (C->count[id]) acc_sig_counts(s, &C->sig[id], C->count[id]);
    C->classed += C->count[id];
    C->count[id] = 0;
  }
}

/* 16-bit blocks left to the path the kernel replaces, failed or sat out (tests). */
static uint64_t cls_fallbacks;

uint64_t mp_scan_cls_fallbacks(void) {
  return __atomic_load_n(&cls_fallbacks, __ATOMIC_RELAXED);
}

void mp_scan_cls_run(mp_stats *s, const src_info *I, cls_scan *C, f32_fast *F, const void *p,
                     uint64_t n) {
  if (C->dtype == MP_FP8_E4M3 || C->dtype == MP_FP8_E5M2) {
    cls8_run(C, p, n);
    return;
  }
  int kind = C->dtype == MP_FP16 ? 1 : 2;
  const uint16_t *q = p;
  cls_out o;
  uint64_t i = 0;
  while (i < n) {
    uint64_t nsteps = (n - i) / 128;
    if (nsteps > MP_CLS_BLOCK_STEPS) nsteps = MP_CLS_BLOCK_STEPS;
    uint64_t m = nsteps ? 128 * nsteps : n - i;
    bool done = false;
    if (nsteps == 0) {
      /* the tail goes to the other path */
    } else if (C->skip > 0) {
      C->skip--;
    } else {
      for (int attempt = 0; attempt < 2 && !done; attempt++) {
        if (kind == 1)
          f16_kernel(&o, C, C->ids, q + i, nsteps);
        else
          (C->planes < CLS16_PLANES_BF16 ? bf16_kernel6 : bf16_kernel)(&o, C, C->ids, q + i,
                                                                       nsteps);
        commit_rc rc = cls16_commit(C, &o, nsteps);
        if (rc == COMMIT_OK) {
          done = true;
        } else if (rc == COMMIT_WINDOW && attempt == 0) {
          /* Move the window to the block's exponents and count it again. */
          uint32_t amax = 0, aminm1 = 0xffff;
          for (int l = 0; l < 32; l++) {
            uint32_t a = o.umax[l] & 0x8000 ? o.umax[l] & 0x7fff : 0;
            if (a > amax) amax = a;
            if ((int16_t)o.smax[l] >= 0 && o.smax[l] > amax) amax = o.smax[l];
            if (o.aminm1[l] < aminm1) aminm1 = o.aminm1[l];
          }
          cls_fold_counts(s, C); /* class ids change with the window */
          C->moved = true;
          if (!cls16_rebase(C, (int)((aminm1 + 1) >> 7), (int)(amax >> 7))) break;
        } else {
          break;
        }
      }
      if (done) {
        C->fails = 0;
      } else {
        C->skip = 1u << (C->fails < 6 ? C->fails : 6);
        C->fails++;
      }
    }
    if (!done) {
      if (nsteps) __atomic_fetch_add(&cls_fallbacks, 1, __ATOMIC_RELAXED);
      if (F->use_planes)
        mp_scan_plane_run(s, I, F, q + i, m, kind);
      else if (kind == 1)
        mp_scan_f16_run_avx512(s, I, F, q + i, m);
      else
        mp_scan_bf16_run_avx512(s, I, F, q + i, m);
    }
    i += m;
  }
}

void mp_scan_cls_finish(mp_stats *s, const src_info *I, cls_scan *C) {
  bool fp8 = C->dtype == MP_FP8_E4M3 || C->dtype == MP_FP8_E5M2;
  for (int v = 0; v < 256; v++)
    if (C->tail[v])
      acc_value(s, I,
                C->dtype == MP_FP8_E4M3 ? mp_e4m3_to_float((uint8_t)v)
                                        : mp_e5m2_to_float((uint8_t)v),
                C->tail[v]);
  if (C->values == 0) return;
  cls_fold_counts(s, C);
  if (fp8) {
    acc_counts(s, I, NAN, C->values - C->classed); /* NaN: no class */
    s->pos_infs -= C->neg_infs;
    s->neg_infs += C->neg_infs;
  }
  s->negatives += C->negatives;
  if (C->key_min == INT32_MAX) return; /* nothing finite */
  unsigned bits = fp8 ? 8 : 16, signbit = 1u << (bits - 1);
  double mn, mx;
  uint32_t bmin = C->key_min < 0 ? (uint32_t)(-1 - C->key_min) | signbit : (uint32_t)C->key_min;
  uint32_t bmax = C->key_max < 0 ? (uint32_t)(-1 - C->key_max) | signbit : (uint32_t)C->key_max;
  switch (C->dtype) {
  case MP_FP8_E4M3:
    mn = mp_e4m3_to_float((uint8_t)bmin);
    mx = mp_e4m3_to_float((uint8_t)bmax);
    break;
  case MP_FP8_E5M2:
    mn = mp_e5m2_to_float((uint8_t)bmin);
    mx = mp_e5m2_to_float((uint8_t)bmax);
    break;
  default:
    mn = cls16_decode(C, bmin);
    mx = cls16_decode(C, bmax);
    break;
  }
  acc_extremes(s, mn);
  acc_extremes(s, mx);
  if (C->abs_min != UINT32_MAX) {
    double a = fp8 ? fabs(C->dtype == MP_FP8_E4M3 ? mp_e4m3_to_float((uint8_t)C->abs_min)
                                                  : mp_e5m2_to_float((uint8_t)C->abs_min))
                   : cls16_decode(C, C->abs_min);
    if (a < s->min_abs_nonzero) s->min_abs_nonzero = a;
  }
}
#endif
