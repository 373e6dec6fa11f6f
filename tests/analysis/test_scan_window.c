/* The vector scanners' windows and blocks against the portable path.
 *
 * fp16 and bf16 exponents (AVX-512), and fp32 exponents in views of 32768
 * values and more (AVX2), go through a histogram of exponent pairs coded
 * relative to a 63-binade window that moves with the data, with the values
 * outside it counted apart (AVX2: their block counted again vector by
 * vector); fp32 with AVX-512 runs in kernel calls of a fixed number of
 * vectors that stop before any vector holding a subnormal, inf or NaN. These
 * tests aim at the edges of both: values spanning more binades than the
 * window, exponents at and just beyond the window's ends before and after it
 * moves, inputs of nothing but special values, runs long enough to make the
 * 16-bit pair counters fold, and special values at kernel-call boundaries.
 * Every record must equal the portable path's bit for bit (on a CPU without
 * AVX-512 the same comparisons exercise the other paths). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "analysis/scan_internal.h"
#include "ref.h"

/* Scans buf (n elements of d) with every implementation; all must agree. */
static void assert_paths_agree(mp_dtype d, const void *buf, uint64_t n) {
  mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(a && b);
  mp_view v = {.dtype = d, .data = buf, .rows = n, .cols = 1, .batch = 1};
  /* NO_PLANES among the fast paths: on CPUs with the bit-plane kernel, AUTO
   * takes the pair kernel only for blocks that fail the plane check. */
  assert_int_equal(ref_fast_path_differs(&v, a, b), -1);
  assert_int_equal(a->count, n);
  free(a);
  free(b);
}

static uint16_t bf16_of_exponent(int e, uint64_t r) {
  /* 2^e with 7 random mantissa bits and a random sign; e in -126 .. 127. */
  return (uint16_t)(((r >> 8) & 1) << 15 | (unsigned)(e + 127) << 7 | (r & 0x7f));
}

static void bf16_over_every_binade_matches_portable(void **state) {
  (void)state;
  const uint64_t n = 300000;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  uint64_t s = 11;
  /* Random order: about two thirds of the values fall outside any window. */
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&s);
    buf[i] = bf16_of_exponent((int)(r % 254) - 126, r >> 16);
  }
  assert_paths_agree(MP_BF16, buf, n);
  /* Ascending exponents: the largest exponent grows all along, the window
   * follows it and every move folds the pair counts first. */
  for (uint64_t i = 0; i < n; i++)
    buf[i] = bf16_of_exponent((int)(i * 254 / n) - 126, ref_rand(&s));
  assert_paths_agree(MP_BF16, buf, n);
  /* Descending: values fall out of the bottom of a window set by the top. */
  for (uint64_t i = 0; i < n; i++)
    buf[i] = bf16_of_exponent(127 - (int)(i * 254 / n), ref_rand(&s));
  assert_paths_agree(MP_BF16, buf, n);
  free(buf);
}

/* The window starts at 2^-45 .. 2^17. After a run of values near 2^100 it
 * moves so that its top is 2^101 and its bottom 2^39: exponents at both ends
 * and one beyond each, before and after the move. */
static void bf16_exponents_at_the_window_edges_match_portable(void **state) {
  (void)state;
  const int first[] = {-45, -46, 17, 18, -44, 16, 0};
  const int moved[] = {100, 101, 102, 39, 38, 40, 127, 0};
  const uint64_t block = 20000;
  uint64_t n = 4 * block;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  uint64_t s = 5;
  for (uint64_t i = 0; i < block; i++)
    buf[i] = bf16_of_exponent(first[i % 7], ref_rand(&s));
  for (uint64_t i = block; i < 2 * block; i++)
    buf[i] = bf16_of_exponent(100, ref_rand(&s));
  for (uint64_t i = 2 * block; i < n; i++) {
    uint64_t r = ref_rand(&s);
    buf[i] = (r & 15) == 0 ? (uint16_t)((r >> 4) & 0x8000) /* +-0 */
                           : bf16_of_exponent(moved[(r >> 8) % 8], r >> 16);
  }
  assert_paths_agree(MP_BF16, buf, n);
  free(buf);
}

