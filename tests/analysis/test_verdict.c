/* The layer verdict (analysis/verdict.h) as a pure function of the tensors'
 * advice: each verdict at its boundary, and the reason codes that explain it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analysis/verdict.h"

static mp_advice_params prm;

static int setup(void **state) {
  (void)state;
  mp_advice_params_default(&prm);
  return 0;
}

/* A tensor that fits fp16 at scale 1, bf16 and fp8. */
static mp_advice fits_all(void) {
  return (mp_advice){.fp16 = MP_FP16_SAFE,
                     .has_window = true,
                     .window_lo = -3,
                     .window_hi = 12,
                     .bf16_ok = true,
                     .fp8_e4m3 = {.fits = true},
                     .fp8_e5m2 = {.fits = true}};
}

static mp_verdict_tensor in(mp_tclass cls, const mp_advice *a) {
  return (mp_verdict_tensor){.cls = cls, .has_values = true, .adv = a, .nonzero = 100};
}

static bool has_reason(const mp_layer_verdict *v, mp_reason_code c, int tensor) {
  for (size_t i = 0; i < v->n_reasons; i++)
    if (v->reasons[i].code == c && v->reasons[i].tensor == tensor) return true;
  return false;
}

static void forward_and_gradients_that_fit_give_fp16(void **state) {
  (void)state;
  mp_advice f = fits_all(), g = fits_all();
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f), in(MP_TCLASS_GRADIENT, &g)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 2, &prm, &v), 0);
  assert_true(v.known);
  assert_int_equal(v.rec, MP_REC_FP16);
  assert_true(v.has_window);
  assert_int_equal(v.window_lo, -3);
  assert_true(has_reason(&v, MP_REASON_REC_FP16, -1));
  assert_true(has_reason(&v, MP_REASON_FP8_E4M3, -1));
  assert_true(has_reason(&v, MP_REASON_FP8_E5M2, -1));
  mp_layer_verdict_free(&v);
}

static void underflowing_gradients_with_a_common_window_give_fp16_loss_scale(void **state) {
  (void)state;
  mp_advice f = fits_all(), g1 = fits_all(), g2 = fits_all();
  g1.fp16 = g2.fp16 = MP_FP16_LOSS_SCALE;
  g1.window_lo = 4, g1.window_hi = 20;
  g2.window_lo = 8, g2.window_hi = 30;
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f), in(MP_TCLASS_GRADIENT, &g1),
                           in(MP_TCLASS_GRADIENT, &g2)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 3, &prm, &v), 0);
  assert_int_equal(v.rec, MP_REC_FP16_LOSS_SCALE);
  assert_int_equal(v.window_lo, 8); /* the intersection */
  assert_int_equal(v.window_hi, 20);
  assert_true(has_reason(&v, MP_REASON_GRAD_WINDOW, 1));
  assert_true(has_reason(&v, MP_REASON_GRAD_WINDOW, 2));
  mp_layer_verdict_free(&v);
}

/* Windows the search range cut: the layer's window is the intersection of
 * the windows shown, its true edges (beyond_lo, beyond_hi) the intersection
 * of the gradients' true edges, whichever gradient binds them. */
