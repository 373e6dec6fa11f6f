/* Advice: scaled cast counts against brute force on the values themselves,
 * loss-scale window edges, the estimate flag, fp8 scales and the
 * recommendation chain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/advice.h"
#include "analysis/convert.h"
#include "analysis/scan.h"
#include "ref.h"

static void record_of(mp_stats *s, const float *v, uint64_t n) {
  mp_stats_init(s, MP_FP32);
  assert_int_equal(mp_scan_contiguous(s, v, n), 0);
}

/* True outcome counts of v * 2^k. */
static void brute_force(const float *v, uint64_t n, mp_target t, int k,
                        uint64_t out[MP_CAST_OUTCOMES]) {
  memset(out, 0, MP_CAST_OUTCOMES * sizeof out[0]);
  for (uint64_t i = 0; i < n; i++)
    if (v[i] != 0 && isfinite(v[i])) out[ref_classify(ldexp(v[i], k), t)]++;
}

static bool fits_fp16(const uint64_t c[MP_CAST_OUTCOMES], uint64_t n) {
  return c[MP_CAST_OVERFLOW] == 0 && (double)c[MP_CAST_UNDERFLOW] / (double)n <= 0.001;
}

/* For several value sets: bounds contain the truth at every k, are exact
 * without `estimate`, and the window is the true one (or inside it when
 * flagged as an estimate). */
static void scaled_casts_bound_the_truth_and_window_matches_brute_force(void **state) {
  (void)state;
  enum { N = 4000 };
  float *v = malloc(N * sizeof *v);
  assert_non_null(v);
  mp_stats s;
  for (uint64_t seed = 1; seed <= 12; seed++) {
    uint64_t rng = seed;
    int lo_exp = (int)(ref_rand(&rng) % 60) - 50, span = 1 + (int)(ref_rand(&rng) % 30);
    for (int i = 0; i < N; i++) {
      uint64_t r = ref_rand(&rng);
      double m = seed % 3 == 0 ? 1.0 + (double)(r % 4) / 4 : 1.0 + (double)(r >> 40) / 16777216.0;
      v[i] = (float)ldexp((r & 1) ? -m : m, lo_exp + (int)((r >> 8) % (uint64_t)span));
    }
    record_of(&s, v, N);
    int true_lo = 1, true_hi = 0;
    for (int k = -32; k <= 32; k++) {
      for (int t = 0; t < MP_TARGET_COUNT; t++) {
        uint64_t truth[MP_CAST_OUTCOMES];
        mp_scaled_casts sc;
        brute_force(v, N, (mp_target)t, k, truth);
        mp_scaled_casts_compute(&s, (mp_target)t, k, &sc);
        for (int o = 0; o < MP_CAST_OUTCOMES; o++) {
          assert_true(sc.lo[o] <= truth[o] && truth[o] <= sc.hi[o]);
          if (!sc.estimate) assert_int_equal(sc.lo[o], sc.hi[o]);
        }
        if (t == MP_TGT_FP16 && fits_fp16(truth, N)) {
          if (true_lo > true_hi) true_lo = k;
          true_hi = k;
        }
      }
    }
    mp_advice a;
    mp_advise(&s, NULL, &a);
    if (!a.window_estimate) {
      assert_int_equal(a.has_window, true_lo <= true_hi);
      if (a.has_window) {
        assert_int_equal(a.window_lo, true_lo);
        assert_int_equal(a.window_hi, true_hi);
      }
    } else if (a.has_window) {
      assert_true(true_lo <= a.window_lo && a.window_hi <= true_hi);
    }
  }
  free(v);
}

/* The window as fp16_window defines it, one mp_scaled_casts_compute per
 * scale: mp_advise finds where each binade's ends change outcome instead, and
 * must give the same window and estimate flag to the scale. */
static void window_per_scale(const mp_stats *s, const mp_advice_params *p, mp_advice *w) {
  uint64_t n = mp_stats_nonzero_finite(s);
  w->has_window = w->window_estimate = false;
  w->window_lo = w->window_hi = 0;
  for (int k = p->scale_log2_min; k <= p->scale_log2_max; k++) {
    mp_scaled_casts sc;
    mp_scaled_casts_compute(s, MP_TGT_FP16, k, &sc);
    double hi_u = n ? (double)sc.hi[MP_CAST_UNDERFLOW] / (double)n : 0.0;
    double lo_u = n ? (double)sc.lo[MP_CAST_UNDERFLOW] / (double)n : 0.0;
    bool surely = sc.hi[MP_CAST_OVERFLOW] == 0 && hi_u <= p->underflow_max;
    bool maybe = sc.lo[MP_CAST_OVERFLOW] == 0 && lo_u <= p->underflow_max;
    if (surely != maybe) w->window_estimate = true;
    if (!surely) continue;
    if (!w->has_window) w->window_lo = k;
    w->window_hi = k;
    w->has_window = true;
  }
}

static void window_equals_the_per_scale_computation(void **state) {
  (void)state;
  enum { N = 3000 };
  double *v = malloc(N * sizeof *v);
  assert_non_null(v);
  mp_stats *s = malloc(sizeof *s);
  const mp_dtype ds[] = {MP_FP32, MP_FP16, MP_BF16, MP_FP64, MP_FP8_E4M3};
  int checked = 0, estimates = 0, windows = 0;
  for (uint64_t seed = 1; seed <= 400; seed++) {
    uint64_t rng = seed * 7919;
    mp_dtype d = ds[seed % 5];
    int lo_exp = (int)(ref_rand(&rng) % 90) - 70, span = 1 + (int)(ref_rand(&rng) % 40);
    mp_stats_init(s, d);
    for (int i = 0; i < N; i++) {
      uint64_t r = ref_rand(&rng);
      double m = seed % 3 == 0 ? 1.0 + (double)(r % 4) / 4 : 1.0 + (double)(r >> 40) / 16777216.0;
      v[i] =
          (r & 7) == 0 ? 0.0 : ldexp((r & 1) ? -m : m, lo_exp + (int)((r >> 8) % (uint64_t)span));
      unsigned char cell[8]; /* the value as stored in d */
      mp_store(d, cell, 0, v[i]);
      mp_stats_add(s, mp_load(d, cell, 0));
    }
    mp_advice_params p;
    mp_advice_params_default(&p);
    if (seed % 7 == 0) p.scale_log2_min = -60, p.scale_log2_max = 70;
    if (seed % 11 == 0) p.underflow_max = 0.05;
    mp_advice a, w;
    mp_advise(s, &p, &a);
    window_per_scale(s, &p, &w);
    assert_int_equal(a.has_window, w.has_window);
    assert_int_equal(a.window_lo, w.window_lo);
    assert_int_equal(a.window_hi, w.window_hi);
    assert_int_equal(a.window_estimate, w.window_estimate);
    checked++;
    estimates += w.window_estimate;
    windows += w.has_window;
  }
  /* the records reach both kinds of answer */
  assert_true(estimates > 20 && estimates < checked - 20);
  assert_true(windows > 20 && windows < checked - 20);
  free(s);
  free(v);
}

