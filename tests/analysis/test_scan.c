/* The host scanner: agreement with the simple reference (mp_stats_add) on
 * random data, fast path == portable path bit for bit for every source dtype,
 * and views (leading dimension, batches, strides) counting only logical elements. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "analysis/scan_internal.h"
#include "analysis/scan_internal.h"
#include "ref.h"

/* A mix that exercises every branch: realistic magnitudes, values near every
 * format limit, zeros of both signs, subnormals, inf, NaN, raw random bits. */
static double random_value(uint64_t *rng) {
  static const double limits[] = {65504,    65520,    0x1p-24, 0x1p-25, 0x1p-14, 448,
                                  464,      57344,    61440,   0x1p-10, 0x1p-17, 0x1.ffp127,
                                  0x1p-134, 0x1p-126, 0x1p-6,  0x1p-9,  1.0};
  uint64_t r = ref_rand(rng);
  double sign = (r & 1) ? -1.0 : 1.0;
  switch ((r >> 1) % 16) {
  case 0:
    return (r >> 8) % 4 == 0 ? NAN : sign * ((r >> 8) % 4 == 1 ? INFINITY : 0.0);
  case 1: {
    uint32_t u = (uint32_t)(r >> 32);
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  case 2:
  case 3: {
    float f = (float)limits[(r >> 8) % (sizeof limits / sizeof limits[0])];
    int steps = (int)((r >> 16) % 5) - 2;
    for (; steps > 0; steps--)
      f = nextafterf(f, INFINITY);
    for (; steps < 0; steps++)
      f = nextafterf(f, 0);
    return sign * f;
  }
  default: {
    /* Normal-ish values spread over 2^-40 .. 2^24. */
    double m = 1.0 + (double)(r >> 40) / 16777216.0;
    return sign * (float)ldexp(m, (int)((r >> 8) % 64) - 40);
  }
  }
}

static void fill(mp_dtype d, void *buf, uint64_t n, uint64_t seed) {
  uint64_t rng = seed;
  for (uint64_t i = 0; i < n; i++)
    mp_store(d, buf, i, random_value(&rng));
}

static void random_fp32_matches_the_simple_reference(void **state) {
  (void)state;
  const uint64_t seeds[] = {1, 2, 20261130};
  const uint64_t n = 200003;
  float *buf = malloc(n * sizeof *buf);
  mp_stats *ref = malloc(sizeof *ref), *got = malloc(sizeof *got);
  assert_true(buf && ref && got);
  for (int k = 0; k < 3; k++) {
    fill(MP_FP32, buf, n, seeds[k]);
    mp_stats_init(ref, MP_FP32);
    for (uint64_t i = 0; i < n; i++)
      mp_stats_add(ref, buf[i]);
    const mp_scan_impl impls[] = {MP_SCAN_PORTABLE, MP_SCAN_AVX2, MP_SCAN_AUTO};
    for (int i = 0; i < 3; i++) {
      mp_stats_init(got, MP_FP32);
      mp_view v = {.dtype = MP_FP32, .data = buf, .rows = n, .cols = 1, .batch = 1};
      assert_int_equal(mp_scan_with(got, &v, impls[i]), 0);
      assert_true(ref_stats_equal(got, ref));
    }
    mp_stats_init(got, MP_FP32);
    assert_int_equal(mp_scan_contiguous(got, buf, n), 0);
    assert_true(ref_stats_equal(got, ref));
  }
  free(buf);
  free(ref);
  free(got);
}

/* Fast and portable paths over many sizes and misaligned starts. */
static void fast_path_equals_portable_path_bit_for_bit(void **state) {
  (void)state;
  const mp_dtype ds[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  const uint64_t sizes[] = {1, 7, 8, 9, 31, 64, 1000, (1u << 18) + 13};
  mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(a && b);
  for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
    unsigned sz = mp_dtype_size(ds[di]);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      uint64_t n = sizes[si];
      unsigned char *raw = malloc(n * sz + 8);
      assert_non_null(raw);
      for (unsigned off = 0; off < 2; off++) {
        void *buf = raw + off * sz; /* element-aligned, not vector-aligned */
        fill(ds[di], buf, n, 77 + si + off);
        mp_view v = {.dtype = ds[di], .data = buf, .rows = n, .cols = 1, .batch = 1};
        mp_stats_init(a, ds[di]);
        assert_int_equal(mp_scan_with(a, &v, MP_SCAN_PORTABLE), 0);
        assert_int_equal(a->count, n);
        const mp_scan_impl fast[] = {MP_SCAN_AVX2, MP_SCAN_AUTO};
        for (int f = 0; f < 2; f++) {
          mp_stats_init(b, ds[di]);
          assert_int_equal(mp_scan_with(b, &v, fast[f]), 0);
          assert_true(ref_stats_equal(a, b));
        }
      }
      free(raw);
    }
  }
  free(a);
  free(b);
}

