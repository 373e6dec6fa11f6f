/* Independent references for the analysis tests.
 *
 * Written without the thresholds of analysis/formats.c: a value is rounded to
 * the target's precision by scaling to its quantum and calling rint() (RNE in
 * the default rounding mode), and the rounded value is then compared with the
 * format's largest finite value and min normal. */
#ifndef MPPROF_TESTS_ANALYSIS_REF_H
#define MPPROF_TESTS_ANALYSIS_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/scan.h"
#include "analysis/stats.h"

typedef struct ref_format {
  int man_bits;
  int emin; /* min normal 2^emin */
  double max_finite;
} ref_format;

static const ref_format ref_formats[MP_TARGET_COUNT] = {
    [MP_TGT_FP16] = {10, -14, 65504.0},
    [MP_TGT_BF16] = {7, -126, 0x1.fep+127},
    [MP_TGT_FP8_E4M3] = {3, -6, 448.0},
    [MP_TGT_FP8_E5M2] = {2, -14, 57344.0},
};

/* RNE of |x| to the target's precision, exponent unbounded above. */
static inline double ref_round(double x, mp_target t) {
  const ref_format *f = &ref_formats[t];
  double a = fabs(x);
  int e = ilogb(a);
  if (e < f->emin) e = f->emin;
  int qe = e - f->man_bits;
  return ldexp(rint(ldexp(a, -qe)), qe);
}

static inline mp_cast_outcome ref_classify(double x, mp_target t) {
  double r = ref_round(x, t);
  if (r > ref_formats[t].max_finite) return MP_CAST_OVERFLOW;
  if (r == 0) return MP_CAST_UNDERFLOW;
  if (r < ldexp(1.0, ref_formats[t].emin)) return MP_CAST_SUBNORMAL;
  return MP_CAST_NORMAL;
}

/* splitmix64: fixed-seed random numbers, identical on every machine. */
static inline uint64_t ref_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Two records equal bit for bit, field by field (padding ignored). */
static inline int ref_stats_equal(const mp_stats *a, const mp_stats *b) {
  return a->dtype == b->dtype && a->hist_lo == b->hist_lo && a->hist_hi == b->hist_hi &&
         a->count == b->count && a->zeros == b->zeros && a->nans == b->nans &&
         a->pos_infs == b->pos_infs && a->neg_infs == b->neg_infs && a->negatives == b->negatives &&
         memcmp(&a->min, &b->min, sizeof a->min) == 0 &&
         memcmp(&a->max, &b->max, sizeof a->max) == 0 &&
         memcmp(&a->absmax, &b->absmax, sizeof a->absmax) == 0 &&
         memcmp(&a->min_abs_nonzero, &b->min_abs_nonzero, sizeof a->min_abs_nonzero) == 0 &&
         memcmp(a->casts, b->casts, sizeof a->casts) == 0 &&
         memcmp(a->exp_hist, b->exp_hist, sizeof a->exp_hist) == 0;
}

/* The fast scan paths held against MP_SCAN_PORTABLE, with their names. */
static const struct {
  mp_scan_impl impl;
  const char *name;
} ref_fast_paths[] = {{MP_SCAN_AUTO, "auto"},
                      {MP_SCAN_AVX512_NO_PLANES, "avx512 without planes"},
                      {MP_SCAN_AVX2, "avx2"}};

/* v scanned by the portable path into want and by each fast path into got:
 * the index in ref_fast_paths of the first whose record differs (got holds
 * it), -1 when none does, -2 when a scan failed. */
static inline int ref_fast_path_differs(const mp_view *v, mp_stats *want, mp_stats *got) {
  mp_stats_init(want, v->dtype);
  if (mp_scan_with(want, v, MP_SCAN_PORTABLE)) return -2;
  for (int f = 0; f < (int)(sizeof ref_fast_paths / sizeof ref_fast_paths[0]); f++) {
    mp_stats_init(got, v->dtype);
    if (mp_scan_with(got, v, ref_fast_paths[f].impl)) return -2;
    if (!ref_stats_equal(want, got)) return f;
  }
  return -1;
}

#endif