static void only_special_values_match_portable(void **state) {
  (void)state;
  const uint64_t n = 70000;
  uint16_t *h = malloc(n * sizeof *h);
  float *f = malloc(n * sizeof *f);
  assert_true(h && f);
  uint64_t s = 9;
  /* fp16: zeros, subnormals, inf, NaN; bf16 and fp32 the same kinds. */
  const uint16_t f16[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x0200, 0x7c00, 0xfc00, 0x7e00, 0xfd01};
  const uint16_t b16[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x0040, 0x7f80, 0xff80, 0x7fc0, 0xffa1};
  const uint32_t f32[] = {0x0,        0x80000000, 0x1,        0x807fffff, 0x00400000,
                          0x7f800000, 0xff800000, 0x7fc00000, 0xffa00001};
  for (int d = 0; d < 3; d++) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = ref_rand(&s) % 9;
      /* Runs of plain zeros too, so that some vectors are all-zero. */
      if ((i / 64) % 3 == 0) r = i & 1;
      h[i] = d == 0 ? f16[r] : b16[r];
      uint32_t u = f32[r];
      memcpy(&f[i], &u, sizeof u);
    }
    if (d < 2)
      assert_paths_agree(d == 0 ? MP_FP16 : MP_BF16, h, n);
    else
      assert_paths_agree(MP_FP32, f, n);
  }
  free(h);
  free(f);
}

/* A million copies of one value: every pair lands in the same counter of
 * each bank, which must fold into the exponent counts before it wraps
 * (fp16 and bf16 with AVX-512; fp32 with AVX2, four pairs a vector). */
static void long_runs_of_one_value_fold_before_counters_wrap(void **state) {
  (void)state;
  const uint64_t n = (1u << 20) + 21;
  uint16_t *buf = malloc(n * sizeof *buf);
  float *f = malloc(n * sizeof *f);
  assert_true(buf && f);
  for (uint64_t i = 0; i < n; i++)
    f[i] = 1.0f;
  f[n / 2] = 0.0f;
  assert_paths_agree(MP_FP32, f, n);
  free(f);
  const mp_dtype ds[] = {MP_FP16, MP_BF16};
  for (int d = 0; d < 2; d++) {
    uint16_t one = ds[d] == MP_FP16 ? 0x3c00 : 0x3f80;
    for (uint64_t i = 0; i < n; i++)
      buf[i] = one;
    buf[n / 2] = 0; /* one zero in the middle */
    assert_paths_agree(ds[d], buf, n);
    mp_stats *s = malloc(sizeof *s);
    assert_non_null(s);
    mp_stats_init(s, ds[d]);
    assert_int_equal(mp_scan_contiguous(s, buf, n), 0);
    assert_int_equal(mp_stats_hist_bin(s, 0), n - 1);
    assert_int_equal(s->zeros, 1);
    free(s);
  }
  free(buf);
}

/* fp32 and fp16 with special values exactly at, just before and just after
 * vectors where kernel calls end (every 1024 vectors, 16384 values). */
static void special_values_at_kernel_call_boundaries_match_portable(void **state) {
  (void)state;
  const uint64_t n = 3 * 65536 + 40;
  const uint64_t at[] = {65535,          65536,         65536 + 15, 65536 + 16,
                         2 * 65536 - 16, 2 * 65536 + 1, n - 1};
  float *f = malloc(n * sizeof *f);
  uint16_t *h = malloc(n * sizeof *h);
  assert_true(f && h);
  uint64_t s = 3;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&s);
    double m = 1.0 + (double)(r >> 41) / 8388608.0;
    double v = ldexp((r & 2) ? -m : m, (int)((r >> 16) % 41) - 30);
    f[i] = (float)v;
    h[i] = mp_float_to_fp16((float)v);
  }
  const uint32_t f32_special[] = {0x7fc00000, 0x00000001, 0xff800000, 0x7f800000,
                                  0x807fffff, 0x7fa00000, 0x00000002};
  const uint16_t f16_special[] = {0x7e00, 0x7c00, 0xfc00, 0x7d00, 0xfe01, 0x7c00, 0x7e00};
  for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
    memcpy(&f[at[k]], &f32_special[k], sizeof(uint32_t));
    h[at[k]] = f16_special[k];
  }
  assert_paths_agree(MP_FP32, f, n);
  assert_paths_agree(MP_FP16, h, n);
  free(f);
  free(h);
}