static void the_true_edges_of_cut_windows_intersect_too(void **state) {
  (void)state;
  mp_advice f = fits_all(), g1 = fits_all(), g2 = fits_all();
  g1.fp16 = g2.fp16 = MP_FP16_LOSS_SCALE;
  g1.window_lo = 16, g1.window_hi = 32, g1.beyond_hi = 23; /* truly [16, 55] */
  g2.window_lo = 10, g2.window_hi = 32, g2.beyond_hi = 4;  /* truly [10, 36] */
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f), in(MP_TCLASS_GRADIENT, &g1),
                           in(MP_TCLASS_GRADIENT, &g2)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 3, &prm, &v), 0);
  assert_int_equal(v.window_lo, 16);
  assert_int_equal(v.window_hi, 32);
  assert_int_equal(v.beyond_lo, 0);
  assert_int_equal(v.beyond_hi, 4); /* [16, 36] */
  mp_layer_verdict_free(&v);
  g1.window_lo = -32, g1.window_hi = -5, g1.beyond_lo = 3, g1.beyond_hi = 0; /* [-35, -5] */
  g2.window_lo = -32, g2.window_hi = -2, g2.beyond_lo = 9, g2.beyond_hi = 0; /* [-41, -2] */
  assert_int_equal(mp_layer_verdict_of(t, 3, &prm, &v), 0);
  assert_int_equal(v.window_lo, -32);
  assert_int_equal(v.window_hi, -5);
  assert_int_equal(v.beyond_lo, 3);
  assert_int_equal(v.beyond_hi, 0);
  mp_layer_verdict_free(&v);
}

static void disjoint_gradient_windows_fall_back_to_bf16(void **state) {
  (void)state;
  mp_advice f = fits_all(), g1 = fits_all(), g2 = fits_all();
  g1.fp16 = g2.fp16 = MP_FP16_LOSS_SCALE;
  g1.window_lo = 4, g1.window_hi = 7;
  g2.window_lo = 8, g2.window_hi = 30;
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f), in(MP_TCLASS_GRADIENT, &g1),
                           in(MP_TCLASS_GRADIENT, &g2)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 3, &prm, &v), 0);
  assert_int_equal(v.rec, MP_REC_BF16);
  assert_false(v.has_window); /* a loss scale only matters to fp16 layers */
  assert_true(has_reason(&v, MP_REASON_WINDOWS_DISJOINT, -1));
  mp_layer_verdict_free(&v);
}

static void a_forward_overflow_is_not_rescued_by_a_loss_scale(void **state) {
  (void)state;
  mp_advice f = fits_all();
  f.fp16 = MP_FP16_UNSAFE;
  f.fp16_overflow_fraction = 0.01;
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 1, &prm, &v), 0);
  assert_int_equal(v.rec, MP_REC_BF16);
  assert_true(has_reason(&v, MP_REASON_FWD_FP16_OVERFLOW, 0));
  assert_false(has_reason(&v, MP_REASON_FWD_FP16_UNDERFLOW, 0));
  mp_layer_verdict_free(&v);
}

static void a_forward_underflow_beyond_the_allowance_is_named_as_such(void **state) {
  (void)state;
  mp_advice f = fits_all();
  f.fp16 = MP_FP16_UNSAFE;
  f.fp16_underflow_fraction = 0.2;
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 1, &prm, &v), 0);
  assert_true(has_reason(&v, MP_REASON_FWD_FP16_UNDERFLOW, 0));
  mp_layer_verdict_free(&v);
}

static void values_beyond_bf16_keep_fp32(void **state) {
  (void)state;
  mp_advice f = fits_all();
  f.fp16 = MP_FP16_UNSAFE;
  f.fp16_overflow_fraction = 1;
  f.bf16_ok = false;
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f)};
  t[0].bf16_overflow = 25;
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 1, &prm, &v), 0);
  assert_int_equal(v.rec, MP_REC_FP32);
  assert_true(v.bf16_overflow == 0.25);
  assert_true(has_reason(&v, MP_REASON_BF16_UNFIT, 0));
  assert_true(has_reason(&v, MP_REASON_REC_FP32, -1));
  mp_layer_verdict_free(&v);
}

static void a_gradient_without_any_window_prevents_fp16(void **state) {
  (void)state;
  mp_advice f = fits_all(), g = fits_all();
  g.fp16 = MP_FP16_UNSAFE;
  g.has_window = false;
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f), in(MP_TCLASS_GRADIENT, &g)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 2, &prm, &v), 0);
  assert_int_equal(v.rec, MP_REC_BF16);
  assert_true(has_reason(&v, MP_REASON_GRAD_NO_WINDOW, 1));
  mp_layer_verdict_free(&v);
}