/* fp64 with AVX-512 counts cast outcomes by per-binade level lookups:
 * normal values of every magnitude from below bf16's flush limit to above its
 * overflow, the limits themselves and their neighbours, zeros of both signs,
 * and now and then a subnormal, inf or NaN (its vector takes the per-value
 * path). Every path equals the portable one. */
static void fp64_vector_path_equals_portable_across_all_limits(void **state) {
  (void)state;
  const uint64_t n = 200003;
  double *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  uint64_t rng = 11;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&rng);
    double m = 1.0 + (double)(r >> 12) * 0x1p-52;
    buf[i] = ldexp((r & 1) ? -m : m, (int)((r >> 3) % 300) - 160);
    if (r % 5 == 0) buf[i] = (r & 2) ? -0.0 : 0.0;
    if (i % 997 == 0) {
      const double specials[] = {0x1p-1070, -INFINITY, NAN, INFINITY, -0x1p-1040};
      buf[i] = specials[(i / 997) % 5];
    }
  }
  int k = 0;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    const double lims[] = {f->overflow_at, f->flush_at, f->subnormal_below, f->max_finite};
    for (size_t j = 0; j < sizeof lims / sizeof lims[0]; j++) {
      buf[1000 + k++] = lims[j];
      buf[1000 + k++] = nextafter(lims[j], 0);
      buf[1000 + k++] = -nextafter(lims[j], INFINITY);
    }
  }
  mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(a && b);
  mp_view v = {.dtype = MP_FP64, .data = buf, .rows = n, .cols = 1, .batch = 1};
  mp_stats_init(a, MP_FP64);
  assert_int_equal(mp_scan_with(a, &v, MP_SCAN_PORTABLE), 0);
  const mp_scan_impl fast[] = {MP_SCAN_AVX2, MP_SCAN_AUTO};
  for (int f = 0; f < 2; f++) {
    mp_stats_init(b, MP_FP64);
    assert_int_equal(mp_scan_with(b, &v, fast[f]), 0);
    assert_true(ref_stats_equal(a, b));
  }
  free(a);
  free(b);
  free(buf);
}

/* fp64 with AVX-512 keeps, per lane, packed counts of values above each
 * level of their binade (fields of at most F64V_FIELD_BITS_MAX bits: the
 * kernel hands them over before a field could wrap), looks
 * levels up by a slot that binades without levels share, and sends values
 * outside [2^-126, 2^127) to the per-value path. Long runs just above, at and
 * below each level (every lane above a level for hundreds of vectors), the
 * binades sharing a level's slot, and the window's edges, at odd lengths and
 * misaligned starts: AUTO equals the portable path. */
static void fp64_vector_path_long_runs_at_each_level_equal_portable(void **state) {
  (void)state;
  /* Each run fills a field of the widest kind past its limit. */
  enum { RUN = 8 * (1 << F64V_FIELD_BITS_MAX) + 9 };
  const uint64_t n = 3 * RUN * 3 * MP_TARGET_COUNT + 4 * RUN + 2048 * 3 + 1;
  double *raw = malloc((n + 1) * sizeof *raw);
  mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(raw && a && b);
  uint64_t k = 0;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    const double lims[] = {f->flush_at, nextafter(f->subnormal_below, 0.0), f->overflow_at};
    for (int j = 0; j < 3; j++) {
      const double v[] = {nextafter(lims[j], INFINITY), lims[j], -nextafter(lims[j], 0.0)};
      for (int m = 0; m < 3; m++)
        for (int r = 0; r < RUN; r++)
          raw[k++] = v[m];
    }
  }
  const double edges[] = {0x1p-126, nextafter(0x1p-126, 0.0), 0x1p127, nextafter(0x1p127, 0.0)};
  for (int e = 0; e < 4; e++)
    for (int r = 0; r < RUN; r++)
      raw[k++] = (r & 1) ? -edges[e] : edges[e];
  for (int E = 1; E < 2047; E++) /* every binade, so every slot's sharers */
    for (int m = 0; m < 3; m++)
      raw[k++] = ldexp(1.0 + 0.25 * m, E - 1023);
  while (k < n + 1)
    raw[k++] = 0.0;
  const uint64_t lens[] = {n, n - 5};
  for (int off = 0; off < 2; off++)
    for (int li = 0; li < 2; li++) {
      mp_view v = {.dtype = MP_FP64, .data = raw + off, .rows = lens[li], .cols = 1, .batch = 1};
      mp_stats_init(a, MP_FP64);
      mp_stats_init(b, MP_FP64);
      assert_int_equal(mp_scan_with(a, &v, MP_SCAN_PORTABLE), 0);
      assert_int_equal(mp_scan_with(b, &v, MP_SCAN_AUTO), 0);
      assert_true(ref_stats_equal(a, b));
      mp_stats_init(b, MP_FP64);
      assert_int_equal(mp_scan_with(b, &v, MP_SCAN_AVX2), 0);
      assert_true(ref_stats_equal(a, b));
    }
  free(raw);
  free(a);
  free(b);
}

