/* The report in unscaled terms, from hand-made raw files (docs/report.md):
 * one denominator per share, gradients divided by their site's declared loss
 * scale, the flushed-gradient and unknown-scale rules, one fp8 finding. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "rawgen.h"
#include "report_fixture.h"
#include "report/report.h"
#include "report/report_internal.h"

static cJSON *site(int id, const char *layer_path, const char *types) {
  return rg_gemm(id, "cublasGemmEx", layer_path, types, "32F", "DEFAULT", 16, 16, 16, 2);
}

static void a_share_is_of_the_finite_non_zero_values_and_the_finding_quotes_it(void **state) {
  (void)state;
  char *dir = rg_tmpdir("share");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &RF_P0), 0);
  cJSON *s = site(0, "net/fc/fwd", "A=fp32,B=fp32,D=fp32");
  const double ab[] = {1, 2, 3, 4};
  rg_tensor_values(s, "A", MP_FP32, ab, 4);
  /* 2 zeros and a NaN are not in the base: 1 overflow of 3 finite non-zero values */
  const double d[] = {0, 0, NAN, 1e5, 1.0, 2.0};
  rg_tensor_values(s, "D", MP_FP32, d, 6);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  cJSON *rep = rf_report_of(dir);
  const cJSON *sh = rf_get(rf_layer(rep, "net/fc"), "shares.fp16_overflow");
  assert_string_equal(rf_get(sh, "tensor")->valuestring, "forward.D");
  assert_int_equal(rf_get(sh, "of")->valuedouble, 3);
  assert_int_equal(rf_get(sh, "count")->valuedouble, 1);
  assert_true(fabs(rf_get(sh, "pct")->valuedouble - 100.0 / 3) < 1e-12);
  assert_true(rf_get(rf_layer(rep, "net/fc"), "percent.fp16_overflow")->valuedouble ==
              rf_get(sh, "pct")->valuedouble);
  const cJSON *f = rf_finding(rep, "fp16_overflow", "net/fc");
  assert_non_null(f);
  assert_true(fabs(100 * rf_get(f, "evidence.overflow_fraction")->valuedouble -
                   rf_get(sh, "pct")->valuedouble) < 1e-12);
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

/* "e:count," for every non-empty binade of an exp_hist object. */
static void nonzero_bins(const cJSON *h, char *out, size_t n) {
  int e = (int)rf_get(h, "lo")->valuedouble;
  size_t len = 0;
  out[0] = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, rf_get(h, "counts")) {
    if (c->valuedouble != 0 && len < n)
      len += (size_t)snprintf(out + len, n - len, "%d:%.0f,", e, c->valuedouble);
    e++;
  }
}

/* Gradient values 2^-30 .. 2^-20, at a loss scale of 2^16 or as they are. */
static void gradient_site(rg_file *r, int id, const char *layer_path, double scale) {
  cJSON *s = site(id, layer_path, "A=fp16,B=fp16,D=fp32");
  double v[64];
  for (int i = 0; i < 64; i++)
    v[i] = ldexp(1.0 + (i % 7) / 8.0, -30 + i % 11) * (scale > 0 ? scale : 1);
  rg_tensor_values(s, "D", MP_FP32, v, 64);
  if (scale > 0) cJSON_AddNumberToObject(s, "loss_scale", scale);
  rg_site_end(r, s);
}

/* At a loss scale of 2 the gradient holds 131060: 65530 unscaled, beyond
 * fp16's range. The cast counts come from the histogram (binade 15 also holds
 * 65500, which fits): an estimate, said so, that keeps the overflow the
 * largest |x| proves, so the layer is not called fp16 as is. */
static void a_gradient_overflowing_fp16_once_unscaled_is_not_fp16(void **state) {
  (void)state;
  char *dir = rg_tmpdir("unscale_edge");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &RF_P0), 0);
  cJSON *s = site(0, "edge/bwd", "A=fp16,B=fp16,D=fp32");
  double v[64];
  for (int i = 0; i < 64; i++)
    v[i] = 2.0;
  v[0] = 131000;
  v[1] = 131060;
  rg_tensor_values(s, "D", MP_FP32, v, 64);
  cJSON_AddNumberToObject(s, "loss_scale", 2);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  cJSON *rep = rf_report_of(dir);
  const cJSON *d = cJSON_GetObjectItem(rf_get(rf_layer(rep, "edge"), "tensors"), "backward.D");
  assert_string_equal(rf_get(d, "loss_scale.values")->valuestring, "unscaled_estimate");
  assert_int_equal(rf_get(d, "casts.fp16.overflow")->valueint, 1);
  assert_string_not_equal(rf_get(rf_layer(rep, "edge"), "advice.recommended")->valuestring, "fp16");
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

