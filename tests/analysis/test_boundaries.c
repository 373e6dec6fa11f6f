/* Every format boundary and its one-ulp fp32 neighbours, checked three ways:
 * mp_cast_classify, the independent reference, and a scan (portable and fast
 * path) of a buffer holding the value among ordinary ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "analysis/scan.h"
#include "ref.h"

static float up(float x) {
  return nextafterf(x, INFINITY);
}
static float down(float x) {
  return nextafterf(x, 0.0f);
}

/* x (and -x) cast to t must give `want`. */
static void expect(float x, mp_target t, mp_cast_outcome want) {
  assert_int_equal(mp_cast_classify(x, t), want);
  assert_int_equal(mp_cast_classify(-x, t), want);
  assert_int_equal(ref_classify(x, t), want);
  /* 37 values: x and -x at different lanes among 1.0s, so the AVX2 path sees
   * them both inside full vectors and in the tail. */
  float buf[37];
  for (int i = 0; i < 37; i++)
    buf[i] = 1.0f;
  buf[3] = x;
  buf[20] = -x;
  buf[36] = x;
  const mp_scan_impl impls[] = {MP_SCAN_PORTABLE, MP_SCAN_AVX2, MP_SCAN_AUTO};
  for (int i = 0; i < 3; i++) {
    mp_stats s;
    mp_stats_init(&s, MP_FP32);
    assert_int_equal(
        mp_scan_with(&s,
                     &(mp_view){.dtype = MP_FP32, .data = buf, .rows = 37, .cols = 1, .batch = 1},
                     impls[i]),
        0);
    uint64_t ones = mp_cast_classify(1.0, t) == want ? 34 : 0;
    assert_int_equal(s.casts[t][want], 3 + ones);
  }
}

static void fp16_max_65504_is_normal(void **state) {
  (void)state;
  expect(65504.0f, MP_TGT_FP16, MP_CAST_NORMAL);
  expect(up(65504.0f), MP_TGT_FP16, MP_CAST_NORMAL);
}

static void fp16_overflow_starts_at_65520(void **state) {
  (void)state;
  expect(down(65520.0f), MP_TGT_FP16, MP_CAST_NORMAL);
  expect(65520.0f, MP_TGT_FP16, MP_CAST_OVERFLOW);
  expect(up(65520.0f), MP_TGT_FP16, MP_CAST_OVERFLOW);
}

static void fp16_min_subnormal_2pow_minus24_is_subnormal(void **state) {
  (void)state;
  expect(0x1p-24f, MP_TGT_FP16, MP_CAST_SUBNORMAL);
  expect(down(0x1p-24f), MP_TGT_FP16, MP_CAST_SUBNORMAL);
  expect(up(0x1p-24f), MP_TGT_FP16, MP_CAST_SUBNORMAL);
}

static void fp16_flush_to_zero_ends_at_2pow_minus25(void **state) {
  (void)state;
  expect(down(0x1p-25f), MP_TGT_FP16, MP_CAST_UNDERFLOW);
  expect(0x1p-25f, MP_TGT_FP16, MP_CAST_UNDERFLOW);
  expect(up(0x1p-25f), MP_TGT_FP16, MP_CAST_SUBNORMAL);
}

static void fp16_min_normal_2pow_minus14_and_the_values_that_round_to_it(void **state) {
  (void)state;
  expect(0x1p-14f, MP_TGT_FP16, MP_CAST_NORMAL);
  expect(down(0x1p-14f), MP_TGT_FP16, MP_CAST_NORMAL); /* rounds up to 2^-14 */
  float mid = 0x1p-14f - 0x1p-25f;                     /* tie: to the even min normal */
  expect(mid, MP_TGT_FP16, MP_CAST_NORMAL);
  expect(down(mid), MP_TGT_FP16, MP_CAST_SUBNORMAL);
  expect(0x1p-14f - 0x1p-24f, MP_TGT_FP16, MP_CAST_SUBNORMAL); /* largest subnormal */
}

static void e4m3_max_448_is_normal(void **state) {
  (void)state;
  expect(448.0f, MP_TGT_FP8_E4M3, MP_CAST_NORMAL);
  expect(up(448.0f), MP_TGT_FP8_E4M3, MP_CAST_NORMAL);
}

static void e4m3_tie_at_464_rounds_down_to_448(void **state) {
  (void)state;
  expect(down(464.0f), MP_TGT_FP8_E4M3, MP_CAST_NORMAL);
  expect(464.0f, MP_TGT_FP8_E4M3, MP_CAST_NORMAL);
  expect(up(464.0f), MP_TGT_FP8_E4M3, MP_CAST_OVERFLOW);
}