/* fp64 with AVX2 counts values in [2^-126, 2^127) and checks blocks of 8192
 * values once, at their end: a block holding a non-zero value outside (bf16's
 * levels and their neighbours, subnormal, inf, NaN) has its exponent counts
 * taken back and goes to the scalar path, and the kernel sits out the next
 * blocks. Data inside the window with every other level's neighbours and
 * zeros of both signs never falls back; then values outside in a few blocks
 * only (alone, or in runs of blocks), at odd lengths and offsets: AVX2 equals
 * the portable path. */
static void fp64_avx2_blocks_with_specials_equal_portable(void **state) {
  (void)state;
  enum { BLOCK = 8192, BLOCKS = 40 };
  const uint64_t n = (uint64_t)BLOCK * BLOCKS + 7;
  double *buf = malloc((n + 3) * sizeof *buf);
  mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(buf && a && b);
  uint64_t rng = 77;
  for (uint64_t i = 0; i < n + 3; i++) {
    uint64_t r = ref_rand(&rng);
    double m = 1.0 + (double)(r >> 12) * 0x1p-52;
    buf[i] = ldexp((r & 1) ? -m : m, (int)((r >> 3) % 250) - 126);
    if (r % 7 == 0) buf[i] = (r & 2) ? -0.0 : 0.0;
  }
  buf[1] = 0x1p-126;
  buf[2] = -nextafter(0x1p127, 0.0);
  /* Every level's neighbours: those inside the window in block 0, the others
   * (bf16's) kept for block 22. */
  double outside[3 * 3 * MP_TARGET_COUNT];
  uint64_t k = 100, nout = 0;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t L[3];
    mp_scan_f64_levels(t, L);
    for (int j = 0; j < 3; j++)
      for (int d = -1; d <= 1; d++) {
        uint64_t u = L[j] + (uint64_t)(int64_t)d;
        double x;
        memcpy(&x, &u, sizeof x);
        if (u >= (897ull << 52) && u < (1150ull << 52)) {
          buf[k++] = x;
          buf[k++] = -x;
        } else {
          outside[nout++] = x;
        }
      }
  }
#ifdef MP_HAVE_X86
  /* Every block counted by the kernel itself (a kernel bug cannot hide
   * behind the fallback, which gives the same record). */
  if (__builtin_cpu_supports("avx2")) {
    /* the path is taken: every level compares by its high half */
    f64_avx2 *F = malloc(sizeof *F);
    assert_non_null(F);
    assert_true(mp_scan_f64a_init(F));
    free(F);
    mp_view v = {.dtype = MP_FP64, .data = buf, .rows = n, .cols = 1, .batch = 1};
    uint64_t before = mp_scan_f64a_fallbacks();
    mp_stats_init(a, MP_FP64);
    mp_stats_init(b, MP_FP64);
    assert_int_equal(mp_scan_with(a, &v, MP_SCAN_PORTABLE), 0);
    assert_int_equal(mp_scan_with(b, &v, MP_SCAN_AVX2), 0);
    assert_true(ref_stats_equal(a, b));
    assert_int_equal(mp_scan_f64a_fallbacks(), before);
  }
#endif
  for (uint64_t j = 0; j < nout; j++)
    buf[22 * (uint64_t)BLOCK + 77 * j] = j & 1 ? -outside[j] : outside[j];
  const double specials[] = {0x1p-1070,  -INFINITY, NAN,      INFINITY,
                             -0x1p-1040, -NAN,      0x1p-127, -0x1p127};
  const int special_blocks[] = {3, 4, 5, 9, 20, 39, 30, 31};
  for (int j = 0; j < 8; j++)
    buf[(uint64_t)special_blocks[j] * BLOCK + 1000 + (uint64_t)j] = specials[j];
  const uint64_t offsets[] = {0, 1, 3};
  for (int o = 0; o < 3; o++) {
    mp_view v = {
        .dtype = MP_FP64, .data = buf + offsets[o], .rows = n - offsets[o], .cols = 1, .batch = 1};
    mp_stats_init(a, MP_FP64);
    mp_stats_init(b, MP_FP64);
    assert_int_equal(mp_scan_with(a, &v, MP_SCAN_PORTABLE), 0);
    assert_int_equal(mp_scan_with(b, &v, MP_SCAN_AVX2), 0);
    assert_true(ref_stats_equal(a, b));
  }
  free(buf);
  free(a);
  free(b);
}

