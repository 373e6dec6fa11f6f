/* Stats record <-> JSON: writing then reading (through text, or straight from
 * the in-memory tree) gives back the record bit for bit, and the reader
 * refuses every inconsistency a corrupt file could carry. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analysis/advice.h"
#include "analysis/scan.h"
#include "analysis/schema_keys.h"
#include "helpers.h"
#include "report/tensorio/stats_json.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_u64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Random bit patterns of the dtype: every class of value shows up. */
static mp_stats *random_record(mp_dtype dtype, size_t n) {
  unsigned size = mp_dtype_size(dtype);
  unsigned char *buf = malloc(n * size);
  for (size_t i = 0; i < n * size; i += 8) {
    uint64_t r = next_u64();
    memcpy(buf + i, &r, n * size - i < 8 ? n * size - i : 8);
  }
  mp_stats *s = calloc(1, sizeof *s);
  mp_stats_init(s, dtype);
  assert_int_equal(mp_scan_contiguous(s, buf, n), 0);
  free(buf);
  return s;
}

static mp_stats *through_text(const mp_stats *s) {
  cJSON *j = mpprof_stats_to_json(s, NULL);
  assert_non_null(j);
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  cJSON *back = cJSON_Parse(text);
  free(text);
  assert_non_null(back);
  mp_stats *r = malloc(sizeof *r);
  char err[256] = "";
  int rc = mpprof_stats_from_json(back, r, err, sizeof err);
  if (rc) print_error("%s\n", err);
  assert_int_equal(rc, 0);
  cJSON_Delete(back);
  return r;
}

static void expect_roundtrip(const mp_stats *s) {
  mp_stats *r = through_text(s);
  assert_true(stats_identical(s, r));
  free(r);
}

static void random_fp32_record_roundtrips_bit_for_bit(void **st) {
  (void)st;
  mp_stats *s = random_record(MP_FP32, 4096);
  assert_true(s->nans > 0 && s->negatives > 0);
  expect_roundtrip(s);
  free(s);
}

static void random_records_of_every_source_dtype_roundtrip(void **st) {
  (void)st;
  const mp_dtype d[] = {MP_FP64, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
    mp_stats *s = random_record(d[i], 1000);
    expect_roundtrip(s);
    free(s);
  }
}

static void empty_record_roundtrips_with_its_none_values(void **st) {
  (void)st;
  mp_stats s;
  mp_stats_init(&s, MP_FP32);
  expect_roundtrip(&s);
  mp_stats_add(&s, NAN); /* still no finite value: min etc. stay "none" */
  expect_roundtrip(&s);
}

static void merge_of_different_dtypes_roundtrips_with_null_dtype(void **st) {
  (void)st;
  mp_stats *a = random_record(MP_FP32, 300), *b = random_record(MP_FP16, 300);
  mp_stats_merge(a, b);
  assert_int_equal(a->dtype, MP_DTYPE_INVALID);
  cJSON *j = mpprof_stats_to_json(a, NULL);
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, MP_K_DTYPE)));
  cJSON_Delete(j);
  /* No source format to widen it to: it reads back with the range it was
   * written over, its lowest to its highest non-zero binade. */
  mp_stats *r = through_text(a);
  mp_stats_hist_written(a, &a->hist_lo, &a->hist_hi);
  assert_true(a->hist_lo > -149 && a->hist_hi < 127);
  assert_true(stats_identical(a, r));
  free(r);
  free(a);
  free(b);
}

/* Written: the bins from the lowest to the highest non-zero one (a dozen
 * counts for a tensor spanning a dozen binades, not 277); read back: the
 * format's whole range again. A record without a non-zero value writes the
 * whole range. */
static void histogram_is_written_over_its_nonzero_binades_only(void **st) {
  (void)st;
  mp_stats s;
  mp_stats_init(&s, MP_FP32);
  mp_stats_add(&s, 0.125);
  mp_stats_add(&s, -40.0);
  mp_stats_add(&s, 0.0);
  cJSON *j = mpprof_stats_to_json(&s, NULL);
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  assert_non_null(strstr(text, "\"exp_hist\":{\"lo\":-3,\"hi\":5,\"counts\":[1,0,0,0,0,0,0,0,1]}"));
  free(text);
  mp_stats *r = through_text(&s);
  assert_int_equal(r->hist_lo, -149);
  assert_int_equal(r->hist_hi, 127);
  assert_true(stats_identical(&s, r));
  free(r);
  mp_stats_init(&s, MP_FP16);
  mp_stats_add(&s, 0.0);
  j = mpprof_stats_to_json(&s, NULL);
  text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  assert_non_null(strstr(text, "\"lo\":-24,\"hi\":15,"));
  free(text);
}

