/* State of the host scanner's fp32-family vector paths (AVX2, AVX-512, bit
 * planes): thresholds, lane counters and their folds into the record. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis/scan_internal.h"

#ifdef MP_HAVE_X86
/* Per target: index of its overflow, flush and subnormal thresholds (-1: implied). */
static const int th_of[MP_TARGET_COUNT][3] = {
    [MP_TGT_FP16] = {TH_FP16_OVF, TH_FP16_FLUSH, TH_FP16_SUB},
    [MP_TGT_BF16] = {TH_BF16_OVF, -1, -1},
    [MP_TGT_FP8_E4M3] = {TH_E4M3_OVF, TH_E4M3_FLUSH, TH_E4M3_SUB},
    [MP_TGT_FP8_E5M2] = {TH_E5M2_OVF, TH_E5M2_FLUSH, TH_E5M2_SUB},
};

/* Bits b with "|x| > limit" <=> bits(|x|) > b for every fp32 |x|: the largest
 * float <= limit (limits are exact floats here, but do not rely on it). */
static int32_t gt_bits(double limit) {
  float f = (float)limit;
  if ((double)f > limit) f = nextafterf(f, 0.0f);
  return (int32_t)float_bits(f);
}

void mp_scan_f32_init(f32_fast *F, int lanes) {
  memset(F, 0, sizeof *F);
  F->lanes = lanes;
  for (int l = 0; l < F32_LANES; l++) {
    F->key_min[l] = INT32_MAX;
    F->key_max[l] = INT32_MIN;
    F->abs_min_m1[l] = UINT32_MAX;
  }
  F->ok = true;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    /* overflow: |x| >= overflow_at (or >): count |x| > the float just below. */
    double ovf = f->overflow_strict ? f->overflow_at : nextafter(f->overflow_at, 0.0);
    F->th_bits[th_of[t][0]] = gt_bits(ovf);
    if (th_of[t][1] >= 0) {
      F->th_bits[th_of[t][1]] = gt_bits(f->flush_at);
      F->th_bits[th_of[t][2]] = gt_bits(nextafter(f->subnormal_below, 0.0));
    } else if (f->subnormal_below > 0x1p-126) {
      F->ok = false; /* an implied limit is not implied: not this path */
    }
  }
}

/* Biased exponent of the largest |x| the lanes' keys have seen (0 if none). */
int mp_scan_top_exponent(const f32_fast *F) {
  uint32_t amax = 0;
  for (int l = 0; l < F32_LANES; l++) {
    int32_t k0 = F->key_min[l], k1 = F->key_max[l];
    uint32_t a0 = k0 < 0 ? (uint32_t)~k0 & 0x7fffffff : (k0 == INT32_MAX ? 0 : (uint32_t)k0);
    uint32_t a1 = k1 < 0 ? (k1 == INT32_MIN ? 0 : (uint32_t)~k1 & 0x7fffffff) : (uint32_t)k1;
    if (a0 > amax) amax = a0;
    if (a1 > amax) amax = a1;
  }
  return (int)(amax >> 23);
}

/* Biased exponent of the smallest non-zero |x| the lanes have seen (255 if none). */
static int bottom_exponent(const f32_fast *F) {
  uint32_t aminm1 = UINT32_MAX;
  for (int l = 0; l < F32_LANES; l++)
    if (F->abs_min_m1[l] < aminm1) aminm1 = F->abs_min_m1[l];
  return aminm1 == UINT32_MAX ? 255 : (int)((aminm1 + 1) >> 23);
}

/* Bank counts into exponent counts: a pair (lo, hi) counts once for each of
 * its two codes. Only codes of exponents the lanes have seen can be non-zero
 * (plus "none"), so small scans fold a small corner of the banks. */
void mp_scan_pair_fold(f32_fast *F) {
  pair_state *P = F->pairs;
  if (P->pending == 0) return;
  int first = bottom_exponent(F) - P->base, last = mp_scan_top_exponent(F) - P->base;
  if (first < 0) first = 0;
  if (last > WINDOW_CODES - 1) last = WINDOW_CODES - 1;
  int codes[64], nc = 0;
  for (int k = first; k <= last; k++)
    codes[nc++] = k;
  codes[nc++] = WINDOW_CODES;
  uint64_t row[64] = {0}, col[64] = {0};
  for (int x = 0; x < nc; x++) {
    int hi = codes[x];
    for (int y = 0; y < nc; y++) {
      int lo = codes[y];
      uint32_t c = 0;
      for (int b = 0; b < PAIR_BANKS; b++) {
        c += P->bank[b][hi * 64 + lo];
        P->bank[b][hi * 64 + lo] = 0;
      }
      row[hi] += c;
      col[lo] += c;
    }
  }
  for (int k = 0; k < WINDOW_CODES; k++)
    P->exp[P->base + k] += row[k] + col[k];
  P->pending = 0;
}