/* fp64 with AVX2 where an extreme is a zero: the kernel keeps min and max as
 * doubles, whose compares do not order -0 and +0, and settles the sign from
 * its counts: -0 is the least value where there is one, +0 the greatest.
 * Blocks of one sign with zeros of one or both signs, in either order, all
 * counted by the kernel, equal the portable path. */
static void fp64_avx2_zero_extremes_equal_portable(void **state) {
  (void)state;
  enum { N = 3 * 8192 };
  double *buf = malloc(N * sizeof *buf);
  mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(buf && a && b);
  /* sign of the non-zero values; zeros: 1 +0 only, 2 -0 only, 3 both (-0 first), 4 both (+0 first)
   */
  for (int sign = -1; sign <= 1; sign += 2)
    for (int zs = 1; zs <= 4; zs++) {
      uint64_t rng = (uint64_t)(zs * 10 + sign + 5);
      for (uint64_t i = 0; i < N; i++) {
        uint64_t r = ref_rand(&rng);
        buf[i] = sign * ldexp(1.0 + (double)(r >> 12) * 0x1p-52, (int)((r >> 3) % 60) - 30);
      }
      for (uint64_t i = 5; i < N; i += 97) {
        bool neg0 = zs == 2 || (zs == 3 && i < N / 2) || (zs == 4 && i >= N / 2);
        buf[i] = neg0 ? -0.0 : 0.0;
      }
      if (zs >= 3) buf[N / 2 + 1] = zs == 3 ? 0.0 : -0.0; /* both signs in every case */
      mp_view v = {.dtype = MP_FP64, .data = buf, .rows = N, .cols = 1, .batch = 1};
      mp_stats_init(a, MP_FP64);
      mp_stats_init(b, MP_FP64);
#ifdef MP_HAVE_X86
      uint64_t before = mp_scan_f64a_fallbacks();
#endif
      assert_int_equal(mp_scan_with(a, &v, MP_SCAN_PORTABLE), 0);
      assert_int_equal(mp_scan_with(b, &v, MP_SCAN_AVX2), 0);
      assert_true(ref_stats_equal(a, b));
#ifdef MP_HAVE_X86
      if (__builtin_cpu_supports("avx2")) assert_int_equal(mp_scan_f64a_fallbacks(), before);
#endif
    }
  free(buf);
  free(a);
  free(b);
}

/* A long run of fp32 values that all take the vector paths: normal values of
 * every magnitude near the format limits, and zeros of both signs (ReLU-like). */
static void fast_path_equals_portable_on_ordinary_fp32(void **state) {
  (void)state;
  const uint64_t n = 100000;
  float *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  uint64_t rng = 5;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&rng);
    double m = 1.0 + (double)(r >> 41) / 8388608.0;
    buf[i] = (float)ldexp((r & 1) ? -m : m, (int)((r >> 8) % 254) - 126);
    if (r % 3 == 0) buf[i] = (r & 2) ? -0.0f : 0.0f;
  }
  mp_stats a, b, c;
  mp_stats_init(&a, MP_FP32);
  mp_stats_init(&b, MP_FP32);
  mp_stats_init(&c, MP_FP32);
  mp_view v = {.dtype = MP_FP32, .data = buf, .rows = n, .cols = 1, .batch = 1};
  assert_int_equal(mp_scan_with(&a, &v, MP_SCAN_PORTABLE), 0);
  assert_int_equal(mp_scan_with(&b, &v, MP_SCAN_AVX2), 0);
  assert_int_equal(mp_scan_with(&c, &v, MP_SCAN_AUTO), 0);
  assert_true(ref_stats_equal(&a, &b));
  assert_true(ref_stats_equal(&a, &c));
  free(buf);
}

/* fp64 sources: every target limit and its one-ulp double neighbours, in a
 * buffer long enough for the fast path, against the simple reference. */
