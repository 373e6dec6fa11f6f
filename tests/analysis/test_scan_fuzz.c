/* Every fast scan path against the portable one on random views: a fixed
 * seed, so a failure names a case that reproduces.
 *
 * The targeted tests (test_scan_planes.c, test_scan_classes.c) hold each
 * kernel's edges; this one mixes what they hold apart: a source dtype, a
 * value shape (random bits, a few repeated patterns, log-uniform magnitudes
 * over a random window, Gaussian values at a random scale, specials among
 * integers, values a few binades wide, ranges that move every 1k-200k values
 * so that bf16's window moves between blocks), a length that crosses the
 * kernels' blocks (2^18 values) or stops short of a step, an offset off
 * every alignment but the element's (the scanner's contract: mpprof inspect
 * copies a misaligned tensor first), and for some cases a strided view with
 * rows left out between columns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/formats.h"
#include "analysis/scan.h"
#include "analysis/scan_internal.h"
#include "ref.h"

#define FUZZ_CASES 240
#define FUZZ_MAX_VALUES (600u * 1024u) /* crosses two 2^18-value blocks */

static double unit(uint64_t *s) {
  return ((double)(ref_rand(s) >> 11) + 0.5) / 9007199254740992.0;
}

/* Fills n values of d at buf with shape gen; lo, span: the binades drawn. */
static void fill(uint64_t *s, mp_dtype d, unsigned char *buf, uint64_t n, int gen, int lo,
                 int span) {
  const unsigned w = mp_dtype_size(d);
  uint64_t palette[4];
  for (int k = 0; k < 4; k++)
    palette[k] = ref_rand(s);
  const uint64_t segment = 1000 + ref_rand(s) % 200000;
  int seg_lo = lo;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(s);
    if (gen == 0 || gen == 1) { /* raw bits: every pattern, specials included */
      memcpy(buf + i * w, gen == 0 ? &r : &palette[r % 4], w);
      continue;
    }
    double v;
    if (gen == 2) {
      v = ldexp(1.0 + unit(s), lo + (int)(r % (uint64_t)span));
    } else if (gen == 3) {
      v = sqrt(-2 * log(unit(s))) * cos(6.283185307179586 * unit(s)) * ldexp(1.0, lo + span / 2);
    } else if (gen == 4) {
      v = r % 100 == 0 ? (r % 3 ? INFINITY : NAN) : ldexp((double)(r >> 40), lo);
    } else if (gen == 5) {
      v = r % 7 == 0 ? 0.0 : ldexp(1.0 + (double)((r >> 20) % 4) / 4, lo + (int)(r % 3));
    } else {
      if (i % segment == 0) seg_lo = 20 - (int)(ref_rand(s) % 60);
      v = r % 5000 == 0 ? 0.0 : ldexp(1.0 + unit(s), seg_lo + (int)(r % (uint64_t)(1 + span % 12)));
    }
    mp_store(d, buf, i, (r & 16) ? -v : v);
  }
}

