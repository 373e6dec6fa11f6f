/* Unit tests of the samples' host helpers: the fp16 / bf16 conversions the
 * samples use to build 16-bit operands and their reference results (a wrong
 * rounding here would make verification compare against the wrong numbers),
 * the checksum hash and the seeded generator. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "samples/sample_util.h"

static float bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void f16_max_finite_is_65504(void **state) {
  (void)state;
  assert_int_equal(su_f32_to_f16(65504.0f), 0x7bff);
  assert_true(su_f16_to_f32(0x7bff) == 65504.0f);
  assert_int_equal(su_f32_to_f16(65519.996f), 0x7bff); /* below the midpoint to 65536 */
}

static void f16_overflow_starts_at_65520(void **state) {
  (void)state;
  assert_int_equal(su_f32_to_f16(65520.0f), 0x7c00);
  assert_int_equal(su_f32_to_f16(-65520.0f), 0xfc00);
  assert_int_equal(su_f32_to_f16(1e5f), 0x7c00);
}

static void f16_flushes_to_zero_at_two_pow_minus_25(void **state) {
  (void)state;
  assert_int_equal(su_f32_to_f16(0x1p-25f), 0x0000); /* tie, rounds to even 0 */
  assert_int_equal(su_f32_to_f16(-0x1p-25f), 0x8000);
  assert_int_equal(su_f32_to_f16(nextafterf(0x1p-25f, 1.0f)), 0x0001);
  assert_int_equal(su_f32_to_f16(0x1p-30f), 0x0000);
}

static void f16_subnormals_round_to_nearest_even(void **state) {
  (void)state;
  assert_int_equal(su_f32_to_f16(1.5f * 0x1p-24f), 0x0002);
  assert_int_equal(su_f32_to_f16(2.5f * 0x1p-24f), 0x0002);
  assert_int_equal(su_f32_to_f16(1023.5f * 0x1p-24f),
                   0x0400); /* carries into the smallest normal */
  assert_int_equal(su_f32_to_f16(0x1p-14f), 0x0400);
}

static void f16_normals_round_to_nearest_even(void **state) {
  (void)state;
  assert_int_equal(su_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);     /* tie to even */
  assert_int_equal(su_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02); /* tie to even, up */
  assert_int_equal(su_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
}

static void f16_keeps_nan_and_inf(void **state) {
  (void)state;
  assert_int_equal(su_f32_to_f16(INFINITY), 0x7c00);
  assert_true((su_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (su_f32_to_f16(NAN) & 0x3ff));
  assert_true(isnan(su_f16_to_f32(0x7e00)));
}

static void f16_every_finite_value_round_trips(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00) continue;
    assert_int_equal(su_f32_to_f16(su_f16_to_f32((uint16_t)h)), h);
  }
}

static void bf16_rounds_ties_to_even(void **state) {
  (void)state;
  assert_int_equal(su_f32_to_bf16(bits(0x3f808000u)), 0x3f80);
  assert_int_equal(su_f32_to_bf16(bits(0x3f818000u)), 0x3f82);
  assert_int_equal(su_f32_to_bf16(bits(0x3f808001u)), 0x3f81);
  assert_true(su_bf16_to_f32(0x3f80) == 1.0f);
}

static void bf16_overflows_above_its_max(void **state) {
  (void)state;
  assert_int_equal(su_f32_to_bf16(bits(0x7f7f0000u)), 0x7f7f); /* bf16 max */
  assert_int_equal(su_f32_to_bf16(bits(0x7f7fffffu)), 0x7f80); /* fp32 max rounds to inf */
  assert_true(isnan(su_bf16_to_f32(su_f32_to_bf16(NAN))));
}

static void fnv1a_matches_reference_vectors(void **state) {
  (void)state;
  assert_true(su_fnv1a(SU_FNV_INIT, "", 0) == 0xcbf29ce484222325ull);
  assert_true(su_fnv1a(SU_FNV_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);
  assert_true(su_fnv1a(SU_FNV_INIT, "foobar", 6) == 0x85944171f73967e8ull);
}

static void rng_is_deterministic_and_in_range(void **state) {
  (void)state;
  su_rng a, b;
  su_rng_seed(&a, 42);
  su_rng_seed(&b, 42);
  for (int i = 0; i < 1000; i++) {
    double x = su_rng_uniform(&a, -3.0, 5.0);
    assert_true(x == su_rng_uniform(&b, -3.0, 5.0));
    assert_true(x >= -3.0 && x < 5.0);
  }
  su_rng_seed(&b, 43);
  assert_true(su_rng_next(&a) != su_rng_next(&b));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(f16_max_finite_is_65504),
      cmocka_unit_test(f16_overflow_starts_at_65520),
      cmocka_unit_test(f16_flushes_to_zero_at_two_pow_minus_25),
      cmocka_unit_test(f16_subnormals_round_to_nearest_even),
      cmocka_unit_test(f16_normals_round_to_nearest_even),
      cmocka_unit_test(f16_keeps_nan_and_inf),
      cmocka_unit_test(f16_every_finite_value_round_trips),
      cmocka_unit_test(bf16_rounds_ties_to_even),
      cmocka_unit_test(bf16_overflows_above_its_max),
      cmocka_unit_test(fnv1a_matches_reference_vectors),
      cmocka_unit_test(rng_is_deterministic_and_in_range),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