static void fp64_limits_and_double_neighbours_match_the_reference(void **state) {
  (void)state;
  enum { N = 8192 };
  double *buf = malloc(N * sizeof *buf);
  mp_stats *ref = malloc(sizeof *ref), *got = malloc(sizeof *got);
  assert_true(buf && ref && got);
  int k = 0;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    const double lims[] = {f->overflow_at, f->flush_at,         f->subnormal_below,
                           f->max_finite,  ldexp(1.0, f->emin), ldexp(1.0, f->emin_sub)};
    for (size_t j = 0; j < sizeof lims / sizeof lims[0]; j++) {
      double x = lims[j];
      const double v[] = {x, nextafter(x, 0), nextafter(x, INFINITY), -x, -nextafter(x, 0)};
      for (int m = 0; m < 5; m++)
        buf[k++] = v[m];
    }
  }
  uint64_t rng = 31;
  while (k < N) {
    uint64_t r = ref_rand(&rng);
    buf[k++] = ldexp((r & 1) ? -1.0 - (double)(r >> 12) * 0x1p-52 : 1.0, (int)(r % 200) - 150);
  }
  mp_stats_init(ref, MP_FP64);
  for (int i = 0; i < N; i++)
    mp_stats_add(ref, buf[i]);
  const mp_scan_impl impls[] = {MP_SCAN_PORTABLE, MP_SCAN_AVX2, MP_SCAN_AUTO};
  for (int i = 0; i < 3; i++) {
    mp_stats_init(got, MP_FP64);
    mp_view v = {.dtype = MP_FP64, .data = buf, .rows = N, .cols = 1, .batch = 1};
    assert_int_equal(mp_scan_with(got, &v, impls[i]), 0);
    assert_true(ref_stats_equal(got, ref));
  }
  free(buf);
  free(ref);
  free(got);
}

/* A column-major matrix with ld > rows inside a batch: the padding holds NaN
 * and huge values that must never be counted. */
static void leading_dimension_and_batch_stride_count_only_logical_elements(void **state) {
  (void)state;
  const mp_dtype ds[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  enum { ROWS = 5, COLS = 7, LD = 9, BATCH = 3, STRIDE = 70 };
  for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
    mp_dtype d = ds[di];
    unsigned sz = mp_dtype_size(d);
    unsigned char full[STRIDE * BATCH * 8], packed[ROWS * COLS * BATCH * 8];
    uint64_t rng = 9, k = 0;
    for (int i = 0; i < STRIDE * BATCH; i++)
      mp_store(d, full, (uint64_t)i, i % 2 ? NAN : 1e30);
    for (int b = 0; b < BATCH; b++)
      for (int c = 0; c < COLS; c++)
        for (int r = 0; r < ROWS; r++) {
          double x = ldexp(1.0 + (double)(ref_rand(&rng) % 8) / 8, (int)(ref_rand(&rng) % 10) - 5);
          mp_store(d, full, (uint64_t)(b * STRIDE + c * LD + r), x);
          mp_store(d, packed, k++, x);
        }
    mp_stats want, got;
    mp_stats_init(&want, d);
    assert_int_equal(mp_scan_contiguous(&want, packed, ROWS * COLS * BATCH), 0);
    assert_int_equal(want.nans, 0);
    const mp_scan_impl impls[] = {MP_SCAN_PORTABLE, MP_SCAN_AVX2, MP_SCAN_AUTO};
    for (int i = 0; i < 3; i++) {
      mp_view v = {.dtype = d,
                   .data = full,
                   .rows = ROWS,
                   .cols = COLS,
                   .ld = LD,
                   .batch = BATCH,
                   .batch_stride = STRIDE};
      mp_stats_init(&got, d);
      assert_int_equal(mp_scan_with(&got, &v, impls[i]), 0);
      assert_true(ref_stats_equal(&got, &want));
      /* The same batch walked backwards from the last matrix. */
      v.data = full + (size_t)(BATCH - 1) * STRIDE * sz;
      v.batch_stride = -STRIDE;
      mp_stats_init(&got, d);
      assert_int_equal(mp_scan_with(&got, &v, impls[i]), 0);
      assert_true(ref_stats_equal(&got, &want));
    }
  }
}

/* Columns long enough for the vector loops, ld > rows, three batches walked
 * backwards: every path equals the portable scan of the packed elements. */