static void scale_one_uses_the_exact_record_counts(void **state) {
  (void)state;
  float v[3] = {0x1p-25f, 0x1.8p-25f, 65520.0f};
  mp_stats s;
  record_of(&s, v, 3);
  mp_scaled_casts sc;
  mp_scaled_casts_compute(&s, MP_TGT_FP16, 0, &sc);
  assert_false(sc.estimate);
  assert_int_equal(sc.lo[MP_CAST_UNDERFLOW], 1);
  assert_int_equal(sc.lo[MP_CAST_SUBNORMAL], 1);
  assert_int_equal(sc.lo[MP_CAST_OVERFLOW], 1);
}

/* The fp16 subnormal share (finding fp16_subnormal, inspect's precision
 * line): out of the finite non-zero values, zeros left out; at scale 1 the
 * record's exact count, the same from the casts alone; a scale that lifts
 * the values above 2^-14 leaves none. */
static void fp16_subnormal_share_counts_finite_non_zero_values(void **state) {
  (void)state;
  float v[5] = {0x1p-20f, 0x1.8p-18f, 0.0f, 1.0f, 0.0f};
  mp_stats s;
  record_of(&s, v, 5);
  assert_true(mp_fp16_subnormal_share(&s, 0) == 2.0 / 3.0);
  assert_true(mp_fp16_subnormal_share_unscaled(s.casts) == 2.0 / 3.0);
  assert_true(mp_fp16_subnormal_share(&s, 6) == 0.0);
  assert_true(mp_fp16_subnormal_share(&s, 5) == 1.0 / 3.0); /* 2^-15 stays subnormal */
}

/* Gradients in 2^-30 .. 2^-28: flushed at scale 1; 2^5 lifts the smallest
 * (1.5 * 2^-30, which min_abs_nonzero pins exactly) above 2^-25; 2^44 is the
 * last scale at which absmax (1.5 * 2^-29) stays below 65520 (searched up to
 * 2^64 here; the default search stops at 2^32). */
static void loss_scale_window_edges_come_from_min_abs_and_absmax(void **state) {
  (void)state;
  float v[200];
  for (int i = 0; i < 200; i++)
    v[i] = i % 2 ? 0x1.8p-30f : 0x1.8p-29f;
  mp_stats s;
  record_of(&s, v, 200);
  mp_advice a;
  mp_advice_params p;
  mp_advice_params_default(&p);
  p.scale_log2_max = 64;
  mp_advise(&s, &p, &a);
  assert_int_equal(a.fp16, MP_FP16_LOSS_SCALE);
  assert_true(a.fp16_underflow_fraction == 1.0);
  assert_true(a.has_window);
  assert_int_equal(a.window_lo, 5);
  assert_int_equal(a.window_hi, 44);
  assert_false(a.window_estimate);
  assert_int_equal(a.recommended, MP_REC_FP16_LOSS_SCALE);
  assert_string_equal(mp_fp16_verdict_name(a.fp16), "loss_scale");
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.window_hi, 32);
  assert_int_equal(a.beyond_hi, 12); /* the true edge 44 */
  assert_int_equal(a.beyond_lo, 0);
}

/* One value in 2^-31 and many spread over 2^-30's binade: at 2^5 the big
 * binade lands on [2^-25, 2^-24), where only an exact 2^-25 flushes; the
 * histogram cannot tell, so k = 5 is uncertain and the window starts at 6. */
static void window_is_an_estimate_when_a_boundary_binade_decides(void **state) {
  (void)state;
  float v[2001];
  v[0] = 0x1.8p-31f;
  for (int i = 1; i < 2001; i++)
    v[i] = i % 2 ? 0x1.4p-30f : 0x1.cp-30f;
  mp_stats s;
  record_of(&s, v, 2001);
  mp_scaled_casts sc;
  mp_scaled_casts_compute(&s, MP_TGT_FP16, 5, &sc);
  assert_true(sc.estimate);
  assert_int_equal(sc.lo[MP_CAST_UNDERFLOW], 1);
  assert_int_equal(sc.hi[MP_CAST_UNDERFLOW], 2001);
  assert_int_equal(sc.lo[MP_CAST_SUBNORMAL], 0);
  assert_int_equal(sc.hi[MP_CAST_SUBNORMAL], 2000);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_true(a.has_window);
  assert_int_equal(a.window_lo, 6);
  assert_true(a.window_estimate);
}

static void well_behaved_activations_are_fp16_safe(void **state) {
  (void)state;
  float v[1000];
  uint64_t rng = 3;
  for (int i = 0; i < 1000; i++)
    v[i] =
        (float)ldexp(1.0 + (double)(ref_rand(&rng) % 1000) / 1000, (int)(ref_rand(&rng) % 20) - 10);
  mp_stats s;
  record_of(&s, v, 1000);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp16, MP_FP16_SAFE);
  assert_true(a.has_window && a.window_lo <= 0 && a.window_hi >= 0);
  assert_true(a.bf16_ok);
  assert_int_equal(a.recommended, MP_REC_FP16);
  assert_string_equal(mp_recommendation_name(a.recommended), "fp16");
  assert_string_equal(mp_fp16_verdict_name(a.fp16), "safe");
}

/* 2^100 and 2^-100 together: no single fp16 scale holds both, bf16 does. */
static void too_wide_for_fp16_recommends_bf16(void **state) {
  (void)state;
  float v[4] = {0x1p100f, 0x1p-100f, -1.0f, 0x1p50f};
  mp_stats s;
  record_of(&s, v, 4);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp16, MP_FP16_UNSAFE);
  assert_false(a.has_window);
  assert_true(a.bf16_ok);
  assert_int_equal(a.recommended, MP_REC_BF16);
}

/* An e4m3 output clamped to 448 by its op: 448 fits fp16 and fp8 as a
 * value, but the true values are unknown and beyond it: overflow. */
