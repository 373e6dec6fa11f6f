/* The host scanner's fp64 path with AVX-512 (design in scan_internal.h). */
#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
/* The kernel's window of binades, [2^-126, 2^127): outside it, bf16's own
 * levels would take three more slots and fields (such values are rare; their
 * vectors go to acc_value()). */
#define F64V_BITS_LO (897ull << 52)
#define F64V_BITS_HI ((1150ull << 52) - 1)
_Static_assert(64 / F64V_FIELDS >= 6, "fields of 6 bits and more");

/* Slot shift s such that the binades holding levels have distinct slots
 * (E >> s) mod 16; -1 if none. */
static int find_slot_shift(const int *binades, int nb) {
  for (int s = 0; s < 11; s++) {
    unsigned used = 0;
    bool ok = true;
    for (int j = 0; j < nb && ok; j++) {
      unsigned bit = 1u << ((binades[j] >> s) % F64V_SLOTS);
      ok = !(used & bit);
      used |= bit;
    }
    if (ok) return s;
  }
  return -1;
}

/* Each level's binade, rank among its binade's levels and field; false when
 * a binade holds three or the binades do not fit the slots and fields. */
static bool f64v_place_levels(f64_vec *F) {
  int binades[F64_LEVELS], nb = 0;
  for (int k = 0; k < F64_LEVELS; k++) {
    int B = (int)(F->level_bits[k] >> 52);
    F->level_binade[k] = B;
    F->level_rank[k] = -1;
    F->level_field[k] = 0;
    if (B < (int)(F64V_BITS_LO >> 52) || B > (int)(F64V_BITS_HI >> 52)) continue;
    int rank = 0, others = 0;
    for (int j = 0; j < F64_LEVELS; j++) {
      if (j == k || (int)(F->level_bits[j] >> 52) != B) continue;
      others++;
      /* equal levels: the lower index takes rank 0 */
      rank +=
          F->level_bits[j] < F->level_bits[k] || (F->level_bits[j] == F->level_bits[k] && j < k);
    }
    if (others > 1) return false;
    int field = 0;
    while (field < nb && binades[field] != B)
      field++;
    if (field == nb) binades[nb++] = B;
    if (nb > F64V_FIELDS) return false;
    F->level_rank[k] = rank;
    F->level_field[k] = field;
  }
  F->nfields = nb;
  F->field_bits = nb > 0 && 64 / nb < F64V_FIELD_BITS_MAX ? 64 / nb : F64V_FIELD_BITS_MAX;
  F->slot_shift = find_slot_shift(binades, nb);
  if (F->slot_shift < 0) return false;
  for (int r = 0; r < 2; r++)
    for (int j = 0; j < F64V_SLOTS; j++)
      F->slot_level[r][j] = INT64_MAX;
  for (int k = 0; k < F64_LEVELS; k++) {
    if (F->level_rank[k] < 0) continue;
    int slot = (F->level_binade[k] >> F->slot_shift) % F64V_SLOTS;
    F->slot_level[F->level_rank[k]][slot] = F->level_bits[k];
    F->slot_weight[slot] = 1ull << (F->field_bits * F->level_field[k]);
  }
  return true;
}

/* The state every scan starts from but for sub[] (built once). */
static f64_vec f64v_start;
static bool f64v_start_ok;
static pthread_once_t f64v_start_once = PTHREAD_ONCE_INIT;

static bool f64v_build(f64_vec *F) {
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
  return f64v_place_levels(F);
}

static void f64v_build_start(void) {
  f64v_start_ok = f64v_build(&f64v_start);
}

bool mp_scan_f64v_reset(f64_vec *F) {
  pthread_once(&f64v_start_once, f64v_build_start);
  memcpy(F, &f64v_start, offsetof(f64_vec, sub));
  return f64v_start_ok;
}

bool mp_scan_f64v_init(f64_vec *F) {
  memset(F->sub, 0, sizeof F->sub);
  return mp_scan_f64v_reset(F);
}

/* Sub-histogram bins are uint32 and take two counts per vector. */
#define F64V_FOLD_VECTORS (1ull << 30)

typedef uint64_t u64_alias __attribute__((may_alias));