static void strided_views_take_the_fast_paths_and_match_portable(void **state) {
  (void)state;
  const mp_dtype ds[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  /* 36,000 elements: past F32A_PAIRS_MIN_ELEMENTS, so AVX2 fp32 counts
   * exponent pairs in runs of one column (37 vectors: groups of four and one
   * vector more). */
  enum { ROWS = 300, COLS = 40, LD = 313, BATCH = 3, STRIDE = LD * COLS + 7 };
  unsigned char *full = malloc((size_t)STRIDE * BATCH * 8);
  unsigned char *packed = malloc((size_t)ROWS * COLS * BATCH * 8);
  mp_stats *want = malloc(sizeof *want), *got = malloc(sizeof *got);
  assert_true(full && packed && want && got);
  for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
    mp_dtype d = ds[di];
    unsigned sz = mp_dtype_size(d);
    uint64_t rng = 17 + di, k = 0;
    for (int i = 0; i < STRIDE * BATCH; i++)
      mp_store(d, full, (uint64_t)i, i % 2 ? NAN : -1e30);
    for (int b = BATCH - 1; b >= 0; b--)
      for (int c = 0; c < COLS; c++)
        for (int r = 0; r < ROWS; r++) {
          uint64_t x = ref_rand(&rng);
          double v = (x % 7 == 0) ? 0.0 : ldexp((x & 1) ? -1.5 : 1.25, (int)((x >> 8) % 28) - 20);
          mp_store(d, full, (uint64_t)(b * STRIDE + c * LD + r), v);
          mp_store(d, packed, k++, v);
        }
    mp_stats_init(want, d);
    mp_view pv = {.dtype = d, .data = packed, .rows = ROWS * COLS * BATCH, .cols = 1, .batch = 1};
    assert_int_equal(mp_scan_with(want, &pv, MP_SCAN_PORTABLE), 0);
    const mp_scan_impl impls[] = {MP_SCAN_PORTABLE, MP_SCAN_AVX2, MP_SCAN_AUTO};
    for (int i = 0; i < 3; i++) {
      mp_view v = {.dtype = d,
                   .data = full + (size_t)(BATCH - 1) * STRIDE * sz,
                   .rows = ROWS,
                   .cols = COLS,
                   .ld = LD,
                   .batch = BATCH,
                   .batch_stride = -STRIDE};
      mp_stats_init(got, d);
      assert_int_equal(mp_scan_with(got, &v, impls[i]), 0);
      assert_true(ref_stats_equal(got, want));
      assert_int_equal(got->nans, 0);
    }
  }
  free(full);
  free(packed);
  free(want);
  free(got);
}

static void zero_batch_stride_counts_the_broadcast_matrix_each_time(void **state) {
  (void)state;
  float m[12];
  for (int i = 0; i < 12; i++)
    m[i] = (float)(i - 4);
  mp_stats once, four;
  mp_stats_init(&once, MP_FP32);
  mp_stats_init(&four, MP_FP32);
  mp_view v = {.dtype = MP_FP32, .data = m, .rows = 3, .cols = 4, .ld = 3, .batch = 1};
  assert_int_equal(mp_scan(&once, &v), 0);
  v.batch = 4;
  v.batch_stride = 0;
  assert_int_equal(mp_scan(&four, &v), 0);
  assert_int_equal(four.count, 48);
  assert_int_equal(four.zeros, 4);
  assert_int_equal(four.negatives, 16);
  mp_stats merged;
  mp_stats_init(&merged, MP_FP32);
  for (int i = 0; i < 4; i++)
    mp_stats_merge(&merged, &once);
  assert_true(ref_stats_equal(&merged, &four));
}

static void batch_zero_means_one_and_empty_views_add_nothing(void **state) {
  (void)state;
  float m[4] = {1, 2, 3, 4};
  mp_stats s, empty;
  mp_stats_init(&s, MP_FP32);
  mp_stats_init(&empty, MP_FP32);
  assert_int_equal(
      mp_scan(&s,
              &(mp_view){.dtype = MP_FP32, .data = m, .rows = 2, .cols = 2, .ld = 2, .batch = 0}),
      0);
  assert_int_equal(s.count, 4);
  mp_stats_init(&s, MP_FP32);
  assert_int_equal(mp_scan(&s, &(mp_view){.dtype = MP_FP32, .data = NULL, .rows = 0, .cols = 3}),
                   0);
  assert_true(ref_stats_equal(&s, &empty));
}