static void ambiguous_and_optimizer_tensors_take_no_part(void **state) {
  (void)state;
  mp_advice bad = fits_all();
  bad.fp16 = MP_FP16_UNSAFE;
  bad.bf16_ok = false;
  bad.nonfinite_input = true;
  mp_verdict_tensor t[] = {in(MP_TCLASS_AMBIGUOUS, &bad), in(MP_TCLASS_OPTIMIZER, &bad)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 2, &prm, &v), 0);
  assert_false(v.known);
  assert_int_equal(v.n_reasons, 1);
  assert_int_equal(v.reasons[0].code, MP_REASON_NO_VALUES);
  assert_int_equal(v.fp8_e4m3_fits, -1);
  assert_int_equal(v.fp8_e5m2_fits, -1);
  mp_layer_verdict_free(&v);
}

static void gradients_scanned_but_never_finite_and_non_zero_give_no_verdict(void **state) {
  (void)state;
  mp_advice f = fits_all(), g = fits_all();
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f), in(MP_TCLASS_GRADIENT, &g)};
  t[1].has_values = false; /* all zeros (or Inf/NaN) in every scanned call */
  t[1].count = 640;
  t[1].nonzero = 0;
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 2, &prm, &v), 0);
  assert_false(v.known); /* not fp16 on the forward tensors' word alone */
  assert_true(has_reason(&v, MP_REASON_GRAD_NEVER_SEEN, 1));
  assert_int_equal(v.fp8_e4m3_fits, -1); /* nor fp8 */
  assert_int_equal(v.fp8_e5m2_fits, -1);
  mp_layer_verdict_free(&v);
  t[1].count = 0; /* never scanned: the forward tensors decide */
  assert_int_equal(mp_layer_verdict_of(t, 2, &prm, &v), 0);
  assert_true(v.known);
  assert_int_equal(v.rec, MP_REC_FP16);
  mp_layer_verdict_free(&v);
}

static void non_finite_inputs_are_a_reason_of_their_own(void **state) {
  (void)state;
  mp_advice f = fits_all();
  f.nonfinite_input = true;
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 1, &prm, &v), 0);
  assert_int_equal(v.reasons[0].code, MP_REASON_NONFINITE_INPUT);
  assert_int_equal(v.reasons[0].tensor, 0);
  mp_layer_verdict_free(&v);
}

/* NaN/Inf computed in fp32 (nonfinite_wide): the layer stays fp32 and fits
 * no fp8, whatever its finite values allow. */
static void non_finite_values_made_in_fp32_keep_the_layer_in_fp32(void **state) {
  (void)state;
  mp_advice f = fits_all();
  f.nonfinite_input = true;
  f.fp8_e4m3.fits = true;
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f)};
  t[0].nonfinite_wide = true;
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 1, &prm, &v), 0);
  assert_int_equal(v.rec, MP_REC_FP32);
  assert_true(v.nonfinite_wide);
  assert_int_equal(v.fp8_e4m3_fits, 0);
  assert_true(has_reason(&v, MP_REASON_NONFINITE_WIDE, 0));
  assert_false(has_reason(&v, MP_REASON_NONFINITE_INPUT, 0));
  mp_layer_verdict_free(&v);
  t[0].nonfinite_wide = false; /* an fp16 source's Inf: the finite values decide */
  assert_int_equal(mp_layer_verdict_of(t, 1, &prm, &v), 0);
  assert_int_equal(v.rec, MP_REC_FP16);
  mp_layer_verdict_free(&v);
}

/* An fp32 output made all NaN/Inf from finite inputs holds no finite value
 * (has_values false), yet it is the strongest evidence a layer has: fp32,
 * not the verdict its inputs alone would give. */
