/* The host scanner's fp64 path (scalar): values binned by their biased
 * exponent into two sub-histograms; cast outcomes from the per-binade table,
 * except in the few boundary binades, whose values are classified one by one.
 * Zeros are handled inline; subnormal, inf and NaN inputs take acc_value(). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis/scan_internal.h"

static uint64_t double_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

void mp_scan_f64_levels(int t, uint64_t ret[3]) {
  const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
  ret[0] = double_bits(f->flush_at);
  ret[1] = double_bits(nextafter(f->subnormal_below, 0.0));
  ret[2] = double_bits(f->overflow_strict ? f->overflow_at : nextafter(f->overflow_at, 0.0));
}

void mp_scan_f64_init(f64_fast *F, const src_info *I) {
  memset(F, 0, sizeof *F);
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    mp_scan_f64_levels(t, F->level_bits[t]);
  F->key_min = INT64_MAX;
  F->key_max = INT64_MIN;
  F->abs_min_m1 = UINT64_MAX;
  for (int E = 1; E <= 2046; E++)
    for (int t = 0; t < MP_TARGET_COUNT; t++)
      if (I->outcome[t][E - 1023 - I->lo] == OUTCOME_BOUNDARY) F->boundary[E] = 1;
}

static void f64_fast_fold(mp_stats *s, const src_info *I, f64_fast *F) {
  for (int E = 1; E <= 2046; E++) {
    uint64_t c = (uint64_t)F->sub[0][E] + F->sub[1][E];
    if (!c) continue;
    F->sub[0][E] = F->sub[1][E] = 0;
    int i = E - 1023 - I->lo;
    s->exp_hist[E - 1023 - MP_HIST_MIN] += c;
    if (F->boundary[E]) continue; /* classified one by one into bcasts */
    for (int t = 0; t < MP_TARGET_COUNT; t++)
      s->casts[t][I->outcome[t][i]] += c;
  }
  F->pending = 0;
}

static double key64_to_double(int64_t k) {
  uint64_t u = (uint64_t)(k < 0 ? k ^ INT64_MAX : k);
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

void mp_scan_f64_finish(mp_stats *s, const src_info *I, f64_fast *F) {
  static const mp_cast_outcome of_level[4] = {MP_CAST_UNDERFLOW, MP_CAST_SUBNORMAL, MP_CAST_NORMAL,
                                              MP_CAST_OVERFLOW};
  f64_fast_fold(s, I, F);
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    for (int l = 0; l < 4; l++)
      s->casts[t][of_level[l]] += F->bcasts[t][l];
  if (F->values == 0) return;
  s->count += F->values;
  s->zeros += F->zeros;
  s->negatives += F->negatives;
  mp_scan_f64_note_extremes(s, F->key_min, F->key_max, F->abs_min_m1);
}

void mp_scan_f64_add_levels(mp_stats *s, uint64_t values, uint64_t zeros, uint64_t negatives,
                            const uint64_t ind_lev[3 * MP_TARGET_COUNT]) {
  uint64_t nonzero = values - zeros;
  s->count += values;
  s->zeros += zeros;
  s->negatives += negatives;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const uint64_t *c = &ind_lev[3 * t];
    s->casts[t][MP_CAST_UNDERFLOW] += nonzero - c[0];
    s->casts[t][MP_CAST_SUBNORMAL] += c[0] - c[1];
    s->casts[t][MP_CAST_NORMAL] += c[1] - c[2];
    s->casts[t][MP_CAST_OVERFLOW] += c[2];
  }
}

void mp_scan_f64_note_extremes(mp_stats *s, int64_t key_min, int64_t key_max, uint64_t abs_min_m1) {
  double mn = key64_to_double(key_min), mx = key64_to_double(key_max);
  if (isnan(s->min) || total_less(mn, s->min)) s->min = mn;
  if (isnan(s->max) || total_less(s->max, mx)) s->max = mx;
  double amax = fabs(mn) > fabs(mx) ? fabs(mn) : fabs(mx);
  if (isnan(s->absmax) || amax > s->absmax) s->absmax = amax;
  if (abs_min_m1 != UINT64_MAX) {
    uint64_t u = abs_min_m1 + 1;
    double amin;
    memcpy(&amin, &u, sizeof amin);
    if (amin < s->min_abs_nonzero) s->min_abs_nonzero = amin;
  }
}

/* Boundary values of a block are first collected (a branch-free append),
 * then classified in a second, short loop: an unpredictable branch per value
 * would cost more than the work. */
#define F64_BLOCK 1024

static void f64_classify_boundary(f64_fast *F, const double *p, const uint16_t *idx, unsigned nb) {
  for (unsigned j = 0; j < nb; j++) {
    uint64_t a = double_bits(p[idx[j]]) & 0x7fffffffffffffffull;
    for (int t = 0; t < MP_TARGET_COUNT; t++)
      F->bcasts[t][(a > F->level_bits[t][0]) + (a > F->level_bits[t][1]) +
                   (a > F->level_bits[t][2])]++;
  }
}

void mp_scan_f64_run(mp_stats *s, const src_info *I, f64_fast *F, const double *p, uint64_t n) {
  const uint64_t absmask = 0x7fffffffffffffffull;
  int64_t kmin = F->key_min, kmax = F->key_max;
  uint64_t aminm1 = F->abs_min_m1, values = 0, zeros = 0, negatives = 0;
  uint32_t *sub0 = F->sub[0], *sub1 = F->sub[1];
  uint16_t idx[F64_BLOCK];
  for (uint64_t start = 0; start < n; start += F64_BLOCK) {
    unsigned len = n - start < F64_BLOCK ? (unsigned)(n - start) : F64_BLOCK, nb = 0;
    const double *q = p + start;
    for (unsigned i = 0; i < len; i++) {
      uint64_t u;
      memcpy(&u, q + i, sizeof u);
      uint64_t a = u & absmask;
      unsigned E = (unsigned)(a >> 52);
      int64_t key = (int64_t)(u ^ ((uint64_t)((int64_t)u >> 63) & absmask));
      if (E - 1u >= 2046u) { /* zero, subnormal, inf or NaN */
        if (a != 0) {
          acc_value(s, I, q[i], 1);
          continue;
        }
        zeros++;
      } else {
        (i & 1 ? sub1 : sub0)[E]++;
        idx[nb] = (uint16_t)i;
        nb += F->boundary[E];
        negatives += u >> 63;
        aminm1 = a - 1 < aminm1 ? a - 1 : aminm1;
      }
      kmin = key < kmin ? key : kmin;
      kmax = key > kmax ? key : kmax;
      values++;
    }
    f64_classify_boundary(F, q, idx, nb);
    F->pending += len;
    if (F->pending >= F64_FOLD_EVERY) f64_fast_fold(s, I, F);
  }
  F->key_min = kmin;
  F->key_max = kmax;
  F->abs_min_m1 = aminm1;
  F->values += values;
  F->zeros += zeros;
  F->negatives += negatives;
}