static void bad_views_are_rejected(void **state) {
  (void)state;
  float m[16] = {0};
  mp_stats s;
  mp_stats_init(&s, MP_FP32);
  /* ld < rows with several columns would overlap columns. */
  assert_int_equal(
      mp_scan(&s,
              &(mp_view){.dtype = MP_FP32, .data = m, .rows = 4, .cols = 2, .ld = 3, .batch = 1}),
      -EINVAL);
  /* Source dtype differs from the record's. */
  assert_int_equal(mp_scan(&s, &(mp_view){.dtype = MP_FP16, .data = m, .rows = 4, .cols = 1}),
                   -EINVAL);
  /* Not a scannable source. */
  mp_stats t;
  mp_stats_init(&t, MP_TF32);
  assert_int_equal(mp_scan(&t, &(mp_view){.dtype = MP_TF32, .data = m, .rows = 4, .cols = 1}),
                   -EINVAL);
  mp_stats_init(&t, MP_INT8);
  assert_int_equal(mp_scan(&t, &(mp_view){.dtype = MP_INT8, .data = m, .rows = 4, .cols = 1}),
                   -EINVAL);
  /* No data for a non-empty view; an element count beyond 64 bits. */
  assert_int_equal(mp_scan(&s, &(mp_view){.dtype = MP_FP32, .data = NULL, .rows = 4, .cols = 1}),
                   -EINVAL);
  assert_int_equal(mp_scan(&s, &(mp_view){.dtype = MP_FP32,
                                          .data = m,
                                          .rows = 1ull << 40,
                                          .cols = 1ull << 30,
                                          .ld = 1ull << 40}),
                   -EINVAL);
  assert_int_equal(mp_scan(NULL, &(mp_view){.dtype = MP_FP32, .data = m, .rows = 1, .cols = 1}),
                   -EINVAL);
  assert_int_equal(s.count, 0);
}

static void scan_accumulates_into_an_existing_record(void **state) {
  (void)state;
  float a[3] = {1, -2, 0}, b[2] = {1e-30f, 7e4f};
  mp_stats s;
  mp_stats_init(&s, MP_FP32);
  assert_int_equal(mp_scan_contiguous(&s, a, 3), 0);
  assert_int_equal(mp_scan_contiguous(&s, b, 2), 0);
  assert_int_equal(s.count, 5);
  assert_true(s.min == -2.0 && s.max == 7e4f && s.absmax == 7e4f);
  assert_true(s.min_abs_nonzero == 1e-30f);
  assert_int_equal(s.casts[MP_TGT_FP16][MP_CAST_OVERFLOW], 1);
  assert_int_equal(s.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW], 1);
  assert_int_equal(s.casts[MP_TGT_FP16][MP_CAST_NORMAL], 2);
}

/* A scan fed in pieces (mp_scan_stream, what inspect runs on a mapped file)
 * equals one scan of the whole, for every dtype, with pieces that split the
 * kernels' steps and blocks anywhere (one value, odd sizes, a block and a
 * bit), and with the path chosen for the whole (pattern counts need 2^18). */
static void a_scan_fed_in_pieces_equals_one_scan_of_the_whole(void **state) {
  (void)state;
  const mp_dtype ds[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  const uint64_t pieces[] = {1, 127, 3, 4096 + 5, 255, 1, (1u << 18) + 17, 64, 1000, 33};
  uint64_t n = 0;
  for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++)
    n += pieces[k];
  mp_stats *whole = malloc(sizeof *whole), *fed = malloc(sizeof *fed);
  unsigned char *buf = malloc(n * 8);
  assert_true(whole && fed && buf);
  for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
    unsigned sz = mp_dtype_size(ds[di]);
    fill(ds[di], buf, n, 4242 + di);
    mp_stats_init(whole, ds[di]);
    assert_int_equal(mp_scan_contiguous(whole, buf, n), 0);
    mp_stats_init(fed, ds[di]);
    mp_scan_stream *st = mp_scan_stream_begin(fed, n);
    assert_non_null(st);
    uint64_t at = 0;
    for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
      mp_scan_stream_feed(st, buf + at * sz, pieces[k]);
      at += pieces[k];
    }
    mp_scan_stream_end(st);
    assert_int_equal(fed->count, n);
    assert_true(ref_stats_equal(fed, whole));
  }
  mp_stats_init(fed, MP_DTYPE_INVALID);
  assert_null(mp_scan_stream_begin(fed, 10));
  free(buf);
  free(whole);
  free(fed);
}

/* AUTO names the widest path this CPU has (the dispatch picks it the same way). */
static void auto_implementation_follows_the_cpu(void **state) {
  (void)state;
  const char *want = "portable";
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    want = "avx512";
  else if (__builtin_cpu_supports("avx2"))
    want = "avx2";
#endif
  assert_string_equal(mp_scan_auto_name(), want);
}

/* The kernel each scan runs, for every dtype and implementation, as this
 * CPU's features decide (analysis/scan.c's choose_kind): a kernel whose
 * tables the build refused (thresholds that no longer fit, a class id past
 * the counters) gives the same records through a slower path, which no other
 * test notices. */