bool mp_scan_pair_rebase(f32_fast *F, int lo, int top) {
  pair_state *P = F->pairs;
  int base = top - (WINDOW_CODES - 2); /* one binade of headroom above the top */
  if (base > lo) base = lo;
  if (base < 1) base = 1; /* zeros (exponent 0) must stay outside */
  if (base > WINDOW_BASE_MAX) base = WINDOW_BASE_MAX;
  if (lo < base || top > base + WINDOW_CODES - 1) return false;
  if (base == P->base) return true;
  mp_scan_pair_fold(F);
  P->base = base;
  return true;
}

void mp_scan_f32_fold(mp_stats *s, f32_fast *F) {
  /* Exponent counts are only where the lanes' extremes say values were:
   * small scans fold a few binades, not all 254. */
  int lo = bottom_exponent(F), hi = mp_scan_top_exponent(F);
  if (lo < 1) lo = 1;
  if (hi > 254) hi = 254;
  if (F->pairs) {
    mp_scan_pair_fold(F);
    for (int E = lo; E <= hi; E++) {
      s->exp_hist[E - 127 - MP_HIST_MIN] += F->pairs->exp[E];
      F->pairs->exp[E] = 0;
    }
  }
  for (int E = lo; E <= hi; E++) {
    uint64_t c = 0;
    for (int l = 0; l < F32_LANES; l++) {
      c += F->sub[l][E];
      F->sub[l][E] = 0;
    }
    s->exp_hist[E - 127 - MP_HIST_MIN] += c;
  }
  for (int k = 0; k < IND_COUNT; k++)
    for (int l = 0; l < F32_LANES; l++) {
      F->ind[k] += F->ind_lanes[k][l];
      F->ind_lanes[k][l] = 0;
    }
  F->values += F->vectors * (uint64_t)F->lanes;
  F->vectors = 0;
}

void mp_scan_f32_finish(mp_stats *s, f32_fast *F) {
  mp_scan_f32_fold(s, F);
  if (F->values == 0) return;
  uint64_t zeros = F->ind[IND_ZEROS], nonzero = F->values - zeros;
  s->count += F->values;
  s->zeros += zeros;
  s->negatives += F->ind[IND_NEGATIVES];
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t over = F->ind[th_of[t][0]];
    uint64_t above_flush = th_of[t][1] >= 0 ? F->ind[th_of[t][1]] : nonzero;
    uint64_t normal_or_over = th_of[t][2] >= 0 ? F->ind[th_of[t][2]] : nonzero;
    s->casts[t][MP_CAST_OVERFLOW] += over;
    s->casts[t][MP_CAST_UNDERFLOW] += nonzero - above_flush;
    s->casts[t][MP_CAST_SUBNORMAL] += above_flush - normal_or_over;
    s->casts[t][MP_CAST_NORMAL] += normal_or_over - over;
  }
  /* Keys: negative values have their magnitude bits flipped; -0 is key -1,
   * below +0's key 0, which is the total order the record uses. */
  int32_t kmin = INT32_MAX, kmax = INT32_MIN;
  uint32_t aminm1 = UINT32_MAX;
  for (int l = 0; l < F32_LANES; l++) {
    if (F->key_min[l] < kmin) kmin = F->key_min[l];
    if (F->key_max[l] > kmax) kmax = F->key_max[l];
    if (F->abs_min_m1[l] < aminm1) aminm1 = F->abs_min_m1[l];
  }
  double mn = bits_to_float((uint32_t)(kmin < 0 ? kmin ^ 0x7fffffff : kmin));
  double mx = bits_to_float((uint32_t)(kmax < 0 ? kmax ^ 0x7fffffff : kmax));
  if (isnan(s->min) || total_less(mn, s->min)) s->min = mn;
  if (isnan(s->max) || total_less(s->max, mx)) s->max = mx;
  double amax = fabs(mn) > fabs(mx) ? fabs(mn) : fabs(mx); /* the extremes hold |x|'s max */
  if (isnan(s->absmax) || amax > s->absmax) s->absmax = amax;
  if (aminm1 != UINT32_MAX) {
    double amin = bits_to_float(aminm1 + 1);
    if (amin < s->min_abs_nonzero) s->min_abs_nonzero = amin;
  }
}
#endif