static void an_output_made_all_non_finite_in_fp32_keeps_the_layer_in_fp32(void **state) {
  (void)state;
  mp_advice f = fits_all(), o = fits_all();
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f), in(MP_TCLASS_FORWARD, &o)};
  t[1].has_values = false;
  t[1].nonfinite_wide = true;
  t[1].count = 64;
  t[1].nonzero = 0;
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 2, &prm, &v), 0);
  assert_true(v.known);
  assert_int_equal(v.rec, MP_REC_FP32);
  assert_true(v.nonfinite_wide);
  assert_true(has_reason(&v, MP_REASON_NONFINITE_WIDE, 1));
  assert_int_equal(v.fp8_e4m3_fits, 0);
  mp_layer_verdict_free(&v);
  /* The same as a gradient (no loss scale): fp32, not "never seen". */
  t[1].cls = MP_TCLASS_GRADIENT;
  assert_int_equal(mp_layer_verdict_of(t, 2, &prm, &v), 0);
  assert_true(v.known);
  assert_int_equal(v.rec, MP_REC_FP32);
  assert_false(has_reason(&v, MP_REASON_GRAD_NEVER_SEEN, 1));
  mp_layer_verdict_free(&v);
  /* Alone in its layer, it still decides. */
  assert_int_equal(mp_layer_verdict_of(&t[1], 1, &prm, &v), 0);
  assert_true(v.known);
  assert_int_equal(v.rec, MP_REC_FP32);
  mp_layer_verdict_free(&v);
}

static void fp8_fit_is_the_worst_tensor_per_direction(void **state) {
  (void)state;
  mp_advice f1 = fits_all(), f2 = fits_all(), g = fits_all();
  f1.fp8_e4m3.underflow_fraction = 0.001;
  f2.fp8_e4m3 = (mp_fp8_advice){.fits = false, .underflow_fraction = 0.5};
  mp_verdict_tensor t[] = {in(MP_TCLASS_FORWARD, &f1), in(MP_TCLASS_FORWARD, &f2),
                           in(MP_TCLASS_GRADIENT, &g)};
  mp_layer_verdict v;
  assert_int_equal(mp_layer_verdict_of(t, 3, &prm, &v), 0);
  assert_int_equal(v.fp8_e4m3_fits, 0);
  assert_true(v.fp8_e4m3_underflow == 0.5);
  assert_int_equal(v.fp8_e5m2_fits, 1);
  mp_layer_verdict_free(&v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(forward_and_gradients_that_fit_give_fp16, setup),
      cmocka_unit_test_setup(underflowing_gradients_with_a_common_window_give_fp16_loss_scale,
                             setup),
      cmocka_unit_test_setup(the_true_edges_of_cut_windows_intersect_too, setup),
      cmocka_unit_test_setup(disjoint_gradient_windows_fall_back_to_bf16, setup),
      cmocka_unit_test_setup(a_forward_overflow_is_not_rescued_by_a_loss_scale, setup),
      cmocka_unit_test_setup(a_forward_underflow_beyond_the_allowance_is_named_as_such, setup),
      cmocka_unit_test_setup(values_beyond_bf16_keep_fp32, setup),
      cmocka_unit_test_setup(a_gradient_without_any_window_prevents_fp16, setup),
      cmocka_unit_test_setup(ambiguous_and_optimizer_tensors_take_no_part, setup),
      cmocka_unit_test_setup(gradients_scanned_but_never_finite_and_non_zero_give_no_verdict,
                             setup),
      cmocka_unit_test_setup(non_finite_inputs_are_a_reason_of_their_own, setup),
      cmocka_unit_test_setup(non_finite_values_made_in_fp32_keep_the_layer_in_fp32, setup),
      cmocka_unit_test_setup(an_output_made_all_non_finite_in_fp32_keeps_the_layer_in_fp32, setup),
      cmocka_unit_test_setup(fp8_fit_is_the_worst_tensor_per_direction, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