static void saturated_fp8_values_count_as_overflow(void **state) {
  (void)state;
  uint8_t d[8];
  memset(d, 0x7e, sizeof d); /* e4m3 448 */
  d[1] = 0xfe;               /* -448 */
  d[2] = 0x58;               /* 16: not at the max */
  mp_view v = {.dtype = MP_FP8_E4M3, .data = d, .rows = 8, .cols = 1, .ld = 8};
  assert_int_equal(mp_count_saturated(&v), 7);
  mp_stats s;
  mp_stats_init(&s, MP_FP8_E4M3);
  assert_int_equal(mp_scan(&s, &v), 0);
  mp_advice a;
  mp_advise(&s, NULL, &a); /* stored values only: they look harmless */
  assert_true(a.fp8_e4m3.fits);
  assert_int_equal(a.recommended, MP_REC_FP16);
  s.saturated = mp_count_saturated(&v);
  mp_advise(&s, NULL, &a);
  assert_false(a.fp8_e4m3.fits);
  assert_false(a.fp8_e5m2.fits);
  assert_int_equal(a.fp16, MP_FP16_UNSAFE);
  assert_false(a.has_window);
  assert_true(a.fp16_overflow_fraction == 7.0 / 8);
  assert_int_equal(a.recommended, MP_REC_BF16);
}

static void only_fp8_views_have_saturated_values(void **state) {
  (void)state;
  uint8_t e5[3] = {0x7b, 0xfb, 0x7c}; /* 57344, -57344, +inf */
  mp_view v = {.dtype = MP_FP8_E5M2, .data = e5, .rows = 3, .cols = 1, .ld = 3};
  assert_int_equal(mp_count_saturated(&v), 2);
  float f[2] = {448, 57344};
  mp_view w = {.dtype = MP_FP32, .data = f, .rows = 2, .cols = 1, .ld = 2};
  assert_int_equal(mp_count_saturated(&w), 0);
}

static void values_below_bf16_range_keep_fp32(void **state) {
  (void)state;
  float v[4] = {0x1p120f, 0x1p-140f, 0x1p-140f, 1.0f};
  mp_stats s;
  record_of(&s, v, 4);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_false(a.bf16_ok);
  assert_false(a.has_window);
  assert_int_equal(a.recommended, MP_REC_FP32);
  assert_string_equal(mp_recommendation_name(a.recommended), "fp32");
}

/* The advice on n fp64 values: `body` of 1.0, `low` of 2^-140 (flushed by
 * bf16 and fp16, kept by fp32: the advice is fp32) and the `tail` values. */
static void fp64_advice(const double *tail, int n_tail, mp_advice *a) {
  enum { N = 1000 };
  double *v = calloc(N, sizeof *v);
  assert_non_null(v);
  for (int i = 0; i < N; i++)
    v[i] = i < n_tail ? tail[i] : i < n_tail + 10 ? 0x1p-140 : 1.0;
  mp_stats s;
  mp_stats_init(&s, MP_FP64);
  assert_int_equal(mp_scan_contiguous(&s, v, N), 0);
  mp_advise(&s, NULL, a);
  free(v);
}

/* fp32 rounds |x| <= 2^-150 to zero (2^-150 itself a tie to even zero,
 * 1.5 * 2^-150 up to 2^-149): an fp64 tensor with more than underflow_max
 * (0.001) of its values there keeps fp64, as one beyond fp32's range does. */
static void fp64_values_that_fp32_flushes_keep_fp64(void **state) {
  (void)state;
  mp_advice a;
  fp64_advice(NULL, 0, &a);
  assert_int_equal(a.recommended, MP_REC_FP32);
  assert_string_equal(mp_advice_recommended_name(&a), "fp32");
  assert_true(a.fp32_flush_fraction == 0);
  const double one_below[1] = {0x1p-151};
  fp64_advice(one_below, 1, &a); /* 0.001: at the limit, not over it */
  assert_true(a.fp32_flush_fraction == 0.001);
  assert_string_equal(mp_advice_recommended_name(&a), "fp32");
  const double two_below[2] = {0x1p-151, -0x1p-1000};
  fp64_advice(two_below, 2, &a);
  assert_true(a.fp32_flush_fraction == 0.002);
  assert_true(a.fp32_flush);
  assert_string_equal(mp_advice_recommended_name(&a), "fp64");
  const double round_up[3] = {0x1.8p-150, 0x1.8p-150, 0x1.8p-150}; /* to 2^-149: kept */
  fp64_advice(round_up, 3, &a);
  assert_true(a.fp32_flush_fraction == 0);
  assert_string_equal(mp_advice_recommended_name(&a), "fp32");
  /* two ties at 2^-150: the smallest value proves one; the other is not told
   * apart from the rest of its binade, which rounds up (a lower bound) */
  const double ties[2] = {0x1p-150, -0x1p-150};
  fp64_advice(ties, 2, &a);
  assert_true(a.fp32_flush_fraction == 0.001);
  const double ties_below[3] = {0x1p-150, 0x1p-150, 0x1p-151}; /* 2^-151 proves none of them */
  fp64_advice(ties_below, 3, &a);
  assert_true(a.fp32_flush_fraction == 0.001);
  const double ties_above[3] = {0x1p-150, 0x1p-150, 0x1.8p-150};
  fp64_advice(ties_above, 3, &a);
  assert_true(a.fp32_flush_fraction == 0.001);
  /* a tensor of 2^-150 alone: every value a tie to zero */
  double tiny[4] = {0x1p-150, -0x1p-150, 0x1p-150, 0x1p-150};
  mp_stats s;
  mp_stats_init(&s, MP_FP64);
  assert_int_equal(mp_scan_contiguous(&s, tiny, 4), 0);
  mp_advise(&s, NULL, &a);
  assert_true(a.fp32_flush_fraction == 1);
  assert_string_equal(mp_advice_recommended_name(&a), "fp64");
  /* fp32 sources never say fp64 */
  float f[4] = {0x1p-149f, 1.0f, 1.0f, 1.0f};
  record_of(&s, f, 4);
  mp_advise(&s, NULL, &a);
  assert_true(a.fp32_flush_fraction == 0);
  assert_string_not_equal(mp_advice_recommended_name(&a), "fp64");
}

/* absmax 3: e4m3 takes 3 * 2^7 = 384 (2^8 would give 768 > 448); e5m2 takes
 * 3 * 2^14 = 49152 (2^15 gives 98304 > 57344). */
