/* Decoders and RNE encoders against independent references: a formula-based
 * decoder, rint()-based rounding (ref.h), and the CPU's own F16C conversion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "analysis/convert.h"
#include "ref.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

/* Value of an encoding from its fields: (-1)^s (1.m) 2^(E-bias), or 0.m 2^(1-bias). */
static double field_decode(uint32_t v, int exp_bits, int man_bits) {
  int bias = (1 << (exp_bits - 1)) - 1;
  uint32_t man = v & ((1u << man_bits) - 1);
  uint32_t exp = (v >> man_bits) & ((1u << exp_bits) - 1);
  bool neg = (v >> (exp_bits + man_bits)) & 1;
  double mag = exp == 0 ? ldexp((double)man, 1 - bias - man_bits)
                        : ldexp(1.0 + ldexp((double)man, -man_bits), (int)exp - bias);
  return neg ? -mag : mag;
}

static void same_value(double got, double want) {
  if (isnan(want)) {
    assert_true(isnan(got));
    return;
  }
  assert_true(got == want);
  assert_int_equal(signbit(got) != 0, signbit(want) != 0);
}

static void fp16_decoder_matches_fields_for_all_patterns(void **state) {
  (void)state;
  for (uint32_t v = 0; v < 65536; v++) {
    double want = ((v >> 10) & 0x1f) == 0x1f
                      ? ((v & 0x3ff) ? NAN : (v & 0x8000 ? -INFINITY : INFINITY))
                      : field_decode(v, 5, 10);
    same_value(mp_fp16_to_float((uint16_t)v), want);
  }
}

static void bf16_decoder_matches_fields_for_all_patterns(void **state) {
  (void)state;
  for (uint32_t v = 0; v < 65536; v++) {
    double want = ((v >> 7) & 0xff) == 0xff
                      ? ((v & 0x7f) ? NAN : (v & 0x8000 ? -INFINITY : INFINITY))
                      : field_decode(v, 8, 7);
    same_value(mp_bf16_to_float((uint16_t)v), want);
  }
}

static void e4m3_decoder_matches_fields_for_all_patterns(void **state) {
  (void)state;
  for (uint32_t v = 0; v < 256; v++) {
    /* OCP e4m3fn: only S.1111.111 is special (NaN); no infinities. */
    double want = (v & 0x7f) == 0x7f ? NAN : field_decode(v, 4, 3);
    same_value(mp_e4m3_to_float((uint8_t)v), want);
  }
  assert_true(mp_e4m3_to_float(0x7e) == 448.0f);
  assert_true(mp_e4m3_to_float(0x01) == 0x1p-9f);
}

static void e5m2_decoder_matches_fields_for_all_patterns(void **state) {
  (void)state;
  for (uint32_t v = 0; v < 256; v++) {
    double want = ((v >> 2) & 0x1f) == 0x1f ? ((v & 3) ? NAN : (v & 0x80 ? -INFINITY : INFINITY))
                                            : field_decode(v, 5, 2);
    same_value(mp_e5m2_to_float((uint8_t)v), want);
  }
}

static void every_pattern_round_trips_through_float(void **state) {
  (void)state;
  for (uint32_t v = 0; v < 65536; v++) {
    float h = mp_fp16_to_float((uint16_t)v), b = mp_bf16_to_float((uint16_t)v);
    if (!isnan(h)) assert_int_equal(mp_float_to_fp16(h), v);
    if (!isnan(b)) assert_int_equal(mp_float_to_bf16(b), v);
  }
  for (uint32_t v = 0; v < 256; v++) {
    float a = mp_e4m3_to_float((uint8_t)v), b = mp_e5m2_to_float((uint8_t)v);
    if (!isnan(a)) {
      assert_int_equal(mp_float_to_e4m3(a, false), v);
      assert_int_equal(mp_float_to_e4m3(a, true), v);
    }
    if (!isnan(b)) assert_int_equal(mp_float_to_e5m2(b, false), v);
  }
}

/* What an encoder must produce for x (finite or not), as a value. */
static double expected_encoding(float x, mp_target t, bool saturate) {
  if (isnan(x)) return NAN;
  double max = ref_formats[t].max_finite;
  bool has_inf = t != MP_TGT_FP8_E4M3;
  double r = isinf(x) ? INFINITY : ref_round(x, t);
  if (r > max) {
    if (saturate)
      r = max;
    else
      r = has_inf ? INFINITY : NAN;
  }
  return signbit(x) ? -r : r;
}

static double encode_decode(float x, mp_target t, bool saturate) {
  switch (t) {
  case MP_TGT_FP16:
    return mp_fp16_to_float(mp_float_to_fp16(x));
  case MP_TGT_BF16:
    return mp_bf16_to_float(mp_float_to_bf16(x));
  case MP_TGT_FP8_E4M3:
    return mp_e4m3_to_float(mp_float_to_e4m3(x, saturate));
  default:
    return mp_e5m2_to_float(mp_float_to_e5m2(x, saturate));
  }
}

