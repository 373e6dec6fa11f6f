/* The capture range settings (analysis/capture.h): what mpprof run accepts
 * for --capture-range, --nvtx-capture and --steps, and how they combine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/capture.h"

static void steps_are_a_colon_b_inclusive(void **state) {
  (void)state;
  uint64_t a, b;
  assert_int_equal(mp_parse_steps("2:4", &a, &b), 0);
  assert_int_equal(a, 2);
  assert_int_equal(b, 4);
  assert_int_equal(mp_parse_steps("7", &a, &b), 0); /* one step */
  assert_int_equal(a, 7);
  assert_int_equal(b, 7);
  assert_int_equal(mp_parse_steps("0:18446744073709551615", &a, &b), 0);
  assert_true(b == UINT64_MAX);
}

static void steps_refuse_reversed_negative_and_overflowing_ranges(void **state) {
  (void)state;
  uint64_t a, b;
  const char *bad[] = {"4:2",
                       "-1:3",
                       "1:",
                       ":3",
                       "",
                       "1:2:3",
                       "a:b",
                       "1 :2",
                       "18446744073709551616",
                       "1:18446744073709551616"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(mp_parse_steps(bad[i], &a, &b), -1);
}

static void nothing_set_is_mode_all(void **state) {
  (void)state;
  mp_capture c;
  char err[200];
  assert_int_equal(mp_capture_parse(NULL, NULL, NULL, &c, err, sizeof err), 0);
  assert_int_equal(c.mode, MP_CAPTURE_ALL);
  assert_int_equal(mp_capture_parse("", "", "", &c, err, sizeof err), 0);
  assert_int_equal(c.mode, MP_CAPTURE_ALL);
  assert_int_equal(mp_capture_parse("none", NULL, NULL, &c, err, sizeof err), 0);
  assert_int_equal(c.mode, MP_CAPTURE_ALL);
  assert_string_equal(mp_capture_mode_name(c.mode), "all");
}

static void each_mode_parses(void **state) {
  (void)state;
  mp_capture c;
  char err[200];
  assert_int_equal(mp_capture_parse("cudaProfilerApi", NULL, NULL, &c, err, sizeof err), 0);
  assert_int_equal(c.mode, MP_CAPTURE_PROFILER_API);
  assert_int_equal(mp_capture_parse("nvtx", "train", NULL, &c, err, sizeof err), 0);
  assert_int_equal(c.mode, MP_CAPTURE_NVTX);
  assert_string_equal(c.nvtx, "train");
  assert_int_equal(mp_capture_parse(NULL, NULL, "3:5", &c, err, sizeof err), 0);
  assert_int_equal(c.mode, MP_CAPTURE_STEPS);
  assert_int_equal(c.first, 3);
  assert_int_equal(c.last, 5);
}

static void inconsistent_settings_are_refused_with_a_reason(void **state) {
  (void)state;
  mp_capture c;
  char err[200];
  assert_int_equal(mp_capture_parse("cudaprofilerapi", NULL, NULL, &c, err, sizeof err), -1);
  assert_non_null(strstr(err, "--capture-range must be"));
  assert_int_equal(mp_capture_parse("nvtx", NULL, NULL, &c, err, sizeof err), -1);
  assert_non_null(strstr(err, "needs --nvtx-capture"));
  assert_int_equal(mp_capture_parse(NULL, "train", NULL, &c, err, sizeof err), -1);
  assert_non_null(strstr(err, "needs --capture-range=nvtx"));
  assert_int_equal(mp_capture_parse("cudaProfilerApi", NULL, "1:2", &c, err, sizeof err), -1);
  assert_non_null(strstr(err, "cannot be combined"));
  assert_int_equal(mp_capture_parse(NULL, NULL, "2:1", &c, err, sizeof err), -1);
  assert_non_null(strstr(err, "--steps must be"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(steps_are_a_colon_b_inclusive),
      cmocka_unit_test(steps_refuse_reversed_negative_and_overflowing_ranges),
      cmocka_unit_test(nothing_set_is_mode_all),
      cmocka_unit_test(each_mode_parses),
      cmocka_unit_test(inconsistent_settings_are_refused_with_a_reason),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