static void random_views_of_every_dtype_match_the_portable_path(void **st) {
  (void)st;
  static const mp_dtype dtypes[] = {MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2, MP_FP64};
  unsigned char *base = malloc(FUZZ_MAX_VALUES * sizeof(double) + 64);
  mp_stats *want = malloc(sizeof *want), *got = malloc(sizeof *got);
  assert_true(base && want && got);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int c = 0; c < FUZZ_CASES; c++) {
    const mp_dtype d = dtypes[ref_rand(&s) % 6];
    const uint64_t n = ref_rand(&s) % 4 ? ref_rand(&s) % 5000 : ref_rand(&s) % FUZZ_MAX_VALUES;
    const unsigned off = (unsigned)(ref_rand(&s) % (64 / mp_dtype_size(d))) * mp_dtype_size(d);
    const int gen = (int)(ref_rand(&s) % 7), lo = -(int)(ref_rand(&s) % 40),
              span = 1 + (int)(ref_rand(&s) % 45);
    unsigned char *buf = base + off;
    fill(&s, d, buf, n, gen, lo, span);
    mp_view v = {.dtype = d, .data = buf, .rows = n, .cols = 1, .ld = n, .batch = 1};
    if (n > 16 && ref_rand(&s) % 3 == 0) { /* columns of ld values, some rows left out */
      v.cols = 2 + ref_rand(&s) % 5;
      v.ld = n / v.cols;
      v.rows = v.ld > 4 && ref_rand(&s) % 2 ? v.ld - 1 - ref_rand(&s) % 3 : v.ld;
    }
    int f = ref_fast_path_differs(&v, want, got);
    assert_int_not_equal(f, -2);
    if (f >= 0)
      fail_msg("case %d: %s, shape %d, %llu x %llu (ld %llu), offset %u: the %s path differs from "
               "the portable one",
               c, mp_dtype_name(d), gen, (unsigned long long)v.rows, (unsigned long long)v.cols,
               (unsigned long long)v.ld, off, ref_fast_paths[f].name);
  }
  free(base);
  free(want);
  free(got);
}

/* One workspace (mp_scan_ws, as libmpprof keeps per thread) across views of
 * every dtype, size and path in turn: each record is the portable path's,
 * and after each scan every counter the workspace keeps is zero again (a
 * state put back unclean would add its counts to the next view's record). */
static void one_workspace_across_every_view_matches_the_portable_path(void **st) {
  (void)st;
  static const mp_dtype dtypes[] = {MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2, MP_FP64};
  static const mp_scan_impl impls[] = {MP_SCAN_AUTO, MP_SCAN_AVX2, MP_SCAN_AVX512_NO_PLANES};
  unsigned char *buf = malloc(FUZZ_MAX_VALUES * sizeof(double));
  mp_stats *want = malloc(sizeof *want), *got = malloc(sizeof *got);
  mp_scan_ws *ws = mp_scan_ws_new();
  assert_true(buf && want && got && ws);
  uint64_t s = 0x2545f4914f6cdd1dull;
  for (int c = 0; c < FUZZ_CASES; c++) {
    const mp_dtype d = dtypes[ref_rand(&s) % 6];
    /* Mostly small views (where the workspace saves most), some past a block. */
    const uint64_t n = ref_rand(&s) % 8 ? ref_rand(&s) % 3000 : ref_rand(&s) % FUZZ_MAX_VALUES;
    const int gen = (int)(ref_rand(&s) % 7), lo = -(int)(ref_rand(&s) % 40),
              span = 1 + (int)(ref_rand(&s) % 45);
    fill(&s, d, buf, n, gen, lo, span);
    mp_view v = {.dtype = d, .data = buf, .rows = n, .cols = 1, .ld = n, .batch = 1};
    mp_stats_init(want, d);
    assert_int_equal(mp_scan_with(want, &v, MP_SCAN_PORTABLE), 0);
    for (size_t k = 0; k < sizeof impls / sizeof impls[0]; k++) {
      mp_stats_init(got, d);
      assert_int_equal(mp_scan_ws_scan(ws, got, &v, impls[k]), 0);
      if (!ref_stats_equal(want, got))
        fail_msg("case %d: %s, shape %d, %llu values, impl %d: the record through the workspace "
                 "differs from the portable one",
                 c, mp_dtype_name(d), gen, (unsigned long long)n, (int)impls[k]);
      if (!mp_scan_ws_clean(ws))
        fail_msg("case %d: %s, shape %d, %llu values, impl %d: counters left in the workspace", c,
                 mp_dtype_name(d), gen, (unsigned long long)n, (int)impls[k]);
    }
  }
  mp_scan_ws_free(ws);
  free(buf);
  free(want);
  free(got);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_views_of_every_dtype_match_the_portable_path),
      cmocka_unit_test(one_workspace_across_every_view_matches_the_portable_path),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
