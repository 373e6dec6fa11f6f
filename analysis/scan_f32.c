/* State of the host scanner's fp32-family vector paths (AVX2, AVX-512, bit
 * planes): thresholds, lane counters and their folds into the record. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
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

/* The thresholds' bits (gt_bits: |x| bits above them pass), the same for
 * every scan: computed once. ok false: a target's implied limit is not
 * implied, no fp32-family path. */
static int32_t f32_th_bits[TH_COUNT];
static bool f32_th_ok;
static pthread_once_t f32_th_once = PTHREAD_ONCE_INIT;

static void f32_th_build(void) {
  f32_th_ok = true;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    /* overflow: |x| >= overflow_at (or >): count |x| > the float just below. */
    double ovf = f->overflow_strict ? f->overflow_at : nextafter(f->overflow_at, 0.0);
    f32_th_bits[th_of[t][0]] = gt_bits(ovf);
    if (th_of[t][1] >= 0) {
      f32_th_bits[th_of[t][1]] = gt_bits(f->flush_at);
      f32_th_bits[th_of[t][2]] = gt_bits(nextafter(f->subnormal_below, 0.0));
    } else if (f->subnormal_below > 0x1p-126) {
      f32_th_ok = false; /* an implied limit is not implied: not this path */
    }
  }
}

void mp_scan_f32_reset(f32_fast *F, int lanes) {
  pthread_once(&f32_th_once, f32_th_build);
  memset(F, 0, offsetof(f32_fast, sub));
  F->lanes = lanes;
  for (int l = 0; l < F32_LANES; l++) {
    F->key_min[l] = INT32_MAX;
    F->key_max[l] = INT32_MIN;
    F->abs_min_m1[l] = UINT32_MAX;
  }
  memcpy(F->th_bits, f32_th_bits, sizeof F->th_bits);
  F->ok = f32_th_ok;
}

void mp_scan_f32_init(f32_fast *F, int lanes) {
  memset(F->sub, 0, sizeof F->sub);
  mp_scan_f32_reset(F, lanes);
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
  /* The rows of the codes seen and of "none", each read four counters at a
   * time over the words those codes fall in (a word's other cells are zero:
   * no value had their codes), a word of zeros skipped. A small scan over
   * many binades counts a few cells of a large corner: reading it cell by
   * cell, four banks 8 KB apart, took microseconds. */
  int rows[WINDOW_CODES + 1], nr = 0, words[WINDOW_CODES / 4 + 1], nw = 0;
  for (int k = first; k <= last; k++)
    rows[nr++] = k;
  rows[nr++] = WINDOW_CODES;
  for (int w = first / 4; first <= last && w <= last / 4; w++)
    words[nw++] = w;
  if (nw == 0 || words[nw - 1] != WINDOW_CODES / 4) words[nw++] = WINDOW_CODES / 4;
  uint64_t row[64] = {0}, col[64] = {0};
  for (int b = 0; b < PAIR_BANKS; b++)
    for (int x = 0; x < nr; x++) {
      pair_count *r = &P->bank[b][rows[x] * 64];
      for (int y = 0; y < nw; y++) {
        pair_count *q = r + 4 * words[y];
        uint64_t v;
        memcpy(&v, q, sizeof v);
        if (!v) continue;
        memset(q, 0, sizeof v);
        for (int k = 0; k < 4; k++) {
          uint32_t c = (uint32_t)(v >> (16 * k)) & 0xffff;
          row[rows[x]] += c;
          col[4 * words[y] + k] += c;
        }
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
  /* Eight binades at a time, lanes in the inner loop (vector adds; cells
   * outside lo .. hi are zero but for 0 and 255, which are cleared below). */
  for (int E0 = lo & ~7; E0 <= hi; E0 += 8) {
    uint64_t c[8] = {0};
    for (int l = 0; l < F32_LANES; l++) {
      for (int k = 0; k < 8; k++)
        c[k] += F->sub[l][E0 + k];
      memset(&F->sub[l][E0], 0, 8 * sizeof F->sub[l][0]);
    }
    for (int k = 0; k < 8; k++)
      if (E0 + k >= lo && E0 + k <= hi) s->exp_hist[E0 + k - 127 - MP_HIST_MIN] += c[k];
  }
  /* Zeros (and what a kernel counted of values it then left to another
   * path) sit at exponents 0 and 255, outside every binade: cleared, so
   * that sub[] is all zero after the fold (mp_scan_f32_reset). */
  for (int l = 0; l < F32_LANES; l++)
    F->sub[l][0] = F->sub[l][255] = 0;
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