static void gradients_are_divided_by_the_declared_scale_of_their_site(void **state) {
  (void)state;
  char *dir = rg_tmpdir("unscale");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &RF_P0), 0);
  gradient_site(&r, 0, "scaled/bwd", 65536);
  gradient_site(&r, 1, "plain/bwd", 0);
  assert_int_equal(rg_end(&r), 0);
  cJSON *rep = rf_report_of(dir);
  const cJSON *a = rf_get(rf_layer(rep, "scaled"), "tensors"),
              *b = rf_get(rf_layer(rep, "plain"), "tensors");
  const cJSON *da = cJSON_GetObjectItem(a, "backward.D"),
              *db = cJSON_GetObjectItem(b, "backward.D");
  /* the same true values: the same histogram, window and verdict */
  char ha[512], hb[512];
  nonzero_bins(rf_get(da, "exp_hist"), ha, sizeof ha);
  nonzero_bins(rf_get(db, "exp_hist"), hb, sizeof hb);
  assert_string_equal(ha, hb);
  assert_true(strlen(ha) > 0);
  assert_true(cJSON_Compare(rf_get(da, "advice.loss_scale_log2"),
                            rf_get(db, "advice.loss_scale_log2"), true));
  /* the histogram moved exactly, but 2^-25 (flushes) and 1.625 * 2^-25 (does
   * not) share a binade: the flush count of the unscaled values is an estimate */
  assert_string_equal(rf_get(da, "loss_scale.values")->valuestring, "unscaled_estimate");
  assert_true(rf_get(da, "loss_scale.applied_max")->valuedouble == 65536);
  assert_true(cJSON_IsTrue(rf_get(db, "loss_scale.undeclared")));
  /* at the applied scale 2^16 the scaled layer's gradients do not flush; unscaled they do */
  assert_true(
      rf_get(rf_layer(rep, "scaled"), "shares.fp16_underflow_at_applied_scale.pct")->valuedouble <
      rf_get(rf_layer(rep, "scaled"), "shares.fp16_underflow.pct")->valuedouble);
  assert_true(cJSON_IsTrue(rf_get(rep, "loss_scale.applied.known")));
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

static void mostly_zero_fp16_gradients_at_scale_1_are_called_flushed(void **state) {
  (void)state;
  char *dir = rg_tmpdir("flushed");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &RF_P0), 0);
  cJSON *s = site(0, "l/fwd", "A=fp16,B=fp16,D=fp16");
  const double fwd[] = {1, 2, 3, 4, 5, 6, 7, 8};
  rg_tensor_values(s, "D", MP_FP16, fwd, 8);
  rg_site_end(&r, s);
  s = site(1, "l/bwd", "A=fp16,B=fp16,D=fp16");
  const double bwd[] = {0, 0, 0, 0, 0, 0x1p-10, 0x1p-12, 0x1p-11};
  rg_tensor_values(s, "D", MP_FP16, bwd, 8);
  cJSON_AddNumberToObject(s, "loss_scale", 1);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  cJSON *rep = rf_report_of(dir);
  const cJSON *f = rf_finding(rep, "gradients_flushed", "l");
  assert_non_null(f);
  assert_true(fabs(rf_get(f, "evidence.zero_fraction")->valuedouble - 5.0 / 8) < 1e-12);
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

static void nonfinite_gradients_without_a_declared_scale_make_it_unknown(void **state) {
  (void)state;
  char *dir = rg_tmpdir("unknown");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &RF_P0), 0);
  cJSON *s = site(0, "l/bwd", "A=fp16,B=fp16,D=fp32");
  const double d[] = {1, 2, INFINITY, 3};
  rg_tensor_values(s, "D", MP_FP32, d, 4);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  cJSON *rep = rf_report_of(dir);
  const cJSON *note = rf_get(rep, "summary.loss_scale_note");
  assert_true(cJSON_IsString(note));
  assert_string_equal(note->valuestring, MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE);
  assert_non_null(rf_finding(rep, "loss_scale_unknown", NULL));
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

static void fp8_candidates_are_one_finding_listing_only_16_bit_layers(void **state) {
  (void)state;
  char *dir = rg_tmpdir("fp8");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &RF_P0), 0);
  const char *names[] = {"a/fwd", "b/fwd", "c/fwd"};
  for (int i = 0; i < 3; i++) {
    cJSON *s = site(i, names[i], "A=fp16,B=fp16,D=fp32");
    /* c overflows fp16 (kept in bf16) though its range fits fp8 with a per-tensor scale */
    rg_tensor(s, "D", MP_FP32, i == 2 ? 16 : -2, i == 2 ? 18 : 2, 200);
    rg_site_end(&r, s);
  }
  assert_int_equal(rg_end(&r), 0);
  cJSON *rep = rf_report_of(dir);
  int n = 0;
  const cJSON *f, *fp8 = NULL;
  cJSON_ArrayForEach(f, rf_get(rep, "findings")) {
    if (!strcmp(rf_get(f, "kind")->valuestring, "fp8_candidate")) n++, fp8 = f;
  }
  assert_int_equal(n, 1);
  assert_true(cJSON_IsNull(rf_get(fp8, "layer")));
  const cJSON *ls = rf_get(fp8, "evidence.layers");
  assert_int_equal(cJSON_GetArraySize(ls), 2);
  cJSON_ArrayForEach(f, ls) assert_string_not_equal(f->valuestring, "c");
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_share_is_of_the_finite_non_zero_values_and_the_finding_quotes_it),
      cmocka_unit_test(gradients_are_divided_by_the_declared_scale_of_their_site),
      cmocka_unit_test(a_gradient_overflowing_fp16_once_unscaled_is_not_fp16),
      cmocka_unit_test(mostly_zero_fp16_gradients_at_scale_1_are_called_flushed),
      cmocka_unit_test(nonfinite_gradients_without_a_declared_scale_make_it_unknown),
      cmocka_unit_test(fp8_candidates_are_one_finding_listing_only_16_bit_layers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
