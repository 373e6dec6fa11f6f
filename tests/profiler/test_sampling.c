/* The scan schedule of a site (profiler/call.c mpp_sample_scans): --sample N
 * scans calls 0, N, 2N, ...; --sample auto (the default) scans every call for
 * a site's first 64, then each further 64 scanned calls twice as far apart as
 * the ones before, up to 1 in 64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "profiler/mpp.h"
#include "profiler/call.h"

static bool auto_scans(uint64_t i) {
  return mpp_sample_scans(MPP_SAMPLE_AUTO, i);
}

static void auto_sample_scans_every_one_of_a_sites_first_64_calls(void **state) {
  (void)state;
  for (uint64_t i = 0; i < 64; i++)
    assert_true(auto_scans(i));
  assert_false(auto_scans(65));
}

/* Phase k (interval 2^k, k = 1 .. 6) starts at call 64 (2^k - 1): its first
 * call and every 2^k-th after it are scanned, 64 in all. */
static void auto_sample_doubles_the_interval_after_each_64_scanned_calls(void **state) {
  (void)state;
  for (uint64_t k = 1, start = 64; k <= 6; start += 64u << k, k++) {
    uint64_t interval = 1u << k, scanned = 0;
    for (uint64_t i = start; i < start + 64 * interval; i++) {
      bool want = (i - start) % interval == 0;
      assert_int_equal(auto_scans(i), want);
      scanned += want;
    }
    assert_int_equal(scanned, 64);
  }
}

static void auto_sample_stays_at_1_in_64(void **state) {
  (void)state;
  uint64_t cap_start = 64 * 63; /* 64 + 128 + ... + 2048 calls after the first 64 */
  assert_true(auto_scans(cap_start));
  assert_false(auto_scans(cap_start + 32));
  uint64_t scanned = 0;
  for (uint64_t i = cap_start; i < cap_start + 64 * 1000; i++)
    scanned += auto_scans(i);
  assert_int_equal(scanned, 1000);
  for (uint64_t i = (1ull << 40) - 640; i < (1ull << 40); i++)
    assert_int_equal(auto_scans(i), (i - cap_start) % 64 == 0);
  /* A million calls of one site: 6 x 64 before the cap, then (10^6 - 4032) / 64 rounded up. */
  scanned = 0;
  for (uint64_t i = 0; i < 1000000; i++)
    scanned += auto_scans(i);
  assert_int_equal(scanned, 64 * 6 + (1000000 - cap_start + 63) / 64);
}

static void sample_n_scans_calls_0_n_2n(void **state) {
  (void)state;
  for (uint64_t i = 0; i < 1000; i++) {
    assert_true(mpp_sample_scans(1, i));
    assert_int_equal(mpp_sample_scans(3, i), i % 3 == 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(auto_sample_scans_every_one_of_a_sites_first_64_calls),
      cmocka_unit_test(auto_sample_doubles_the_interval_after_each_64_scanned_calls),
      cmocka_unit_test(auto_sample_stays_at_1_in_64),
      cmocka_unit_test(sample_n_scans_calls_0_n_2n),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