/* Floats with every exponent, both signs, and mantissas whose low k bits sit
 * just below, at and just above a tie for every k (plus random ones). */
static void for_sample_floats(void (*check)(float x, void *ctx), void *ctx) {
  uint64_t rng = 12345;
  for (uint32_t sign = 0; sign < 2; sign++)
    for (uint32_t exp = 0; exp < 256; exp++) {
      for (int k = 1; k <= 23; k++) {
        uint32_t half = 1u << (k - 1);
        const uint32_t lows[3] = {half - 1, half, half + 1};
        for (int j = 0; j < 3; j++)
          for (int r = 0; r < 4; r++) {
            uint32_t high = (uint32_t)ref_rand(&rng) & ~((1u << k) - 1) & 0x7fffffu;
            if (r == 0) high &= ~(1u << k); /* an even kept part: the tie rounds down */
            if (r == 1) high |= 1u << k;    /* an odd one: it rounds up */
            uint32_t u = sign << 31 | exp << 23 | ((high | lows[j]) & 0x7fffffu);
            float x;
            memcpy(&x, &u, 4);
            check(x, ctx);
          }
      }
      for (int r = 0; r < 64; r++) {
        uint32_t u = sign << 31 | exp << 23 | ((uint32_t)ref_rand(&rng) & 0x7fffffu);
        float x;
        memcpy(&x, &u, 4);
        check(x, ctx);
      }
    }
}

typedef struct enc_ctx {
  mp_target t;
  bool saturate;
} enc_ctx;

static void check_encoder(float x, void *p) {
  enc_ctx *c = p;
  same_value(encode_decode(x, c->t, c->saturate), expected_encoding(x, c->t, c->saturate));
}

static void fp16_encoder_rounds_to_nearest_even(void **state) {
  (void)state;
  enc_ctx c = {MP_TGT_FP16, false};
  for_sample_floats(check_encoder, &c);
}

static void bf16_encoder_rounds_to_nearest_even(void **state) {
  (void)state;
  enc_ctx c = {MP_TGT_BF16, false};
  for_sample_floats(check_encoder, &c);
}

static void e4m3_encoder_rounds_to_nearest_even(void **state) {
  (void)state;
  enc_ctx c = {MP_TGT_FP8_E4M3, false};
  for_sample_floats(check_encoder, &c);
  c.saturate = true;
  for_sample_floats(check_encoder, &c);
}

static void e5m2_encoder_rounds_to_nearest_even(void **state) {
  (void)state;
  enc_ctx c = {MP_TGT_FP8_E5M2, false};
  for_sample_floats(check_encoder, &c);
  c.saturate = true;
  for_sample_floats(check_encoder, &c);
}

static void check_tf32(float x, void *p) {
  (void)p;
  if (isnan(x) || isinf(x)) {
    same_value(mp_float_to_tf32(x), x);
    return;
  }
  /* tf32: fp32's range, 10 mantissa bits; overflow gives inf. */
  double a = fabs((double)x);
  int e = a == 0 ? -126 : ilogb(a);
  if (e < -126) e = -126;
  double r = ldexp(rint(ldexp(a, 10 - e)), e - 10);
  if (r > 0x1.ffcp127) r = INFINITY;
  same_value(mp_float_to_tf32(x), signbit(x) ? -r : r);
}

static void tf32_rounding_keeps_ten_mantissa_bits(void **state) {
  (void)state;
  for_sample_floats(check_tf32, NULL);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) static uint16_t f16c_convert(float x) {
  return (uint16_t)_cvtss_sh(x, 0); /* imm 0: round to nearest even */
}

static void check_f16c(float x, void *p) {
  (void)p;
  if (isnan(x)) return; /* payload conventions differ (CUDA: canonical 0x7fff) */
  assert_int_equal(mp_float_to_fp16(x), f16c_convert(x));
}
#endif

static void fp16_encoder_agrees_with_the_cpu_f16c_conversion(void **state) {
  (void)state;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  /* CPUID.1:ECX bit 29 (clang 14 has no "f16c" for __builtin_cpu_supports). */
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29))) skip();
  for_sample_floats(check_f16c, NULL);
#else
  skip();
#endif
}