static void fp8_scale_is_the_largest_power_of_two_within_the_max(void **state) {
  (void)state;
  float v[100];
  for (int i = 0; i < 100; i++)
    v[i] = (float)(i + 1) * 0.03f;
  mp_stats s;
  record_of(&s, v, 100);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp8_e4m3.scale_log2, 7);
  assert_int_equal(a.fp8_e5m2.scale_log2, 14);
  assert_true(a.fp8_e4m3.fits && a.fp8_e5m2.fits);
  assert_true(a.fp8_e4m3.underflow_fraction == 0.0);
  assert_int_equal(a.recommended, MP_REC_FP16);
  mp_advice_params p;
  mp_advice_params_default(&p);
  p.prefer_fp8 = true;
  mp_advise(&s, &p, &a);
  assert_int_equal(a.recommended, MP_REC_FP8_E4M3);
}

/* The scale is amax scaling's: absmax * 2^s at most the format's largest
 * finite value, as Transformer Engine's current scaling (fp8_max / amax, and
 * its power-of-two form) and the shadow's fp8_*_current candidates take it.
 * absmax 460 rounds to e4m3's 448 at 2^0 without overflowing, but no recipe
 * scales by more than 448 / 460: at 2^0 the 5% at 1.01 * 2^-10 stay, at
 * 2^-1 (and at 448 / 460) they flush, which fp8_underflow_max does not allow.
 * e5m2 likewise: 60000 rounds to 57344 at 2^0, the scale is 2^-1. */
static void fp8_scale_keeps_absmax_at_most_the_format_max(void **state) {
  (void)state;
  float v[1000];
  for (int i = 0; i < 1000; i++)
    v[i] = i == 0 ? 460.0f : i <= 50 ? 0x1.028f5cp-10f : 1.0f;
  mp_stats s;
  record_of(&s, v, 1000);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp8_e4m3.scale_log2, -1);
  assert_true(a.fp8_e4m3.underflow_fraction == 0.05);
  assert_false(a.fp8_e4m3.fits);
  float e[2] = {60000.0f, 1.0f};
  record_of(&s, e, 2);
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp8_e5m2.scale_log2, -1);
  float m[2] = {448.0f, 57344.0f}; /* exactly the max: scale 2^0 */
  record_of(&s, m, 1);
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp8_e4m3.scale_log2, 0);
  record_of(&s, m + 1, 1);
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp8_e5m2.scale_log2, 0);
}

/* A per-tensor scale is an fp32 number: for values near 2^-128 the scale
 * that brings them to e4m3's max, 2^136, is none; 2^127 is used, and at it
 * the values at 2^-140 flush (they fitted at 2^136). */
static void fp8_scales_stay_inside_fp32(void **state) {
  (void)state;
  float v[100];
  for (int i = 0; i < 100; i++)
    v[i] = i < 90 ? 0x1p-128f : 0x1p-140f;
  mp_stats s;
  record_of(&s, v, 100);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp8_e4m3.scale_log2, MP_FP8_SCALE_LOG2_MAX);
  assert_int_equal(MP_FP8_SCALE_LOG2_MAX, 127);
  assert_true(a.fp8_e4m3.underflow_fraction == 0.1);
  assert_false(a.fp8_e4m3.fits);
}

/* e4m3 covers 2^-9 .. 448 (about 2^18): values spread over 2^30 flush. */
static void fp8_reports_the_flushed_fraction_at_its_scale(void **state) {
  (void)state;
  float v[100];
  for (int i = 0; i < 100; i++)
    v[i] = i < 90 ? 1.0f : 0x1p-30f;
  mp_stats s;
  record_of(&s, v, 100);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_int_equal(a.fp8_e4m3.scale_log2, 8);
  assert_true(a.fp8_e4m3.underflow_fraction == 0.1);
  assert_false(a.fp8_e4m3.fits);
  assert_false(a.fp8_e4m3.estimate);
  mp_advice_params p;
  mp_advice_params_default(&p);
  p.prefer_fp8 = true;
  p.fp8_underflow_max = 0.2;
  mp_advise(&s, &p, &a);
  assert_true(a.fp8_e4m3.fits);
  assert_int_equal(a.recommended, MP_REC_FP8_E4M3);
}

static void nan_in_fp32_source_keeps_fp32(void **state) {
  (void)state;
  float v[3] = {1.0f, NAN, 2.0f};
  mp_stats s;
  record_of(&s, v, 3);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_true(a.nonfinite_input);
  assert_int_equal(a.fp16, MP_FP16_SAFE); /* the finite values alone fit */
  assert_int_equal(a.recommended, MP_REC_FP32);
}

static void inf_in_fp16_source_keeps_the_advice_on_finite_values(void **state) {
  (void)state;
  uint16_t v[3] = {0x3c00, 0x7c00, 0x4000}; /* 1, inf, 2 */
  mp_stats s;
  mp_stats_init(&s, MP_FP16);
  assert_int_equal(mp_scan_contiguous(&s, v, 3), 0);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_true(a.nonfinite_input);
  assert_int_equal(a.recommended, MP_REC_FP16);
}

static void all_zero_tensor_has_nothing_to_judge(void **state) {
  (void)state;
  float v[8] = {0};
  mp_stats s;
  record_of(&s, v, 8);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_false(a.judged); /* no finite non-zero value: no verdict, whatever the fields say */
  v[3] = 1;
  record_of(&s, v, 8);
  mp_advise(&s, NULL, &a);
  assert_true(a.judged);
  assert_int_equal(a.recommended, MP_REC_FP16);
}

/* --- unscaling gradients taken at a loss scale --- */

static void scaled_values(float *v, int n, double scale, uint64_t seed) {
  uint64_t rng = seed;
  for (int i = 0; i < n; i++) {
    uint64_t r = ref_rand(&rng);
    /* |x| in [2^-30, 2^-3): clear of fp16's straddling binades (-25 and 15) after unscaling */
    double m = 1.0 + (double)(r >> 40) / 16777216.0;
    int e = -24 + (int)((r >> 8) % 21);
    v[i] = (float)(ldexp((r & 1) ? -m : m, e) * scale);
  }
}