static void each_view_takes_the_fastest_kernel_this_cpu_has(void **state) {
  (void)state;
  const uint64_t n = 1 << 20;
  bool avx512 = false, avx2 = false, planes = false, classes = false, classes2 = false;
#ifdef MP_HAVE_X86
  __builtin_cpu_init();
  avx512 = __builtin_cpu_supports("avx512f");
  avx2 = __builtin_cpu_supports("avx2");
  planes = mp_scan_cpu_has_planes();
  classes = mp_scan_cpu_has_classes();
  classes2 = mp_scan_cpu_has_classes_avx2();
#endif
  const char *f32_wide = planes ? "f32_avx512_planes" : "f32_avx512";
  const char *c2 = classes2 ? "classes_avx2" : "patterns";
  const mp_scan_impl impls[] = {MP_SCAN_AUTO, MP_SCAN_AVX2, MP_SCAN_AVX512_NO_PLANES};
  const char *const impl_names[] = {"auto", "avx2", "avx512 without planes"};
  const mp_dtype ds[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++)
    for (int i = 0; i < 3; i++) {
      mp_dtype d = ds[di];
      mp_scan_impl impl = impls[i];
      bool wide = avx512 && impl != MP_SCAN_AVX2;
      const char *want;
      switch (d) {
      case MP_FP64:
        want = wide ? "f64_avx512" : avx2 ? "f64_avx2" : "f64_fast";
        break;
      case MP_FP32: /* n is past F32A_PAIRS_MIN_ELEMENTS: exponent pairs */
        want = wide             ? (impl == MP_SCAN_AUTO ? f32_wide : "f32_avx512")
               : avx2 || avx512 ? "f32_avx2_pairs"
                                : "portable";
        break;
      case MP_FP16:
      case MP_BF16:
        if (wide) /* n is past F16_PAIRS_MIN_ELEMENTS: exponent pairs */
          want = impl == MP_SCAN_AUTO ? (classes ? "classes" : f32_wide) : "f32_avx512_pairs";
        else
          want = impl == MP_SCAN_AVX512_NO_PLANES ? "patterns" : c2;
        break;
      default: /* fp8 */
        want = impl == MP_SCAN_AUTO && classes    ? "classes"
               : impl == MP_SCAN_AVX512_NO_PLANES ? "patterns"
                                                  : c2;
      }
      const char *got = mp_scan_path_name(d, n, impl);
      assert_non_null(got);
      if (strcmp(got, want) != 0)
        fail_msg("%s, %s: kernel %s, expected %s", mp_dtype_name(d), impl_names[i], got, want);
    }
#ifdef MP_HAVE_X86
  /* Smaller fp32 views count their exponents one by one. */
  if (avx2 || avx512)
    assert_string_equal(mp_scan_path_name(MP_FP32, F32A_PAIRS_MIN_ELEMENTS - 1, MP_SCAN_AVX2),
                        "f32_avx2");
  /* So do smaller fp16 and bf16 views with AVX-512 (a pair fold costs more
   * than a small view's scan). */
  if (avx512) {
    assert_string_equal(
        mp_scan_path_name(MP_FP16, F16_PAIRS_MIN_ELEMENTS - 1, MP_SCAN_AVX512_NO_PLANES),
        "f32_avx512");
    assert_string_equal(mp_scan_path_name(MP_BF16, 64, MP_SCAN_AVX512_NO_PLANES), "f32_avx512");
  }
#endif
  assert_null(mp_scan_path_name(MP_INT8, n, MP_SCAN_AUTO));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_fp32_matches_the_simple_reference),
      cmocka_unit_test(fast_path_equals_portable_path_bit_for_bit),
      cmocka_unit_test(fast_path_equals_portable_on_ordinary_fp32),
      cmocka_unit_test(fp64_limits_and_double_neighbours_match_the_reference),
      cmocka_unit_test(fp64_vector_path_equals_portable_across_all_limits),
      cmocka_unit_test(fp64_avx2_blocks_with_specials_equal_portable),
      cmocka_unit_test(fp64_avx2_zero_extremes_equal_portable),
      cmocka_unit_test(fp64_vector_path_long_runs_at_each_level_equal_portable),
      cmocka_unit_test(leading_dimension_and_batch_stride_count_only_logical_elements),
      cmocka_unit_test(strided_views_take_the_fast_paths_and_match_portable),
      cmocka_unit_test(zero_batch_stride_counts_the_broadcast_matrix_each_time),
      cmocka_unit_test(batch_zero_means_one_and_empty_views_add_nothing),
      cmocka_unit_test(bad_views_are_rejected),
      cmocka_unit_test(scan_accumulates_into_an_existing_record),
      cmocka_unit_test(a_scan_fed_in_pieces_equals_one_scan_of_the_whole),
      cmocka_unit_test(auto_implementation_follows_the_cpu),
      cmocka_unit_test(each_view_takes_the_fastest_kernel_this_cpu_has),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
