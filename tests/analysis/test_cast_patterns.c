/* Every fp16 and bf16 bit pattern (2^16) and every fp8 pattern (2^8) as a
 * source: the scanner's record and mp_cast_classify against an independent
 * per-value check (ref.h rounding, exponent from frexp, own counting). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "ref.h"

typedef struct expected {
  uint64_t count, zeros, nans, pos_infs, neg_infs, negatives;
  double min, max, absmax, min_abs;
  uint64_t casts[MP_TARGET_COUNT][MP_CAST_OUTCOMES];
  uint64_t hist[MP_HIST_BINS];
} expected;

static void expect_one(expected *x, double v, uint64_t times) {
  x->count += times;
  if (isnan(v)) {
    x->nans += times;
    return;
  }
  if (v < 0) x->negatives += times;
  if (isinf(v)) {
    if (v > 0)
      x->pos_infs += times;
    else
      x->neg_infs += times;
    return;
  }
  if (v < x->min || (v == x->min && signbit(v))) x->min = v;
  if (v > x->max || (v == x->max && !signbit(v))) x->max = v;
  if (fabs(v) > x->absmax) x->absmax = fabs(v);
  if (v == 0) {
    x->zeros += times;
    return;
  }
  if (fabs(v) < x->min_abs) x->min_abs = fabs(v);
  int e;
  frexp(v, &e);
  x->hist[e - 1 - MP_HIST_MIN] += times;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    mp_cast_outcome want = ref_classify(v, (mp_target)t);
    assert_int_equal(mp_cast_classify(v, (mp_target)t), want);
    x->casts[t][want] += times;
  }
}

static void assert_record(const mp_stats *s, const expected *x) {
  assert_int_equal(s->count, x->count);
  assert_int_equal(s->zeros, x->zeros);
  assert_int_equal(s->nans, x->nans);
  assert_int_equal(s->pos_infs, x->pos_infs);
  assert_int_equal(s->neg_infs, x->neg_infs);
  assert_int_equal(s->negatives, x->negatives);
  assert_true(s->min == x->min && signbit(s->min) == signbit(x->min));
  assert_true(s->max == x->max && signbit(s->max) == signbit(x->max));
  assert_true(s->absmax == x->absmax);
  assert_true(s->min_abs_nonzero == x->min_abs);
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    for (int o = 0; o < MP_CAST_OUTCOMES; o++)
      assert_int_equal(s->casts[t][o], x->casts[t][o]);
  for (int i = 0; i < MP_HIST_BINS; i++)
    assert_int_equal(s->exp_hist[i], x->hist[i]);
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t sum = 0;
    for (int o = 0; o < MP_CAST_OUTCOMES; o++)
      sum += s->casts[t][o];
    assert_int_equal(sum, s->count - s->zeros - s->nans - s->pos_infs - s->neg_infs);
  }
}

/* All patterns of a source, repeated `reps` times (enough to take the
 * pattern-counting fast path), through both scanner paths. */
static void check_all_patterns(mp_dtype d, double (*decode)(uint32_t), unsigned reps) {
  unsigned bits = mp_dtype_size(d) * 8, n = 1u << bits;
  unsigned char *buf = malloc((size_t)n * reps * (bits / 8));
  assert_non_null(buf);
  expected *x = calloc(1, sizeof *x);
  assert_non_null(x);
  x->min = INFINITY;
  x->max = -INFINITY;
  x->absmax = -1;
  x->min_abs = INFINITY;
  for (unsigned r = 0; r < reps; r++)
    for (uint32_t v = 0; v < n; v++) {
      if (bits == 16) {
        uint16_t h = (uint16_t)v;
        memcpy(buf + ((size_t)r * n + v) * 2, &h, 2);
      } else {
        buf[(size_t)r * n + v] = (unsigned char)v;
      }
    }
  for (uint32_t v = 0; v < n; v++)
    expect_one(x, decode(v), reps);
  const mp_scan_impl impls[] = {MP_SCAN_PORTABLE, MP_SCAN_AVX2, MP_SCAN_AUTO};
  for (int i = 0; i < 3; i++) {
    mp_stats *s = malloc(sizeof *s);
    assert_non_null(s);
    mp_stats_init(s, d);
    mp_view view = {.dtype = d, .data = buf, .rows = (uint64_t)n * reps, .cols = 1, .batch = 1};
    assert_int_equal(mp_scan_with(s, &view, impls[i]), 0);
    assert_record(s, x);
    free(s);
  }
  free(x);
  free(buf);
}

static double dec_fp16(uint32_t v) {
  return mp_fp16_to_float((uint16_t)v);
}
static double dec_bf16(uint32_t v) {
  return mp_bf16_to_float((uint16_t)v);
}
static double dec_e4m3(uint32_t v) {
  return mp_e4m3_to_float((uint8_t)v);
}
static double dec_e5m2(uint32_t v) {
  return mp_e5m2_to_float((uint8_t)v);
}

static void every_fp16_pattern_is_classified_exactly(void **state) {
  (void)state;
  check_all_patterns(MP_FP16, dec_fp16, 4);
}

static void every_bf16_pattern_is_classified_exactly(void **state) {
  (void)state;
  check_all_patterns(MP_BF16, dec_bf16, 4);
}

static void every_e4m3_pattern_is_classified_exactly(void **state) {
  (void)state;
  check_all_patterns(MP_FP8_E4M3, dec_e4m3, 3);
}

static void every_e5m2_pattern_is_classified_exactly(void **state) {
  (void)state;
  check_all_patterns(MP_FP8_E5M2, dec_e5m2, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_fp16_pattern_is_classified_exactly),
      cmocka_unit_test(every_bf16_pattern_is_classified_exactly),
      cmocka_unit_test(every_e4m3_pattern_is_classified_exactly),
      cmocka_unit_test(every_e5m2_pattern_is_classified_exactly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