static void ties_round_to_even(void **state) {
  (void)state;
  assert_int_equal(mp_float_to_fp16(1.0f + 0x1p-11f), 0x3c00);     /* down to 1.0 */
  assert_int_equal(mp_float_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02); /* up to even */
  assert_int_equal(mp_float_to_fp16(0x1p-25f), 0x0000);            /* half min subnormal */
  assert_int_equal(mp_float_to_fp16(3 * 0x1p-25f), 0x0002);        /* 1.5 ulp -> 2 ulp */
  assert_int_equal(mp_float_to_fp16(65520.0f), 0x7c00);            /* tie above max: inf */
  assert_int_equal(mp_float_to_fp16(nextafterf(65520.0f, 0)), 0x7bff);
  assert_int_equal(mp_float_to_fp16(0x1p-14f - 0x1p-25f), 0x0400); /* to min normal */
  assert_int_equal(mp_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  assert_int_equal(mp_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  assert_int_equal(mp_float_to_e4m3(464.0f, false), 0x7e);                   /* tie to even 448 */
  assert_int_equal(mp_float_to_e4m3(nextafterf(464.0f, 1000), false), 0x7f); /* NaN */
  assert_int_equal(mp_float_to_e4m3(-500.0f, true), 0xfe);
  assert_int_equal(mp_float_to_e4m3(0x1p-10f, false), 0x00);
  assert_int_equal(mp_float_to_e4m3(nextafterf(0x1p-10f, 1), false), 0x01);
  assert_int_equal(mp_float_to_e5m2(61440.0f, false), 0x7c);
  assert_int_equal(mp_float_to_e5m2(nextafterf(61440.0f, 0), false), 0x7b);
  assert_int_equal(mp_float_to_e5m2(61440.0f, true), 0x7b);
  assert_int_equal(mp_float_to_e5m2(0x1p-17f, false), 0x00);
}

static void nan_and_inf_follow_cuda_conventions(void **state) {
  (void)state;
  assert_int_equal(mp_float_to_fp16(NAN), 0x7fff);
  assert_int_equal(mp_float_to_bf16(-NAN), 0x7fff);
  assert_int_equal(mp_float_to_fp16(-INFINITY), 0xfc00);
  assert_int_equal(mp_float_to_bf16(INFINITY), 0x7f80);
  assert_int_equal(mp_float_to_e4m3(NAN, true), 0x7f);
  assert_int_equal(mp_float_to_e4m3(INFINITY, false), 0x7f);
  assert_int_equal(mp_float_to_e4m3(-INFINITY, true), 0xfe);
  assert_int_equal(mp_float_to_e5m2(INFINITY, false), 0x7c);
  assert_int_equal(mp_float_to_e5m2(-INFINITY, true), 0xfb);
  assert_true(isnan(mp_e5m2_to_float(mp_float_to_e5m2(NAN, false))));
  assert_true(isnan(mp_float_to_tf32(NAN)));
}

static void load_and_store_round_trip_every_dtype(void **state) {
  (void)state;
  unsigned char buf[64];
  const double v[] = {1.5, -0.25, 0.0, 3.0};
  for (int d = 0; d < MP_DTYPE_COUNT; d++)
    for (int i = 0; i < 4; i++) {
      memset(buf, 0xa5, sizeof buf);
      mp_store((mp_dtype)d, buf, (uint64_t)i + 1, v[i]);
      assert_true(mp_load((mp_dtype)d, buf, (uint64_t)i + 1) == (d >= MP_INT8 ? rint(v[i]) : v[i]));
    }
  mp_store(MP_FP16, buf, 0, 65520.0);
  assert_true(isinf(mp_load(MP_FP16, buf, 0)));
  mp_store(MP_INT8, buf, 0, 1000.0);
  assert_true(mp_load(MP_INT8, buf, 0) == 127.0);
  mp_store(MP_INT8, buf, 0, 2.5);
  assert_true(mp_load(MP_INT8, buf, 0) == 2.0);
  mp_store(MP_TF32, buf, 0, 1.0 + 0x1p-11);
  assert_true(mp_load(MP_TF32, buf, 0) == 1.0);
  assert_true(isnan(mp_load(MP_DTYPE_INVALID, buf, 0)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp16_decoder_matches_fields_for_all_patterns),
      cmocka_unit_test(bf16_decoder_matches_fields_for_all_patterns),
      cmocka_unit_test(e4m3_decoder_matches_fields_for_all_patterns),
      cmocka_unit_test(e5m2_decoder_matches_fields_for_all_patterns),
      cmocka_unit_test(every_pattern_round_trips_through_float),
      cmocka_unit_test(fp16_encoder_rounds_to_nearest_even),
      cmocka_unit_test(bf16_encoder_rounds_to_nearest_even),
      cmocka_unit_test(e4m3_encoder_rounds_to_nearest_even),
      cmocka_unit_test(e5m2_encoder_rounds_to_nearest_even),
      cmocka_unit_test(tf32_rounding_keeps_ten_mantissa_bits),
      cmocka_unit_test(fp16_encoder_agrees_with_the_cpu_f16c_conversion),
      cmocka_unit_test(ties_round_to_even),
      cmocka_unit_test(nan_and_inf_follow_cuda_conventions),
      cmocka_unit_test(load_and_store_round_trip_every_dtype),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