/* Runs vectors from p + i while i + 8 <= n and returns where it stopped:
 * before a vector holding a non-zero value outside [2^-126, 2^127), or at
 * the end, or after 2^field_bits - 1 vectors (a packed field takes at most
 * one count per vector; the kernel unpacks its fields into wide counts
 * before it returns). No call inside: the accumulators stay in registers. */
__attribute__((target("avx512f"), noinline)) static uint64_t f64_kernel(f64_vec *F, const double *p,
                                                                        uint64_t i, uint64_t n) {
  const __m512i absmask = _mm512_set1_epi64(INT64_MAX);
  const __m512i bits_hi = _mm512_set1_epi64((int64_t)F64V_BITS_HI);
  const __m512i bits_lo = _mm512_set1_epi64((int64_t)F64V_BITS_LO);
  const __m512i minus_one = _mm512_set1_epi64(-1);
  const __m128i slot_shift = _mm_cvtsi32_si128(52 + F->slot_shift);
  const __m512i lev0_lo = _mm512_loadu_si512(F->slot_level[0]);
  const __m512i lev0_hi = _mm512_loadu_si512(F->slot_level[0] + 8);
  const __m512i lev1_lo = _mm512_loadu_si512(F->slot_level[1]);
  const __m512i lev1_hi = _mm512_loadu_si512(F->slot_level[1] + 8);
  const __m512i w_lo = _mm512_loadu_si512(F->slot_weight);
  const __m512i w_hi = _mm512_loadu_si512(F->slot_weight + 8);
  __m512i above0 = _mm512_setzero_si512(), above1 = _mm512_setzero_si512();
  __m512i cz = _mm512_loadu_si512(F->zeros), cn = _mm512_loadu_si512(F->negatives);
  __m512i kmin = _mm512_loadu_si512(F->key_min), kmax = _mm512_loadu_si512(F->key_max);
  __m512i aminm1 = _mm512_loadu_si512(F->abs_min_m1);
  uint32_t *s0 = F->sub[0], *s1 = F->sub[1], *s2 = F->sub[2], *s3 = F->sub[3];
  uint64_t start = i;
  const uint64_t max_values = 8 * ((1ull << F->field_bits) - 1);
  uint64_t end = n - i > max_values ? i + max_values : n;
  for (; i + 8 <= end; i += 8) {
    scan_prefetch(p + i, 1);
    __m512i v = _mm512_loadu_si512(p + i);
    __m512i a = _mm512_and_si512(v, absmask);
    __mmask8 nonzero = _mm512_test_epi64_mask(a, a);
    __mmask8 slow =
        _mm512_cmpgt_epu64_mask(a, bits_hi) | (_mm512_cmplt_epu64_mask(a, bits_lo) & nonzero);
    if (slow) break;
    /* key = v ^ ((v >> 63) & absmask): the total order as signed integers */
    __m512i key = _mm512_ternarylogic_epi64(v, _mm512_srai_epi64(v, 63), absmask, 0x78);
    kmin = _mm512_min_epi64(kmin, key);
    kmax = _mm512_max_epi64(kmax, key);
    aminm1 = _mm512_min_epu64(aminm1, _mm512_add_epi64(a, minus_one));
    cz = _mm512_mask_sub_epi64(cz, (__mmask8)~nonzero, cz, minus_one);
    cn = _mm512_mask_sub_epi64(cn, _mm512_cmplt_epi64_mask(key, minus_one), cn, minus_one);
    /* Above the level(s) of its binade: add the binade's weight (one
     * lookup: both ranks of a binade have its field). */
    __m512i slot = _mm512_srl_epi64(a, slot_shift);
    __m512i w = _mm512_permutex2var_epi64(w_lo, slot, w_hi);
    above0 = _mm512_mask_add_epi64(
        above0, _mm512_cmpgt_epi64_mask(a, _mm512_permutex2var_epi64(lev0_lo, slot, lev0_hi)),
        above0, w);
    above1 = _mm512_mask_add_epi64(
        above1, _mm512_cmpgt_epi64_mask(a, _mm512_permutex2var_epi64(lev1_lo, slot, lev1_hi)),
        above1, w);
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
  /* The fields into the lanes' wide counts: a fixed number of vector steps
   * (a loop over the non-zero fields of each lane mispredicted its exits). */
  const __m512i field_mask = _mm512_set1_epi64((1 << F->field_bits) - 1);
  const __m128i field_shift = _mm_cvtsi32_si128(F->field_bits);
  for (int j = 0; j < F->nfields; j++) {
    _mm512_storeu_si512(F->above[0][j], _mm512_add_epi64(_mm512_loadu_si512(F->above[0][j]),
                                                         _mm512_and_si512(above0, field_mask)));
    _mm512_storeu_si512(F->above[1][j], _mm512_add_epi64(_mm512_loadu_si512(F->above[1][j]),
                                                         _mm512_and_si512(above1, field_mask)));
    above0 = _mm512_srl_epi64(above0, field_shift);
    above1 = _mm512_srl_epi64(above1, field_shift);
  }
  _mm512_storeu_si512(F->zeros, cz);
  _mm512_storeu_si512(F->negatives, cn);
  _mm512_storeu_si512(F->key_min, kmin);
  _mm512_storeu_si512(F->key_max, kmax);
  _mm512_storeu_si512(F->abs_min_m1, aminm1);
  F->vectors += (i - start) / 8;
  return i;
}

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

/* Level k's count of values above it in other binades than those sharing
 * its slot (the kernel counted those in its field): run, the values of the
 * binades above k's, less slot_run's of k's slot. */
static void f64v_note_level(f64_vec *F, int k, uint64_t run, const uint64_t *slot_run) {
  int m = F64V_SLOTS - 1;
  uint64_t same = F->level_rank[k] >= 0 ? slot_run[(F->level_binade[k] >> F->slot_shift) & m] : 0;
  F->ind_lev[k] += run - same;
}

static void f64v_fold(mp_stats *s, f64_vec *F) {
  int lo, hi;
  exponent_range(F, &lo, &hi);
  if (lo < 1) lo = 1;
  if (hi > 2046) hi = 2046;
  /* Binades from the top down, with the sum so far, overall and per slot:
   * when the walk reaches a level's binade, the values above the level in
   * other binades are the sum so far less its slot's (those the kernel
   * counted in the level's field). Levels by binade, highest first. */
  int ord[F64_LEVELS];
  for (int k = 0; k < F64_LEVELS; k++) {
    int j = k;
    for (; j > 0 && F->level_binade[ord[j - 1]] < F->level_binade[k]; j--)
      ord[j] = ord[j - 1];
    ord[j] = k;
  }
  uint64_t run = 0, slot_run[F64V_SLOTS] = {0};
  int j = 0;
  for (int E = hi; E >= lo; E--) {
    for (; j < F64_LEVELS && F->level_binade[ord[j]] >= E; j++)
      f64v_note_level(F, ord[j], run, slot_run);
    uint64_t c = 0;
    for (int b = 0; b < F64V_BANKS; b++) {
      c += F->sub[b][E];
      F->sub[b][E] = 0;
    }
    s->exp_hist[E - 1023 - MP_HIST_MIN] += c;
    run += c;
    slot_run[(E >> F->slot_shift) & (F64V_SLOTS - 1)] += c;
  }
  for (; j < F64_LEVELS; j++) /* levels below every binade seen */
    f64v_note_level(F, ord[j], run, slot_run);
  for (int k = 0; k < F64_LEVELS; k++)
    if (F->level_rank[k] >= 0)
      for (int l = 0; l < 8; l++)
        F->ind_lev[k] += F->above[F->level_rank[k]][F->level_field[k]][l];
  memset(F->above, 0, sizeof F->above);
  for (int b = 0; b < F64V_BANKS; b++)
    F->sub[b][0] = 0; /* zeros: counted by the lanes */
  for (int l = 0; l < 8; l++) {
    F->ind_zeros += F->zeros[l];
    F->ind_negatives += F->negatives[l];
    F->zeros[l] = F->negatives[l] = 0;
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
  mp_scan_f64_add_levels(s, F->values, F->ind_zeros, F->ind_negatives, F->ind_lev);
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
