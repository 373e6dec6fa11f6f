/* The format table: every limit re-derived from the RNE rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/formats.h"

static void fp16_limits_match_the_spec(void **state) {
  (void)state;
  const mp_format *f = mp_format_of(MP_FP16);
  assert_true(f->max_finite == 65504.0);
  assert_true(f->overflow_at == 65520.0);
  assert_false(f->overflow_strict);
  assert_true(f->flush_at == 0x1p-25);
  assert_true(f->subnormal_below == 0x1p-14 - 0x1p-25);
  assert_int_equal(f->emin, -14);
  assert_int_equal(f->emin_sub, -24);
  assert_int_equal(f->emax, 15);
}

static void e4m3_limits_match_the_spec(void **state) {
  (void)state;
  const mp_format *f = mp_format_of(MP_FP8_E4M3);
  assert_true(f->max_finite == 448.0);
  assert_true(f->overflow_at == 464.0);
  assert_true(f->overflow_strict); /* the tie at 464 rounds to the even 448 */
  assert_false(f->has_inf);
  assert_int_equal(f->emin, -6);
  assert_int_equal(f->emin_sub, -9);
  assert_int_equal(f->emax, 8);
}

static void e5m2_limits_match_the_spec(void **state) {
  (void)state;
  const mp_format *f = mp_format_of(MP_FP8_E5M2);
  assert_true(f->max_finite == 57344.0);
  assert_true(f->overflow_at == 61440.0);
  assert_false(f->overflow_strict);
  assert_int_equal(f->emin, -14);
  assert_int_equal(f->emin_sub, -16);
}

static void bf16_limits_match_the_spec(void **state) {
  (void)state;
  const mp_format *f = mp_format_of(MP_BF16);
  assert_true(f->max_finite == (2.0 - 0x1p-7) * 0x1p127);
  assert_true(f->overflow_at == (2.0 - 0x1p-8) * 0x1p127);
  assert_int_equal(f->emin, -126);
  assert_int_equal(f->emin_sub, -133);
}

/* For every narrow float format: max = largest encoding decoded; overflow_at =
 * max + half an ulp; flush and subnormal limits from emin/emin_sub. */
static void float_limits_follow_the_rne_rules(void **state) {
  (void)state;
  const mp_dtype ds[] = {MP_FP32, MP_TF32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
    const mp_format *f = mp_format_of(ds[i]);
    assert_true(f->is_float);
    assert_int_equal(f->emin_sub, f->emin - (int)f->man_bits);
    assert_int_equal(f->emin, 2 - (1 << (f->exp_bits - 1)));
    assert_true(f->overflow_at == f->max_finite + ldexp(1.0, f->emax - (int)f->man_bits - 1));
    assert_true(f->flush_at == ldexp(1.0, f->emin_sub - 1));
    assert_true(f->subnormal_below == ldexp(1.0, f->emin) - ldexp(1.0, f->emin_sub - 1));
    assert_int_equal(ilogb(f->max_finite), f->emax);
  }
  assert_true(mp_format_of(MP_FP32)->max_finite == 0x1.fffffep127);
  assert_true(mp_fp16_to_float(0x7bff) == mp_format_of(MP_FP16)->max_finite);
  assert_true(mp_bf16_to_float(0x7f7f) == mp_format_of(MP_BF16)->max_finite);
  assert_true(mp_e4m3_to_float(0x7e) == mp_format_of(MP_FP8_E4M3)->max_finite);
  assert_true(mp_e5m2_to_float(0x7b) == mp_format_of(MP_FP8_E5M2)->max_finite);
}

static void dtype_names_round_trip(void **state) {
  (void)state;
  const char *names[] = {"fp64",     "fp32",     "tf32", "fp16", "bf16",
                         "fp8_e4m3", "fp8_e5m2", "int8", "int32"};
  for (int d = 0; d < MP_DTYPE_COUNT; d++) {
    assert_string_equal(mp_dtype_name((mp_dtype)d), names[d]);
    assert_int_equal(mp_dtype_from_name(names[d]), d);
  }
  assert_int_equal(mp_dtype_from_name("float16"), MP_DTYPE_INVALID);
  assert_int_equal(mp_dtype_from_name(NULL), MP_DTYPE_INVALID);
  assert_string_equal(mp_dtype_name(MP_DTYPE_INVALID), "invalid");
  assert_null(mp_format_of(MP_DTYPE_COUNT));
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    assert_string_equal(mp_target_name((mp_target)t), mp_dtype_name(mp_target_dtype((mp_target)t)));
}

static void scannable_dtypes_and_sizes(void **state) {
  (void)state;
  const unsigned sizes[MP_DTYPE_COUNT] = {8, 4, 4, 2, 2, 1, 1, 1, 4};
  const bool scannable[MP_DTYPE_COUNT] = {true, true, false, true, true, true, true, false, false};
  for (int d = 0; d < MP_DTYPE_COUNT; d++) {
    assert_int_equal(mp_dtype_size((mp_dtype)d), sizes[d]);
    assert_int_equal(mp_dtype_scannable((mp_dtype)d), scannable[d]);
  }
  assert_false(mp_dtype_scannable(MP_DTYPE_INVALID));
}

static void binade_top_is_the_last_value_below_the_next_power(void **state) {
  (void)state;
  const mp_format *h = mp_format_of(MP_FP16);
  assert_true(mp_format_binade_top(h, 15) == 65504.0);
  assert_true(mp_format_binade_top(h, -24) == 0x1p-24);           /* subnormal binade: 1 value */
  assert_true(mp_format_binade_top(h, -15) == 0x1p-14 - 0x1p-24); /* largest subnormal */
  assert_true(mp_format_binade_top(mp_format_of(MP_FP32), 0) == 0x1.fffffep0);
  assert_true(mp_format_binade_top(mp_format_of(MP_FP64), 1023) == 0x1.fffffffffffffp1023);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp16_limits_match_the_spec),
      cmocka_unit_test(e4m3_limits_match_the_spec),
      cmocka_unit_test(e5m2_limits_match_the_spec),
      cmocka_unit_test(bf16_limits_match_the_spec),
      cmocka_unit_test(float_limits_follow_the_rne_rules),
      cmocka_unit_test(dtype_names_round_trip),
      cmocka_unit_test(scannable_dtypes_and_sizes),
      cmocka_unit_test(binade_top_is_the_last_value_below_the_next_power),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