static void negative_zero_minimum_keeps_its_sign(void **st) {
  (void)st;
  mp_stats s;
  mp_stats_init(&s, MP_FP64);
  s.min = -0.0;
  s.max = -0.0;
  s.absmax = 0.0;
  s.count = s.zeros = 1;
  mp_stats *r = through_text(&s);
  assert_true(signbit(r->min));
  assert_true(stats_identical(&s, r));
  free(r);
}

static void doubles_one_ulp_apart_stay_apart(void **st) {
  (void)st;
  const double v[] = {0.1,
                      nextafter(0.1, 1),
                      65504.0,
                      nextafter(65520.0, 0),
                      0x1p-1074,
                      1.7976931348623157e308,
                      -3.0000000000000004};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    mp_stats s;
    mp_stats_init(&s, MP_FP64);
    mp_stats_add(&s, v[i]);
    expect_roundtrip(&s);
  }
}

/* The definition mpprof_double_text must match byte for byte. */
static void printf_text(double d, char *buf) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, 40, "%.*g", prec, d);
    if (strtod(buf, NULL) == d) return;
  }
}

static void expect_printf_text(double d) {
  char want[40], got[40];
  if (!isfinite(d)) { /* null in JSON */
    assert_int_equal(mpprof_double_text(d, got), 0);
    return;
  }
  printf_text(d, want);
  size_t n = mpprof_double_text(d, got);
  if (n != strlen(want) || strcmp(got, want))
    fail_msg("%a: \"%.40s\", printf gives \"%s\"", d, n ? got : "", want);
  assert_true(strtod(got, NULL) == d && signbit(strtod(got, NULL)) == signbit(d));
}

static void expect_printf_text_near(double d) {
  double v = d;
  for (int i = 0; i < 3; i++, v = nextafter(v, INFINITY))
    expect_printf_text(v), expect_printf_text(-v);
  v = d;
  for (int i = 0; i < 3; i++, v = nextafter(v, 0))
    expect_printf_text(v), expect_printf_text(-v);
}

static void double_text_is_the_shortest_printf_text_that_reads_back(void **st) {
  (void)st;
  /* where the digits, the notation or the exact path change */
  for (int e = -1074; e <= 1023; e++)
    expect_printf_text_near(ldexp(1, e)); /* powers of two: the gap below halves */
  for (int e = -320; e <= 308; e++)
    expect_printf_text_near(pow(10, e)); /* %g's switch to e-notation at 1e-5 and 1e15..1e17 */
  const double v[] = {0.0,
                      -0.0,
                      0.5,
                      2.5,
                      1e15 - 0.5,
                      999999999999999.9,
                      0.1,
                      1.0 / 3,
                      2.0 / 3,
                      65504.0,
                      0x1p-24,
                      9.313225746154785e-10,
                      DBL_MIN,
                      DBL_MAX,
                      0x1p-1074,
                      4.9406564584124654e-324,
                      15.402557744209089};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    expect_printf_text_near(v[i]);
  for (uint64_t k = 1; k < 4096; k++) /* short decimals and ties of %.15g */
    expect_printf_text((double)k / 1024), expect_printf_text((double)k * 0.001),
        expect_printf_text((double)k * 1e13 + 0.5);
  for (int i = 0; i < 200000; i++) {
    uint64_t r = next_u64();
    double d;
    memcpy(&d, &r, sizeof d);
    if (isfinite(d)) expect_printf_text(d);
    expect_printf_text(ldexp((double)(r >> 11), (int)(next_u64() % 160) - 120));
  }
}

static void counts_beyond_32_bits_are_exact(void **st) {
  (void)st;
  mp_stats s;
  mp_stats_init(&s, MP_FP32);
  const uint64_t big = (1ull << 53) - 1;
  s.count = s.zeros = big;
  expect_roundtrip(&s);
  s.count = s.zeros = 5000000000ull;
  expect_roundtrip(&s);
}

static void in_memory_tree_reads_back_without_printing(void **st) {
  (void)st;
  mp_stats *s = random_record(MP_FP32, 512);
  cJSON *j = mpprof_stats_to_json(s, NULL);
  mp_stats *r = malloc(sizeof *r);
  char err[256];
  assert_int_equal(mpprof_stats_from_json(j, r, err, sizeof err), 0);
  assert_true(stats_identical(s, r));
  cJSON_Delete(j);
  free(r);
  free(s);
}