static void unscaling_by_a_power_of_two_shifts_the_histogram_exactly(void **state) {
  (void)state;
  enum { N = 3000 };
  static float at_scale[N], truth[N];
  scaled_values(at_scale, N, 65536, 7);
  scaled_values(truth, N, 1, 7);
  mp_stats s, t, u;
  record_of(&s, at_scale, N);
  record_of(&t, truth, N);
  bool casts_estimate;
  assert_true(mp_stats_unscale(&s, 65536, &u, &casts_estimate));
  assert_memory_equal(u.exp_hist, t.exp_hist, sizeof t.exp_hist);
  /* No value near fp16's flush or overflow threshold: those counts are exact. */
  assert_int_equal(u.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW],
                   t.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW]);
  assert_int_equal(u.casts[MP_TGT_FP16][MP_CAST_OVERFLOW], 0);
  assert_int_equal(u.casts[MP_TGT_BF16][MP_CAST_UNDERFLOW],
                   t.casts[MP_TGT_BF16][MP_CAST_UNDERFLOW]);
  assert_true(u.absmax == t.absmax && u.min_abs_nonzero == t.min_abs_nonzero);
  assert_true(u.min == t.min && u.max == t.max);
  assert_int_equal(u.count, t.count);
  /* The advice on the unscaled record is the advice on the true values. */
  mp_advice au, at;
  mp_advise(&u, NULL, &au);
  mp_advise(&t, NULL, &at);
  assert_int_equal(au.window_lo, at.window_lo);
  assert_int_equal(au.window_hi, at.window_hi);
}

static void unscaling_by_one_is_the_record_itself(void **state) {
  (void)state;
  float v[64];
  scaled_values(v, 64, 1, 3);
  mp_stats s, u;
  record_of(&s, v, 64);
  assert_true(mp_stats_unscale(&s, 1, &u, NULL));
  assert_memory_equal(&s, &u, sizeof s);
}

static void unscaling_by_another_scale_is_an_estimate(void **state) {
  (void)state;
  float v[64];
  scaled_values(v, 64, 1000, 5);
  mp_stats s, u;
  record_of(&s, v, 64);
  bool casts_estimate;
  assert_false(mp_stats_unscale(&s, 1000, &u, &casts_estimate));
  assert_true(casts_estimate);
  int k;
  assert_false(mp_scale_log2(1000, &k));
  assert_int_equal(k, 10); /* moved by the nearest whole number of binades */
  assert_int_equal(u.count, s.count);
  assert_true(fabs(u.absmax - s.absmax / 1000) == 0);
}

/* A declared scale far below 1 (2^-1074, the smallest the launcher takes;
 * any positive double from a program's mark or a raw file) puts x / scale
 * beyond double: the extremes saturate like the histogram, and the advice on
 * that record ends (the fp8 scale search once looped forever on absmax = inf). */
static void unscaling_beyond_double_saturates_and_advice_ends(void **state) {
  (void)state;
  float v[64];
  scaled_values(v, 64, 1, 11);
  mp_stats s, u;
  record_of(&s, v, 64);
  alarm(20); /* a hang fails the test instead of stalling the suite */
  for (int sign = -1; sign <= 1; sign += 2) {
    bool casts_estimate;
    assert_false(mp_stats_unscale(&s, ldexp(1.0, sign * 1074), &u, &casts_estimate));
    assert_true(casts_estimate);
    assert_true(isfinite(u.absmax) && u.absmax > 0);
    assert_true(isfinite(u.min) && isfinite(u.max));
    assert_true(isfinite(u.min_abs_nonzero) && u.min_abs_nonzero > 0);
    assert_true(u.min_abs_nonzero <= u.absmax);
    mp_advice a;
    mp_advise(&u, NULL, &a);
    assert_true(a.judged);
    assert_true(isfinite(a.fp8_e4m3.underflow_fraction));
  }
  /* A record whose absmax is not finite (inconsistent input) gets no fp8 fit. */
  u = s;
  u.absmax = INFINITY;
  mp_advice a;
  mp_advise(&u, NULL, &a);
  assert_false(a.fp8_e4m3.fits);
  alarm(0);
}

static void
a_binade_across_the_fp16_flush_threshold_makes_the_cast_counts_an_estimate(void **state) {
  (void)state;
  /* 2^-25 flushes to zero in fp16, 1.5 * 2^-25 does not: one binade, two outcomes. */
  float v[2] = {(float)ldexp(1.0, -25 + 16), (float)ldexp(1.5, -25 + 16)};
  mp_stats s, u;
  record_of(&s, v, 2);
  bool casts_estimate;
  assert_true(mp_stats_unscale(&s, 65536, &u, &casts_estimate)); /* the histogram is exact */
  assert_true(casts_estimate);                                   /* the flush count is not */
  assert_int_equal(u.exp_hist[-25 - MP_HIST_MIN], 2);
}

/* Taken at a loss scale of 2: unscaled, 65530 overflows fp16 and 65500 does
 * not (binade 15), 2^-25 flushes and 1.5 * 2^-25 does not (binade -25). The
 * largest and smallest |x| are values, so their outcomes are known: the
 * midpoint of each binade alone said no overflow and no flush, fp16 safe. */
static void unscaled_casts_count_the_overflow_and_flush_the_extremes_prove(void **state) {
  (void)state;
  float v[64];
  for (int i = 0; i < 64; i++)
    v[i] = 2.0f;
  v[0] = 131000.0f;
  v[1] = 131060.0f;
  v[2] = 0x1p-24f;
  v[3] = 0x1.8p-24f;
  mp_stats s, u;
  record_of(&s, v, 64);
  bool casts_estimate;
  assert_true(mp_stats_unscale(&s, 2, &u, &casts_estimate));
  assert_true(casts_estimate);
  assert_int_equal(u.casts[MP_TGT_FP16][MP_CAST_OVERFLOW], 1);
  assert_int_equal(u.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW], 1);
  assert_int_equal(u.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL], 1);
  assert_int_equal(u.casts[MP_TGT_FP16][MP_CAST_NORMAL], 61);
  mp_advice a;
  mp_advise(&u, NULL, &a);
  assert_int_not_equal(a.fp16, MP_FP16_SAFE);
  assert_int_not_equal(a.recommended, MP_REC_FP16);
}

/* An fp16 record of the values with these bit patterns. */
static void fp16_record(mp_stats *s, const uint16_t *bits, size_t n) {
  mp_stats_init(s, MP_FP16);
  for (size_t i = 0; i < n; i++)
    mp_stats_add(s, mp_load(MP_FP16, bits, i));
}

/* The same true values recorded in fp32 (or fp64 where fp32 cannot hold them):
 * what the unscaled fp16 record must advise alike. */