static void e4m3_flush_and_subnormal_limits(void **state) {
  (void)state;
  expect(0x1p-10f, MP_TGT_FP8_E4M3, MP_CAST_UNDERFLOW);
  expect(up(0x1p-10f), MP_TGT_FP8_E4M3, MP_CAST_SUBNORMAL);
  expect(0x1p-9f, MP_TGT_FP8_E4M3, MP_CAST_SUBNORMAL);
  expect(down(0x1p-6f - 0x1p-10f), MP_TGT_FP8_E4M3, MP_CAST_SUBNORMAL);
  expect(0x1p-6f - 0x1p-10f, MP_TGT_FP8_E4M3, MP_CAST_NORMAL);
  expect(0x1p-6f, MP_TGT_FP8_E4M3, MP_CAST_NORMAL);
}

static void e5m2_max_57344_is_normal(void **state) {
  (void)state;
  expect(57344.0f, MP_TGT_FP8_E5M2, MP_CAST_NORMAL);
  expect(up(57344.0f), MP_TGT_FP8_E5M2, MP_CAST_NORMAL);
}

static void e5m2_overflow_starts_at_61440(void **state) {
  (void)state;
  expect(down(61440.0f), MP_TGT_FP8_E5M2, MP_CAST_NORMAL);
  expect(61440.0f, MP_TGT_FP8_E5M2, MP_CAST_OVERFLOW);
  expect(up(61440.0f), MP_TGT_FP8_E5M2, MP_CAST_OVERFLOW);
}

static void e5m2_flush_and_subnormal_limits(void **state) {
  (void)state;
  expect(0x1p-17f, MP_TGT_FP8_E5M2, MP_CAST_UNDERFLOW);
  expect(up(0x1p-17f), MP_TGT_FP8_E5M2, MP_CAST_SUBNORMAL);
  expect(down(0x1p-14f - 0x1p-17f), MP_TGT_FP8_E5M2, MP_CAST_SUBNORMAL);
  expect(0x1p-14f - 0x1p-17f, MP_TGT_FP8_E5M2, MP_CAST_NORMAL);
}

static void bf16_max_is_normal_and_overflow_starts_at_its_midpoint(void **state) {
  (void)state;
  float max = 0x1.fep127f, mid = 0x1.ffp127f;
  expect(max, MP_TGT_BF16, MP_CAST_NORMAL);
  expect(down(mid), MP_TGT_BF16, MP_CAST_NORMAL);
  expect(mid, MP_TGT_BF16, MP_CAST_OVERFLOW);
  expect(up(mid), MP_TGT_BF16, MP_CAST_OVERFLOW);
  expect(0x1.fffffep127f, MP_TGT_BF16, MP_CAST_OVERFLOW);
}

static void bf16_flush_and_subnormal_limits(void **state) {
  (void)state;
  expect(0x1p-134f, MP_TGT_BF16, MP_CAST_UNDERFLOW);
  expect(up(0x1p-134f), MP_TGT_BF16, MP_CAST_SUBNORMAL);
  expect(0x1p-133f, MP_TGT_BF16, MP_CAST_SUBNORMAL);
  expect(down(0x1p-126f - 0x1p-134f), MP_TGT_BF16, MP_CAST_SUBNORMAL);
  expect(0x1p-126f - 0x1p-134f, MP_TGT_BF16, MP_CAST_NORMAL);
  expect(0x1p-126f, MP_TGT_BF16, MP_CAST_NORMAL);
  expect(0x1p-149f, MP_TGT_BF16, MP_CAST_UNDERFLOW);
}

static void values_beyond_every_limit_overflow_or_flush_everywhere(void **state) {
  (void)state;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    expect(0x1p-149f, (mp_target)t, MP_CAST_UNDERFLOW);
    expect(0x1.fffffep127f, (mp_target)t, MP_CAST_OVERFLOW);
    expect(1.0f, (mp_target)t, MP_CAST_NORMAL);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp16_max_65504_is_normal),
      cmocka_unit_test(fp16_overflow_starts_at_65520),
      cmocka_unit_test(fp16_min_subnormal_2pow_minus24_is_subnormal),
      cmocka_unit_test(fp16_flush_to_zero_ends_at_2pow_minus25),
      cmocka_unit_test(fp16_min_normal_2pow_minus14_and_the_values_that_round_to_it),
      cmocka_unit_test(e4m3_max_448_is_normal),
      cmocka_unit_test(e4m3_tie_at_464_rounds_down_to_448),
      cmocka_unit_test(e4m3_flush_and_subnormal_limits),
      cmocka_unit_test(e5m2_max_57344_is_normal),
      cmocka_unit_test(e5m2_overflow_starts_at_61440),
      cmocka_unit_test(e5m2_flush_and_subnormal_limits),
      cmocka_unit_test(bf16_max_is_normal_and_overflow_starts_at_its_midpoint),
      cmocka_unit_test(bf16_flush_and_subnormal_limits),
      cmocka_unit_test(values_beyond_every_limit_overflow_or_flush_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