static void advice_key_is_present_only_when_given(void **st) {
  (void)st;
  mp_stats *s = random_record(MP_FP32, 256);
  cJSON *j = mpprof_stats_to_json(s, NULL);
  assert_null(cJSON_GetObjectItemCaseSensitive(j, MP_K_ADVICE));
  cJSON_Delete(j);
  mp_advice_params p;
  mp_advice_params_default(&p);
  mp_advice a;
  mp_advise(s, &p, &a);
  j = mpprof_stats_to_json(s, &a);
  const cJSON *adv = cJSON_GetObjectItemCaseSensitive(j, MP_K_ADVICE);
  const char *keys[] = {"fp16",     "loss_scale_log2", "loss_scale_estimate",
                        "fp8_e4m3", "fp8_e5m2",        "recommended"};
  assert_int_equal(cJSON_GetArraySize(adv), 6);
  for (int i = 0; i < 6; i++)
    assert_non_null(cJSON_GetObjectItemCaseSensitive(adv, keys[i]));
  const cJSON *f8 = cJSON_GetObjectItemCaseSensitive(adv, "fp8_e4m3");
  assert_true(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(f8, "fits")));
  assert_non_null(cJSON_GetObjectItemCaseSensitive(f8, "scale_log2"));
  assert_non_null(cJSON_GetObjectItemCaseSensitive(f8, "underflow_fraction"));
  assert_true(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(f8, "estimate")));
  /* Readers ignore advice: the record still reads back. */
  mp_stats *r = malloc(sizeof *r);
  char err[256];
  assert_int_equal(mpprof_stats_from_json(j, r, err, sizeof err), 0);
  assert_true(stats_identical(s, r));
  cJSON_Delete(j);
  free(r);
  free(s);
}

static void loss_scale_window_is_a_pair_or_null(void **st) {
  (void)st;
  mp_advice a;
  memset(&a, 0, sizeof a);
  a.judged = true;
  a.has_window = true;
  a.window_lo = -3;
  a.window_hi = 12;
  cJSON *j = mpprof_advice_to_json(&a);
  char *text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "loss_scale_log2"));
  assert_string_equal(text, "[-3,12]");
  free(text);
  cJSON_Delete(j);
  a.has_window = false;
  j = mpprof_advice_to_json(&a);
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "loss_scale_log2")));
  cJSON_Delete(j);
}

/* No finite non-zero value (an all-zero tensor): nothing to judge, so
 * every verdict is null as recommended is. They said fp16 "safe", a window
 * of the whole search range and fp8 "fits at 2^0", true of no value. */
static void a_tensor_with_nothing_to_judge_has_null_verdicts(void **st) {
  (void)st;
  mp_stats *s = malloc(sizeof *s);
  assert_non_null(s);
  mp_stats_init(s, MP_FP32);
  const float zeros[64] = {0};
  mp_view v = {.dtype = MP_FP32, .data = zeros, .rows = 64, .cols = 1, .ld = 64, .batch = 1};
  assert_int_equal(mp_scan(s, &v), 0);
  mp_advice a;
  mp_advise(s, NULL, &a);
  assert_false(a.judged);
  cJSON *j = mpprof_advice_to_json(&a);
  static const char *const keys[] = {"fp16", "loss_scale_log2", "fp8_e4m3", "fp8_e5m2",
                                     "recommended"};
  for (int i = 0; i < 5; i++)
    if (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, keys[i])))
      fail_msg("%s is not null for an all-zero tensor", keys[i]);
  assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "loss_scale_estimate")));
  cJSON_Delete(j);
  free(s);
}

/* ---- the reader's checks ---- */

/* A valid record's JSON text with `from` replaced by `to`, read back: must fail
 * with `problem` in the message. */
static void expect_refused(const char *from, const char *to, const char *problem) {
  mp_stats s;
  mp_stats_init(&s, MP_FP32);
  mp_stats_add(&s, 1.0);
  mp_stats_add(&s, 0.0);
  cJSON *j = mpprof_stats_to_json(&s, NULL);
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  char *at = strstr(text, from);
  if (!at) print_error("'%s' not in %s\n", from, text);
  assert_non_null(at);
  char *edited = malloc(strlen(text) + strlen(to) + 1);
  memcpy(edited, text, (size_t)(at - text));
  strcpy(edited + (at - text), to);
  strcat(edited, at + strlen(from));
  cJSON *back = cJSON_Parse(edited);
  assert_non_null(back);
  mp_stats r;
  char err[256] = "";
  assert_int_equal(mpprof_stats_from_json(back, &r, err, sizeof err), -1);
  if (!strstr(err, problem)) print_error("message '%s' lacks '%s'\n", err, problem);
  assert_non_null(strstr(err, problem));
  cJSON_Delete(back);
  free(edited);
  free(text);
}