static void truth_record(mp_stats *s, const uint16_t *bits, size_t n, int a) {
  mp_stats_init(s, MP_FP64);
  for (size_t i = 0; i < n; i++)
    mp_stats_add(s, ldexp(mp_load(MP_FP16, bits, i), -a));
}

static void assert_same_scaled_casts(const mp_stats *u, const mp_stats *f, int k) {
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    mp_scaled_casts cu, cf;
    mp_scaled_casts_compute(u, (mp_target)t, k, &cu);
    mp_scaled_casts_compute(f, (mp_target)t, k, &cf);
    assert_int_equal(cu.estimate, cf.estimate);
    assert_memory_equal(cu.lo, cf.lo, sizeof cu.lo);
    assert_memory_equal(cu.hi, cf.hi, sizeof cu.hi);
  }
}

/* fp16 gradients recorded at a loss scale and divided back: bin e of the
 * unscaled record is fp16's binade e + 16, whose top in fp16's subnormal
 * binades is far above the top of fp16's binade e. Every value 0x23ff
 * (1.1111111111b * 2^-7) at 2^16 is 2^-14 - 2^-25 at 2^8: fp16 normal, which
 * was counted subnormal with no estimate flag. 1.5 * 2^-8 at 2^16 still fits
 * fp16 at 2^-1 (1.5 * 2^-25 rounds up to 2^-24): the window was [0, 29]. The
 * same true values recorded in fp32 get the same counts and window. */
static void unscaled_fp16_gradients_get_the_casts_of_their_true_values(void **state) {
  (void)state;
  uint16_t bits[1001];
  mp_stats rec, u, f;
  for (int i = 0; i < 1000; i++)
    bits[i] = 0x23ff;
  fp16_record(&rec, bits, 1000);
  truth_record(&f, bits, 1000, 16);
  mp_stats_unscale(&rec, 65536, &u, NULL);
  for (int k = -32; k <= 32; k++)
    if (k) assert_same_scaled_casts(&u, &f, k);
  mp_scaled_casts sc;
  mp_scaled_casts_compute(&u, MP_TGT_FP16, 8, &sc);
  assert_int_equal(sc.lo[MP_CAST_NORMAL], 1000);
  assert_true(mp_fp16_subnormal_share(&u, 8) == 0.0);

  for (int i = 0; i < 1000; i++)
    bits[i] = 0x1e00;  /* 1.5 * 2^-8 */
  bits[1000] = 0x4400; /* 4: the fp8 scale does not sit on the small ones */
  fp16_record(&rec, bits, 1001);
  truth_record(&f, bits, 1001, 16);
  mp_stats_unscale(&rec, 65536, &u, NULL);
  for (int k = -32; k <= 32; k++)
    if (k) assert_same_scaled_casts(&u, &f, k);
  mp_advice au, af;
  mp_advise(&u, NULL, &au);
  mp_advise(&f, NULL, &af);
  assert_true(au.has_window && af.has_window);
  assert_int_equal(au.window_lo, -1);
  assert_int_equal(au.window_hi, 29);
  assert_int_equal(af.window_lo, -1);
  assert_int_equal(af.window_estimate, au.window_estimate);
}

/* lo <= true count <= hi, exact without `estimate`, for fp16 records taken at
 * 2^a and divided back: in every fp16 binade, sets of its patterns (its
 * largest always, so a top computed too low shows), alone and beside an
 * outlier on each side (so the extremes narrow nothing), and merged with the
 * same values taken at another scale. The fp16 window is the true one (or
 * inside it when flagged), where the record's own fp16 counts are exact. */
static void unscaled_fp16_casts_bound_the_truth(void **state) {
  (void)state;
  enum { M = 12 };
  static const int shifts[] = {1, 2, 3, 5, 8, 10, 11, 13, 16, 20, 24};
  uint64_t rng = 42;
  int sets = 0, estimates = 0;
  for (size_t si = 0; si < sizeof shifts / sizeof shifts[0]; si++) {
    int a = shifts[si];
    for (int se = -24; se <= 15; se++) {
      for (int variant = 0; variant < 4; variant++) {
        /* the patterns of binade se: [first, last] */
        uint16_t first = se < -14 ? (uint16_t)(1u << (se + 24)) : (uint16_t)((se + 15) << 10);
        uint16_t last = se < -14 ? (uint16_t)((2u << (se + 24)) - 1) : (uint16_t)(first + 0x3ff);
        uint16_t bits[2 * M + 4];
        size_t n = 0;
        bits[n++] = last;
        for (int i = 1; i < M; i++)
          bits[n++] = (uint16_t)(first + ref_rand(&rng) % (uint64_t)(last - first + 1));
        if (variant & 1) {
          bits[n++] = 0x0001; /* 2^-24 */
          bits[n++] = 0x7bff; /* 65504 */
        }
        if (variant & 2) { /* sign doesn't matter: some negative */
          for (size_t i = 0; i < n; i += 2)
            bits[i] |= 0x8000;
        }
        mp_stats rec, u;
        fp16_record(&rec, bits, n);
        bool casts_estimate;
        assert_true(mp_stats_unscale(&rec, ldexp(1.0, a), &u, &casts_estimate));
        double v[2 * M + 4];
        int va[2 * M + 4];
        for (size_t i = 0; i < n; i++) {
          v[i] = mp_load(MP_FP16, bits, i);
          va[i] = a;
        }
        size_t nv = n;
        if (variant == 3) { /* merged with the same values at 2^(a + 5) */
          mp_stats up;
          assert_true(mp_stats_unscale(&rec, ldexp(1.0, a + 5), &up, NULL));
          mp_stats_merge(&u, &up);
          for (size_t i = 0; i < n; i++, nv++) {
            v[nv] = v[i];
            va[nv] = a + 5;
          }
          casts_estimate = true; /* the record's own counts are not checked */
        }
        int true_lo = 1, true_hi = 0;
        for (int k = -32; k <= 32; k++) {
          for (int t = 0; t < MP_TARGET_COUNT; t++) {
            uint64_t truth[MP_CAST_OUTCOMES] = {0};
            for (size_t i = 0; i < nv; i++)
              truth[ref_classify(ldexp(v[i], k - va[i]), (mp_target)t)]++;
            if (t == MP_TGT_FP16 && fits_fp16(truth, nv)) {
              if (true_lo > true_hi) true_lo = k;
              true_hi = k;
            }
            if (k == 0) continue; /* the record's counts: casts_estimate says */
            mp_scaled_casts sc;
            mp_scaled_casts_compute(&u, (mp_target)t, k, &sc);
            estimates += sc.estimate;
            for (int o = 0; o < MP_CAST_OUTCOMES; o++) {
              assert_true(sc.lo[o] <= truth[o] && truth[o] <= sc.hi[o]);
              if (!sc.estimate) assert_int_equal(sc.lo[o], sc.hi[o]);
            }
          }
        }
        if (!casts_estimate) {
          mp_advice ad;
          mp_advise(&u, NULL, &ad);
          if (!ad.window_estimate) {
            assert_int_equal(ad.has_window, true_lo <= true_hi);
            if (ad.has_window) {
              assert_int_equal(ad.window_lo, true_lo);
              assert_int_equal(ad.window_hi, true_hi);
            }
          } else if (ad.has_window) {
            assert_true(true_lo <= ad.window_lo && ad.window_hi <= true_hi);
          }
        }
        sets++;
      }
    }
  }
  assert_int_equal(sets, 11 * 40 * 4);
  assert_true(estimates > 0);
}

