/* Merge: partials combine to the same record, bit for bit, in any order and
 * any grouping, and equal one scan of the whole. */
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

enum { PARTS = 24, PER_PART = 500 };

static float values[PARTS * PER_PART];

static void make_values(void) {
  uint64_t rng = 4242;
  for (int i = 0; i < PARTS * PER_PART; i++) {
    uint64_t r = ref_rand(&rng);
    double m = 1.0 + (double)(r >> 44) / 1048576.0;
    values[i] = (float)(((r & 1) ? -m : m) * ldexp(1.0, (int)((r >> 8) % 60) - 40));
  }
  /* Both zeros, in different partials, make min/max order-sensitive unless
   * the merge orders -0 below +0. */
  for (int p = 0; p < PARTS; p++) {
    values[p * PER_PART] = (p % 2) ? -0.0f : 0.0f;
    values[p * PER_PART + 1] = (p % 5 == 0) ? NAN : (p % 7 == 0) ? -INFINITY : 1.0f;
  }
}

static void shuffle(int *order, int n, uint64_t *rng) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(ref_rand(rng) % (uint64_t)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

static void merge_is_order_and_grouping_independent(void **state) {
  (void)state;
  make_values();
  mp_stats *parts = malloc(PARTS * sizeof *parts);
  mp_stats *whole = malloc(sizeof *whole), *acc = malloc(sizeof *acc), *tmp = malloc(sizeof *tmp);
  assert_true(parts && whole && acc && tmp);
  for (int p = 0; p < PARTS; p++) {
    mp_stats_init(&parts[p], MP_FP32);
    assert_int_equal(mp_scan_contiguous(&parts[p], values + p * PER_PART, PER_PART), 0);
  }
  mp_stats_init(whole, MP_FP32);
  assert_int_equal(mp_scan_contiguous(whole, values, PARTS * PER_PART), 0);
  int order[PARTS];
  for (int i = 0; i < PARTS; i++)
    order[i] = i;
  uint64_t rng = 99;
  for (int trial = 0; trial < 50; trial++) {
    shuffle(order, PARTS, &rng);
    /* Left fold in a shuffled order... */
    mp_stats_init(acc, MP_FP32);
    for (int i = 0; i < PARTS; i++)
      mp_stats_merge(acc, &parts[order[i]]);
    assert_true(ref_stats_equal(acc, whole));
    /* ...and a random grouping: pairs merged first, then folded from the right. */
    mp_stats_init(acc, MP_FP32);
    for (int i = PARTS - 2; i >= 0; i -= 2) {
      *tmp = parts[order[i]];
      mp_stats_merge(tmp, &parts[order[i + 1]]);
      mp_stats_merge(tmp, acc);
      *acc = *tmp;
    }
    assert_true(ref_stats_equal(acc, whole));
  }
  free(parts);
  free(whole);
  free(acc);
  free(tmp);
}

static void merging_an_empty_record_changes_nothing(void **state) {
  (void)state;
  float v[5] = {-0.0f, 0.0f, 3.0f, -1e-8f, 2e5f};
  mp_stats s, e, copy;
  mp_stats_init(&s, MP_FP32);
  mp_stats_init(&e, MP_FP32);
  assert_int_equal(mp_scan_contiguous(&s, v, 5), 0);
  copy = s;
  mp_stats_merge(&s, &e);
  assert_true(ref_stats_equal(&s, &copy));
  mp_stats_merge(&e, &copy);
  assert_true(ref_stats_equal(&e, &copy));
  assert_true(s.min == (double)-1e-8f);
}

static void zeros_of_both_signs_order_minus_zero_first(void **state) {
  (void)state;
  float pz = 0.0f, nz = -0.0f;
  mp_stats a, b, ab, ba;
  mp_stats_init(&a, MP_FP32);
  mp_stats_init(&b, MP_FP32);
  mp_scan_contiguous(&a, &pz, 1);
  mp_scan_contiguous(&b, &nz, 1);
  ab = a;
  mp_stats_merge(&ab, &b);
  ba = b;
  mp_stats_merge(&ba, &a);
  assert_true(ref_stats_equal(&ab, &ba));
  assert_true(signbit(ab.min) && !signbit(ab.max));
  assert_int_equal(ab.negatives, 0); /* -0 is not negative */
  assert_true(isinf(ab.min_abs_nonzero));
}

static void merging_different_source_dtypes_widens_the_bin_range(void **state) {
  (void)state;
  mp_stats h, f;
  mp_stats_init(&h, MP_FP16);
  mp_stats_init(&f, MP_FP32);
  uint16_t one = 0x3c00;
  float big = 1e20f;
  mp_scan_contiguous(&h, &one, 1);
  mp_scan_contiguous(&f, &big, 1);
  mp_stats hf = h, fh = f;
  mp_stats_merge(&hf, &f);
  mp_stats_merge(&fh, &h);
  assert_true(ref_stats_equal(&hf, &fh));
  assert_int_equal(hf.dtype, MP_DTYPE_INVALID);
  assert_int_equal(hf.hist_lo, -149);
  assert_int_equal(hf.hist_hi, 127);
  assert_int_equal(mp_stats_hist_bin(&hf, 0), 1);
  assert_int_equal(mp_stats_hist_bin(&hf, 66), 1);
  assert_int_equal(hf.count, 2);
}

/* Records of scans of one dtype: magnitudes over `span` binades from 2^lo,
 * some zeros, and (per part) NaN, inf or subnormal values. */
static void scan_part(mp_stats *s, mp_dtype d, int part, int lo, int span, uint64_t *rng) {
  static unsigned char buf[8 * 300];
  int n = 1 + part * 37 % 300;
  for (int i = 0; i < n; i++) {
    uint64_t r = ref_rand(rng);
    double m = 1.0 + (double)(r >> 44) / 1048576.0;
    double x = ((r & 1) ? -m : m) * ldexp(1.0, lo + (int)((r >> 8) % (uint64_t)span));
    if (i % 11 == 3) x = (i & 1) ? -0.0 : 0.0;
    if (i == 5 && part % 4 == 1) x = NAN;
    if (i == 6 && part % 4 == 2) x = -INFINITY;
    if (i == 7 && part % 4 == 3) x = ldexp(1.0, -140); /* subnormal in fp32, flushed below */
    mp_store(d, buf, (uint64_t)i, x);
  }
  mp_stats_init(s, d);
  assert_int_equal(mp_scan_contiguous(s, buf, (uint64_t)n), 0);
}

static const mp_dtype scannable[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};

/* The profiler merges its host scans with mp_stats_merge_scanned, which adds
 * only the bins between the record's smallest and largest |x|: it must give
 * mp_stats_merge's record, byte for byte, whatever the parts hold. */
static void merging_only_the_touched_bins_gives_the_full_merge(void **state) {
  (void)state;
  mp_stats *part = malloc(sizeof *part), *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(part && a && b);
  uint64_t rng = 7;
  for (size_t k = 0; k < sizeof scannable / sizeof scannable[0]; k++) {
    mp_dtype d = scannable[k];
    mp_stats_init(a, d);
    mp_stats_init(b, d);
    for (int p = 0; p < 40; p++) {
      /* Parts of one binade, a few, and wide ones; all-zero parts too. */
      int span = p % 5 == 0 ? 1 : p % 5 == 1 ? 3 : 40;
      scan_part(part, d, p, -30 + 3 * (p % 13), span, &rng);
      if (p % 9 == 8) {
        mp_stats_init(part, d);
        assert_int_equal(mp_scan_contiguous(part, (const double[]){0.0}, 0), 0);
      }
      mp_stats_merge(a, part);
      mp_stats_merge_scanned(b, part);
      assert_memory_equal(a, b, sizeof *a);
    }
  }
  free(part);
  free(a);
  free(b);
}

/* A used scratch record re-initialised for any dtype equals a fresh one. */
static void reinit_of_a_scanned_record_equals_a_fresh_init(void **state) {
  (void)state;
  mp_stats *s = malloc(sizeof *s), *fresh = malloc(sizeof *fresh);
  assert_true(s && fresh);
  uint64_t rng = 11;
  size_t nd = sizeof scannable / sizeof scannable[0];
  for (size_t k = 0; k < nd; k++)
    for (int p = 0; p < 12; p++) {
      scan_part(s, scannable[k], p, -20 + 5 * p, p % 3 == 0 ? 1 : 30, &rng);
      mp_dtype next = scannable[(k + (size_t)p) % nd];
      mp_stats_reinit_scanned(s, next);
      mp_stats_init(fresh, next);
      assert_memory_equal(s, fresh, sizeof *s);
    }
  free(s);
  free(fresh);
}

/* A scanned record packed (its head and the bins its values span) and
 * unpacked into a used scratch record of another dtype is the record, byte
 * for byte; it packs into far less than the record when its values span
 * few binades. */
static void a_packed_record_unpacks_to_itself(void **state) {
  (void)state;
  mp_stats *s = malloc(sizeof *s), *dst = malloc(sizeof *dst);
  char *buf = malloc(sizeof *s);
  assert_true(s && dst && buf);
  uint64_t rng = 17;
  size_t nd = sizeof scannable / sizeof scannable[0];
  mp_stats_init(dst, MP_FP32);
  for (size_t k = 0; k < nd; k++)
    for (int p = 0; p < 12; p++) {
      scan_part(s, scannable[k], p, -20 + 5 * p, p % 3 == 0 ? 1 : 30, &rng);
      if (p == 11) {
        mp_stats_init(s, scannable[k]);
        assert_int_equal(mp_scan_contiguous(s, (const double[]){0.0}, 0), 0);
      }
      size_t size = mp_stats_packed_size(s);
      assert_true(size <= sizeof *s);
      if (p == 0 || p == 6) assert_true(size < sizeof *s / 16); /* one binade */
      mp_stats_pack_scanned(s, buf);
      mp_stats_unpack_scanned(dst, buf);
      assert_memory_equal(dst, s, sizeof *s);
    }
  free(s);
  free(dst);
  free(buf);
}

/* A view that repeats its elements (an expanded tensor) is scanned once and
 * its record repeated: k repeats must be the record of k merged copies, byte
 * for byte (the extremes as they are, every count times k), for every dtype
 * and for parts holding NaN, inf, zeros of both signs or nothing. */
static void repeating_a_record_equals_merging_its_copies(void **state) {
  (void)state;
  mp_stats *part = malloc(sizeof *part), *merged = malloc(sizeof *merged);
  assert_true(part && merged);
  uint64_t rng = 13;
  for (size_t k = 0; k < sizeof scannable / sizeof scannable[0]; k++)
    for (int p = 0; p < 12; p++) {
      mp_dtype d = scannable[k];
      scan_part(part, d, p, -25 + 4 * p, p % 3 == 0 ? 1 : 35, &rng);
      if (p == 11) {
        mp_stats_init(part, d);
        assert_int_equal(mp_scan_contiguous(part, (const double[]){0.0}, 0), 0);
      }
      const uint64_t repeats = 1 + (uint64_t)(p % 4) * 3; /* 1, 4, 7, 10 */
      mp_stats_init(merged, d);
      for (uint64_t r = 0; r < repeats; r++)
        mp_stats_merge(merged, part);
      mp_stats_repeat(part, repeats);
      assert_memory_equal(part, merged, sizeof *part);
    }
  free(part);
  free(merged);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(merge_is_order_and_grouping_independent),
      cmocka_unit_test(merging_an_empty_record_changes_nothing),
      cmocka_unit_test(zeros_of_both_signs_order_minus_zero_first),
      cmocka_unit_test(merging_different_source_dtypes_widens_the_bin_range),
      cmocka_unit_test(merging_only_the_touched_bins_gives_the_full_merge),
      cmocka_unit_test(reinit_of_a_scanned_record_equals_a_fresh_init),
      cmocka_unit_test(a_packed_record_unpacks_to_itself),
      cmocka_unit_test(repeating_a_record_equals_merging_its_copies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