static void missing_key_is_refused(void **st) {
  (void)st;
  expect_refused("\"nans\":0,", "", "nans: missing");
}
static void unknown_dtype_is_refused(void **st) {
  (void)st;
  expect_refused("\"fp32\"", "\"fp31\"", "not a source dtype");
}
static void fractional_count_is_refused(void **st) {
  (void)st;
  expect_refused("\"count\":2", "\"count\":2.5", "count: not a non-negative integer");
}
static void negative_count_is_refused(void **st) {
  (void)st;
  expect_refused("\"zeros\":1", "\"zeros\":-1", "zeros: not a non-negative integer");
}
static void count_as_string_is_refused(void **st) {
  (void)st;
  expect_refused("\"count\":2", "\"count\":\"2\"", "count: not a non-negative integer");
}
static void min_as_string_is_refused(void **st) {
  (void)st;
  expect_refused("\"min\":0", "\"min\":\"0\"", "min: not a number or null");
}
static void cast_counts_not_summing_to_finite_nonzero_are_refused(void **st) {
  (void)st;
  expect_refused("\"fp16\":{\"overflow\":0", "\"fp16\":{\"overflow\":1",
                 "casts.fp16: outcomes sum to 2, expected 1");
}
static void missing_cast_outcome_is_refused(void **st) {
  (void)st;
  expect_refused("\"bf16\":{\"overflow\":0,", "\"bf16\":{", "casts.bf16.overflow: missing");
}
static void histogram_length_must_match_its_range(void **st) {
  (void)st;
  expect_refused("\"hi\":0", "\"hi\":1", "entries, expected 2");
}
static void histogram_range_outside_the_bins_is_refused(void **st) {
  (void)st;
  expect_refused("\"lo\":0", "\"lo\":-2000", "not within");
}
static void histogram_not_summing_to_finite_nonzero_is_refused(void **st) {
  (void)st;
  expect_refused("\"counts\":[1", "\"counts\":[2", "exp_hist: counts sum to 2, expected 1");
}
static void specials_exceeding_count_are_refused(void **st) {
  (void)st;
  expect_refused("\"nans\":0", "\"nans\":5", "exceed count");
}
static void non_object_is_refused(void **st) {
  (void)st;
  cJSON *arr = cJSON_CreateArray();
  mp_stats r;
  char err[64];
  assert_int_equal(mpprof_stats_from_json(arr, &r, err, sizeof err), -1);
  cJSON_Delete(arr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_fp32_record_roundtrips_bit_for_bit),
      cmocka_unit_test(random_records_of_every_source_dtype_roundtrip),
      cmocka_unit_test(empty_record_roundtrips_with_its_none_values),
      cmocka_unit_test(merge_of_different_dtypes_roundtrips_with_null_dtype),
      cmocka_unit_test(histogram_is_written_over_its_nonzero_binades_only),
      cmocka_unit_test(negative_zero_minimum_keeps_its_sign),
      cmocka_unit_test(doubles_one_ulp_apart_stay_apart),
      cmocka_unit_test(double_text_is_the_shortest_printf_text_that_reads_back),
      cmocka_unit_test(counts_beyond_32_bits_are_exact),
      cmocka_unit_test(in_memory_tree_reads_back_without_printing),
      cmocka_unit_test(advice_key_is_present_only_when_given),
      cmocka_unit_test(loss_scale_window_is_a_pair_or_null),
      cmocka_unit_test(a_tensor_with_nothing_to_judge_has_null_verdicts),
      cmocka_unit_test(missing_key_is_refused),
      cmocka_unit_test(unknown_dtype_is_refused),
      cmocka_unit_test(fractional_count_is_refused),
      cmocka_unit_test(negative_count_is_refused),
      cmocka_unit_test(count_as_string_is_refused),
      cmocka_unit_test(min_as_string_is_refused),
      cmocka_unit_test(cast_counts_not_summing_to_finite_nonzero_are_refused),
      cmocka_unit_test(missing_cast_outcome_is_refused),
      cmocka_unit_test(histogram_length_must_match_its_range),
      cmocka_unit_test(histogram_range_outside_the_bins_is_refused),
      cmocka_unit_test(histogram_not_summing_to_finite_nonzero_is_refused),
      cmocka_unit_test(specials_exceeding_count_are_refused),
      cmocka_unit_test(non_object_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