/* 2^e with a random mantissa and sign, e in -126 .. 127 (fp32 normal). */
static float f32_of_exponent(int e, uint64_t r) {
  uint32_t u =
      (uint32_t)((r >> 40) & 1) << 31 | (uint32_t)(e + 127) << 23 | (uint32_t)(r & 0x7fffff);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* fp32 exponents through the AVX2 path's pairs, whose 63-binade window starts
 * at 2^-45 .. 2^17 and moves to cover a block: runs of two blocks (2040 values each)
 * at and just past each end of it, far above and below it, a block spanning
 * exactly 63 binades and one spanning 64 (no window holds it: counted
 * vector by vector), zeros among them, lengths that leave vectors outside the
 * groups of four; every binade in random order (every block fails). */
static void fp32_exponents_at_and_past_the_window_edges_match_portable(void **state) {
  (void)state;
  /* Two blocks a run: the view is past F32A_PAIRS_MIN_ELEMENTS. */
  const uint64_t block = 2040, run_len = 2 * block, runs = 14, n = runs * run_len + 8 * 3 + 5;
  float *f = malloc(n * sizeof *f);
  assert_non_null(f);
  uint64_t s = 21;
  /* Per run: lowest and highest exponent of its values. */
  const int span[14][2] = {{-45, 17},   {-45, 18}, {-46, 17},   {-30, 10},   {60, 120},
                           {-126, -64}, {0, 0},    {-126, -63}, {-126, -62}, {65, 127},
                           {64, 127},   {17, 17},  {-45, -45},  {-10, 52}};
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&s), run = i / run_len < runs ? i / run_len : runs - 1;
    int lo = span[run][0], hi = span[run][1];
    /* Both ends in every block, zeros now and then. */
    int e = i % block == 7      ? lo
            : i % block == 1000 ? hi
                                : lo + (int)((r >> 24) % (uint64_t)(hi - lo + 1));
    f[i] = (r & 0xf) == 0 ? 0.0f : f32_of_exponent(e, r);
  }
#ifdef MP_HAVE_X86
  assert_true(n - 29 >= F32A_PAIRS_MIN_ELEMENTS);
#endif
  for (uint64_t len = n - 29; len <= n; len += 29)
    assert_paths_agree(MP_FP32, f, len);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&s);
    f[i] = f32_of_exponent((int)(r % 254) - 126, r >> 8);
  }
  assert_paths_agree(MP_FP32, f, n);
  free(f);
}

/* The AVX2 fp32 kernel keeps its pairs as the data moves: runs of blocks
 * anywhere in fp32's range, each within 63 binades, all commit with pairs
 * (the window moves to each run's first block); a run spanning 64 binades
 * commits none. Either way the record is the portable path's. */
static void fp32_pair_window_follows_the_data(void **state) {
  (void)state;
#ifdef MP_HAVE_X86
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) skip();
  const uint64_t block = 8 * F32_BLOCK_VECTORS, runs = 6, n = runs * 3 * block;
  const int span[6][2] = {{60, 120}, {-126, -64}, {-20, 10}, {65, 127}, {-3, 3}, {-126, -63}};
  float *f = malloc(n * sizeof *f);
  assert_non_null(f);
  uint64_t s = 33;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&s), run = i / (3 * block);
    int lo = span[run][0], hi = span[run][1];
    int e = i % block == 5   ? lo
            : i % block == 9 ? hi
                             : lo + (int)((r >> 24) % (uint64_t)(hi - lo + 1));
    f[i] = (r & 0x3f) == 0 ? 0.0f : f32_of_exponent(e, r);
  }
  mp_stats *st = malloc(sizeof *st);
  assert_non_null(st);
  mp_view v = {.dtype = MP_FP32, .data = f, .rows = n, .cols = 1, .ld = n, .batch = 1};
  uint64_t before = mp_scan_f32a_pair_blocks();
  mp_stats_init(st, MP_FP32);
  assert_int_equal(mp_scan_with(st, &v, MP_SCAN_AVX2), 0);
  /* Every block but the three of the 64-binade run (the last: after a
   * failure the kernel sits out blocks). */
  assert_int_equal(mp_scan_f32a_pair_blocks() - before, 3 * (runs - 1));
  free(st);
  assert_paths_agree(MP_FP32, f, n);
  free(f);
#else
  skip();
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp32_pair_window_follows_the_data),
      cmocka_unit_test(fp32_exponents_at_and_past_the_window_edges_match_portable),
      cmocka_unit_test(bf16_over_every_binade_matches_portable),
      cmocka_unit_test(bf16_exponents_at_the_window_edges_match_portable),
      cmocka_unit_test(only_special_values_match_portable),
      cmocka_unit_test(long_runs_of_one_value_fold_before_counters_wrap),
      cmocka_unit_test(special_values_at_kernel_call_boundaries_match_portable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