static void loss_scales_parse_as_numbers_or_powers_of_two(void **state) {
  (void)state;
  double s;
  assert_int_equal(mp_parse_loss_scale("65536", &s), 0);
  assert_true(s == 65536);
  assert_int_equal(mp_parse_loss_scale("2^-3", &s), 0);
  assert_true(s == 0.125);
  assert_int_equal(mp_parse_loss_scale("0x1p30", &s), 0);
  assert_true(s == 0x1p30);
  /* float32's range: 2^-149 to FLT_MAX, as GradScaler's float32 scale */
  assert_int_equal(mp_parse_loss_scale("2^127", &s), 0);
  assert_int_equal(mp_parse_loss_scale("2^-149", &s), 0);
  assert_true(s == 0x1p-149);
  assert_int_equal(mp_parse_loss_scale("3.4028234663852886e38", &s), 0);
  const char *bad[] = {"",       "0",     "-1", "inf",   "nan",    "2^",   "2^x",
                       "2^2000", "1e999", "3x", "2^128", "2^-150", "1e39", "1e-50"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(mp_parse_loss_scale(bad[i], &s), -EINVAL);
  int k;
  assert_true(mp_scale_log2(0x1p-20, &k));
  assert_int_equal(k, -20);
}

static void underflow_threshold_is_a_parameter(void **state) {
  (void)state;
  /* 1 of 500 values flushes in fp16: 0.2% > 0.1% default. */
  float v[500];
  for (int i = 0; i < 500; i++)
    v[i] = i ? 1.0f : 0x1p-30f;
  mp_stats s;
  record_of(&s, v, 500);
  mp_advice a;
  mp_advice_params p;
  mp_advice_params_default(&p);
  assert_true(p.underflow_max == MP_ADVICE_DEFAULT_UNDERFLOW_MAX);
  p.scale_log2_min = 0;
  p.scale_log2_max = 0;
  mp_advise(&s, &p, &a);
  assert_int_equal(a.fp16, MP_FP16_UNSAFE);
  p.underflow_max = 0.01;
  mp_advise(&s, &p, &a);
  assert_int_equal(a.fp16, MP_FP16_SAFE);
}

/* mp_loss_scale_pick at its boundaries: the middle of the window's true
 * edges, rounded down so that the odd binade of margin is headroom against
 * overflow; 2^0 when 2^0 fits and the middle is below it; inside the window
 * (the search range) when the true middle lies beyond it. */
static void the_suggested_loss_scale_at_its_boundaries(void **state) {
  (void)state;
  assert_int_equal(mp_loss_scale_pick(10, 20, 0, 0), 15);  /* both sides bounded: the middle */
  assert_int_equal(mp_loss_scale_pick(10, 13, 0, 0), 11);  /* 2 binades to overflow, 1 to flush */
  assert_int_equal(mp_loss_scale_pick(-12, -4, 0, 0), -8); /* below 1 where 1 does not fit */
  assert_int_equal(mp_loss_scale_pick(-13, -4, 0, 0), -9); /* rounded down: more headroom */
  assert_int_equal(mp_loss_scale_pick(-3, 20, 0, 0), 8);   /* 2^0 fits, the middle is above */
  assert_int_equal(mp_loss_scale_pick(-20, 3, 0, 0), 0);   /* the middle -9 was below 2^0 */
  assert_int_equal(mp_loss_scale_pick(0, 0, 0, 0), 0);
  assert_int_equal(mp_loss_scale_pick(7, 7, 0, 0), 7);
  assert_int_equal(mp_loss_scale_pick(-32, 8, 0, 0), 0); /* 2^0 fits */
  assert_int_equal(mp_loss_scale_pick(-32, 8, 5, 0), 0); /* true bottom -37: 2^0 still */
  assert_int_equal(mp_loss_scale_pick(-32, -5, 0, 0), -19);
  assert_int_equal(mp_loss_scale_pick(-31, -5, 0, 0), -18);
  /* The search range cut the window: the true edges' middle, not the
   * window's. Values near 2^-40 fit [16, 32] of the default range and up to
   * 2^55 in truth: the middle 35 is past the range, so its end 32 (the
   * window's middle 24 left them fp16 subnormals). */
  assert_int_equal(mp_loss_scale_pick(16, 32, 0, 23), 32);
  assert_int_equal(mp_loss_scale_pick(10, 32, 0, 4), 23);     /* true [10, 36]: 23, not 21 */
  assert_int_equal(mp_loss_scale_pick(-32, -25, 39, 0), -32); /* values near 2^40 */
  assert_int_equal(mp_loss_scale_pick(-32, -5, 3, 0), -20);   /* true [-35, -5] */
  assert_int_equal(mp_loss_scale_pick(-32, 32, 100, 3), 0);   /* 2^0 fits */
}

/* The pick against its definition at every window of true edges in
 * [-40, 40] seen through the default search range [-32, 32] (the window is
 * their intersection, beyond_lo and beyond_hi what it cut off): inside the
 * window; where 2^0 is outside it, the largest smaller margin to the true
 * edges of any scale in the window, with the headroom against overflow at
 * least the margin to the flush side where the window allows; where 2^0 is
 * inside, 2^0 or above it. */
static void the_suggested_loss_scale_keeps_the_most_margin(void **state) {
  (void)state;
  for (int tlo = -40; tlo <= 40; tlo++)
    for (int thi = tlo; thi <= 40; thi++) {
      int lo = tlo < -32 ? -32 : tlo, hi = thi > 32 ? 32 : thi;
      if (lo > hi) continue;
      int k = mp_loss_scale_pick(lo, hi, lo - tlo, thi - hi);
      if (k < lo || k > hi) fail_msg("[%d, %d] of [%d, %d]: %d outside", lo, hi, tlo, thi, k);
      int best = 0;
      for (int j = lo; j <= hi; j++) {
        int m = thi - j < j - tlo ? thi - j : j - tlo;
        if (m > best) best = m;
      }
      int m = thi - k < k - tlo ? thi - k : k - tlo;
      bool most = m == best && (thi - k >= k - tlo || k == lo);
      if (lo <= 0 && 0 <= hi ? !(k == 0 || (k > 0 && most)) : !most)
        fail_msg("[%d, %d] of [%d, %d]: 2^%d keeps %d binades to overflow and %d to flush; the "
                 "most is %d",
                 lo, hi, tlo, thi, k, thi - k, k - tlo, best);
    }
}

/* Values all at 2^-40 (or 2^40): the default search range cuts the window at
 * its top (bottom). The record tells the true edges (the overflow edge from
 * absmax exactly, the flush edge from the histogram), and the pick keeps the
 * values fp16 normals with headroom against overflow both ways. */
static void a_window_cut_by_the_search_range_picks_from_its_true_edges(void **state) {
  (void)state;
  float v[100];
  for (int i = 0; i < 100; i++)
    v[i] = 0x1p-40f;
  mp_stats s;
  record_of(&s, v, 100);
  mp_advice a;
  mp_advise(&s, NULL, &a);
  assert_true(a.has_window);
  assert_int_equal(a.window_lo, 16); /* 2^-24, fp16's smallest subnormal */
  assert_int_equal(a.window_hi, 32); /* the search range's end */
  assert_int_equal(a.beyond_lo, 0);
  assert_int_equal(a.window_hi + a.beyond_hi, 55); /* 2^15; 2^16 overflows */
  int k = mp_loss_scale_pick(a.window_lo, a.window_hi, a.beyond_lo, a.beyond_hi);
  assert_true(ldexp(0x1p-40, k) >= 0x1p-14);  /* an fp16 normal: 11 significant bits */
  assert_true(ldexp(0x1p-40, k + 8) < 65504); /* many doublings of headroom */
  assert_true(mp_fp16_subnormal_share(&s, k) == 0);

  for (int i = 0; i < 100; i++)
    v[i] = 0x1p40f;
  record_of(&s, v, 100);
  mp_advise(&s, NULL, &a);
  assert_true(a.has_window);
  assert_int_equal(a.window_lo, -32);
  assert_int_equal(a.window_hi, -25);               /* 2^15; 2^16 overflows */
  assert_int_equal(a.window_lo - a.beyond_lo, -64); /* 2^-24 */
  assert_int_equal(a.beyond_hi, 0);
  k = mp_loss_scale_pick(a.window_lo, a.window_hi, a.beyond_lo, a.beyond_hi);
  assert_int_equal(k, -32); /* the true middle -45 is past the range: its end, 7 binades of
                               headroom (the window's middle -29 kept 4) */
  /* A search range that reaches the true edges finds the same window and
   * nothing beyond. */
  mp_advice_params p;
  mp_advice_params_default(&p);
  p.scale_log2_min = -100;
  mp_advise(&s, &p, &a);
  assert_int_equal(a.window_lo, -64);
  assert_int_equal(a.beyond_lo, 0);
  assert_int_equal(mp_loss_scale_pick(a.window_lo, a.window_hi, a.beyond_lo, a.beyond_hi), -45);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_suggested_loss_scale_at_its_boundaries),
      cmocka_unit_test(the_suggested_loss_scale_keeps_the_most_margin),
      cmocka_unit_test(a_window_cut_by_the_search_range_picks_from_its_true_edges),
      cmocka_unit_test(scaled_casts_bound_the_truth_and_window_matches_brute_force),
      cmocka_unit_test(window_equals_the_per_scale_computation),
      cmocka_unit_test(scale_one_uses_the_exact_record_counts),
      cmocka_unit_test(fp16_subnormal_share_counts_finite_non_zero_values),
      cmocka_unit_test(loss_scale_window_edges_come_from_min_abs_and_absmax),
      cmocka_unit_test(window_is_an_estimate_when_a_boundary_binade_decides),
      cmocka_unit_test(well_behaved_activations_are_fp16_safe),
      cmocka_unit_test(too_wide_for_fp16_recommends_bf16),
      cmocka_unit_test(saturated_fp8_values_count_as_overflow),
      cmocka_unit_test(only_fp8_views_have_saturated_values),
      cmocka_unit_test(values_below_bf16_range_keep_fp32),
      cmocka_unit_test(fp64_values_that_fp32_flushes_keep_fp64),
      cmocka_unit_test(fp8_scale_is_the_largest_power_of_two_within_the_max),
      cmocka_unit_test(fp8_reports_the_flushed_fraction_at_its_scale),
      cmocka_unit_test(fp8_scale_keeps_absmax_at_most_the_format_max),
      cmocka_unit_test(fp8_scales_stay_inside_fp32),
      cmocka_unit_test(nan_in_fp32_source_keeps_fp32),
      cmocka_unit_test(inf_in_fp16_source_keeps_the_advice_on_finite_values),
      cmocka_unit_test(all_zero_tensor_has_nothing_to_judge),
      cmocka_unit_test(unscaling_by_a_power_of_two_shifts_the_histogram_exactly),
      cmocka_unit_test(unscaling_by_one_is_the_record_itself),
      cmocka_unit_test(unscaling_by_another_scale_is_an_estimate),
      cmocka_unit_test(unscaling_beyond_double_saturates_and_advice_ends),
      cmocka_unit_test(a_binade_across_the_fp16_flush_threshold_makes_the_cast_counts_an_estimate),
      cmocka_unit_test(unscaled_casts_count_the_overflow_and_flush_the_extremes_prove),
      cmocka_unit_test(unscaled_fp16_gradients_get_the_casts_of_their_true_values),
      cmocka_unit_test(unscaled_fp16_casts_bound_the_truth),
      cmocka_unit_test(loss_scales_parse_as_numbers_or_powers_of_two),
      cmocka_unit_test(underflow_threshold_is_a_parameter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
