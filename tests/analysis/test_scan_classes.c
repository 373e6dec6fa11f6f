/* The class-plane kernels (fp8, fp16, bf16) against the portable path.
 *
 * With AVX-512 VBMI, BITALG and GFNI, MP_SCAN_AUTO counts fp8, fp16 and
 * bf16 views of 128 values or more through class planes: every value's class (binade, and the side
 * of a threshold in the binades that hold one) is looked up per code byte and counted in bit
 * planes, in blocks of MP_CLS_BLOCK_STEPS steps of 128 values (chunks of
 * MP_CLS_CHUNK_STEPS, whose counters runs of one value fill). fp8 counts every byte
 * pattern there, NaN and inf included; a 16-bit block holding inf, NaN, a
 * bf16 subnormal or bf16 exponents outside the window is counted again by the
 * fp16/bf16 path the planes replace. These tests aim at those places: every
 * byte pattern, every finite 16-bit pattern of a range, runs of one value,
 * odd lengths, unaligned starts, blocks whose range moves, and strided views.
 * Every record must equal the portable path's bit for bit, for AUTO, for
 * AVX-512 without the planes and for AVX2 (on a CPU without these extensions
 * the same comparisons exercise the other paths).
 *
 * MP_SCAN_AVX2 takes the AVX2 class ids (scan_classes_avx2.c) from 128
 * values: 16-bit blocks of 2^18 values (pair counters), fp8 blocks of
 * 8192 steps of 32 bytes (e4m3: nibble counters summed every 15 steps;
 * e5m2: pair counters as for 16-bit); blocks of MP_CLS2_DIRECT_STEPS steps
 * or fewer (16-bit, e5m2) count their pairs straight into counts by id; e4m3's NaN is a class
 * there, while e5m2 inf/NaN, 16-bit inf/NaN, bf16 subnormals and bf16 exponents outside the window
 * make a block fail and go to bit-pattern counts. The tests below with specials in some blocks
 * only, and bf16 over narrow ranges (few thresholds in the window: the smaller kernels), aim at
 * that path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/formats.h"
#include "analysis/scan.h"
#include "analysis/scan_internal.h"
#include "ref.h"

#define BLOCK_VALUES (MP_CLS_BLOCK_STEPS * 128) /* values per AVX-512 class-kernel call */

static void assert_view_paths_agree(const mp_view *v, const char *what) {
  mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(a && b);
  int f = ref_fast_path_differs(v, a, b);
  assert_int_not_equal(f, -2);
  if (f >= 0)
    fail_msg("%s (%s): implementation %d differs from the portable path", mp_dtype_name(v->dtype),
             what, f);
  free(a);
  free(b);
}

static void assert_paths_agree(mp_dtype d, const void *buf, uint64_t n, const char *what) {
  mp_view v = {.dtype = d, .data = buf, .rows = n, .cols = 1, .ld = n, .batch = 1};
  assert_view_paths_agree(&v, what);
}

static const mp_dtype fp8s[] = {MP_FP8_E4M3, MP_FP8_E5M2};
static const mp_dtype sixteens[] = {MP_FP16, MP_BF16};

#ifdef MP_HAVE_X86
/* A scan of n values with MP_SCAN_AVX2 went through the class kernels: one
 * committed block per MP_CLS2_BLOCK_STEPS steps of 32 values begun (none falling back, as
 * the callers check), not through a path they would replace. Without this a
 * format whose tables the build refused would pass every test, slowly. */
static void assert_kernel_blocks(mp_dtype d, uint64_t blocks_before, uint64_t n, const char *what) {
  uint64_t steps = n / 32, want = (steps + MP_CLS2_BLOCK_STEPS - 1) / MP_CLS2_BLOCK_STEPS;
  uint64_t got = mp_scan_cls2_blocks() - blocks_before;
  if (got != want)
    fail_msg("%s (%s): %llu class-kernel block(s), expected %llu", mp_dtype_name(d), what,
             (unsigned long long)got, (unsigned long long)want);
}
#endif

/* The AVX2 class kernels count finite data (bf16: within one window of
 * binades) themselves: none of its blocks falls back to the path they
 * replace. The fallback would give the same record, so without this a
 * kernel bug (a dropped counter: its commit check fails) would only cost speed. */
static void avx2_class_kernels_count_finite_data_without_falling_back(void **state) {
  (void)state;
#ifdef MP_HAVE_X86
  if (!mp_scan_cpu_has_classes_avx2()) skip();
  const uint64_t n = 3 * BLOCK_VALUES + 99;
  uint16_t *b16 = malloc(n * sizeof *b16);
  uint8_t *b8 = malloc(n);
  assert_true(b16 && b8);
  mp_stats *st = malloc(sizeof *st);
  assert_non_null(st);
  /* Lengths: blocks of pair counters and a short last block; short views,
   * whose blocks count straight into counts by id (MP_CLS2_DIRECT_STEPS),
   * at the edge of that. */
  const uint64_t lengths[] = {n, 128 + 5, 32 * MP_CLS2_DIRECT_STEPS,
                              32 * (MP_CLS2_DIRECT_STEPS + 1) + 7};
  for (int k = 0; k < 4 * 4; k++) {
    int d = k % 4;
    uint64_t len = lengths[k / 4];
    mp_dtype dt = d < 2 ? sixteens[d] : fp8s[d - 2];
    uint64_t seed = 500 + (uint64_t)d;
    for (uint64_t i = 0; i < len; i++) {
      uint64_t r = ref_rand(&seed);
      double m = 1.0 + (double)(r >> 41) / 8388608.0;
      /* fp16 and fp8: every finite binade, subnormals and zeros included;
       * bf16: 2^-20 .. 2^9 (one window) */
      int span = dt == MP_BF16 ? 30 : dt == MP_FP16 ? 41 : dt == MP_FP8_E4M3 ? 17 : 30;
      int lo = dt == MP_BF16 ? -20 : dt == MP_FP16 ? -26 : dt == MP_FP8_E4M3 ? -10 : -17;
      double x = ldexp(r & 2 ? -m : m, (int)((r >> 16) % (uint64_t)span) + lo);
      if ((r & 127) == 0) x = r & 128 ? -0.0 : 0.0;
      if (d < 2)
        mp_store(dt, b16, i, x);
      else
        b8[i] =
            dt == MP_FP8_E4M3 ? mp_float_to_e4m3((float)x, true) : mp_float_to_e5m2((float)x, true);
    }
    const void *buf = d < 2 ? (const void *)b16 : (const void *)b8;
    mp_view v = {.dtype = dt, .data = buf, .rows = len, .cols = 1, .ld = len, .batch = 1};
    uint64_t before = mp_scan_cls2_fallbacks(), blocks = mp_scan_cls2_blocks();
    mp_stats_init(st, dt);
    assert_int_equal(mp_scan_with(st, &v, MP_SCAN_AVX2), 0);
    if (mp_scan_cls2_fallbacks() != before)
      fail_msg("%s, %llu values: %llu block(s) fell back", mp_dtype_name(dt),
               (unsigned long long)len, (unsigned long long)(mp_scan_cls2_fallbacks() - before));
    assert_kernel_blocks(dt, blocks, len, "finite");
    assert_paths_agree(dt, buf, len, "finite");
  }
  free(st);
  free(b16);
  free(b8);
#else
  skip();
#endif
}

#ifdef MP_HAVE_X86
/* An AVX2 scan of n bytes that no block of leaves to the fallback, and that
 * equals the portable path. */
static void assert_fp8_avx2_counts_alone(mp_dtype d, const uint8_t *buf, uint64_t n,
                                         const char *what) {
  mp_view v = {.dtype = d, .data = buf, .rows = n, .cols = 1, .ld = n, .batch = 1};
  mp_stats *st = malloc(sizeof *st);
  assert_non_null(st);
  uint64_t before = mp_scan_cls2_fallbacks(), blocks = mp_scan_cls2_blocks();
  mp_stats_init(st, d);
  assert_int_equal(mp_scan_with(st, &v, MP_SCAN_AVX2), 0);
  if (mp_scan_cls2_fallbacks() != before)
    fail_msg("%s (%s): %llu block(s) fell back", mp_dtype_name(d), what,
             (unsigned long long)(mp_scan_cls2_fallbacks() - before));
  assert_kernel_blocks(d, blocks, n, what);
  free(st);
  assert_paths_agree(d, buf, n, what);
}
#endif

/* The AVX2 fp8 kernels count ids by nibble counters (e4m3) or pair counters
 * (e5m2); a dropped or overflowing counter fails the block's total and only
 * costs speed, so: every byte a kernel counts (e4m3: NaN too, a class there;
 * e5m2: all but inf and NaN) in random order over blocks of 8192 steps and a
 * part chunk, and runs of each byte over two chunks of 15 steps and a part
 * (a nibble counter at its limit of 15), with no block falling back. */
static void avx2_fp8_kernels_count_every_class_without_falling_back(void **state) {
  (void)state;
#ifdef MP_HAVE_X86
  if (!mp_scan_cpu_has_classes_avx2()) skip();
  const uint64_t n = 2 * 8192 * 32 + 20 * 32 + 17, run = 31 * 32;
  uint8_t *buf = malloc(n);
  assert_non_null(buf);
  for (int d = 0; d < 2; d++) {
    bool e5m2 = fp8s[d] == MP_FP8_E5M2;
    uint64_t s = 90 + (uint64_t)d;
    for (uint64_t i = 0; i < n; i++) {
      uint8_t b = (uint8_t)ref_rand(&s);
      buf[i] = e5m2 && (b & 0x7f) >= 0x7c ? (uint8_t)(b & 0x83) : b;
    }
    assert_fp8_avx2_counts_alone(fp8s[d], buf, n, "every class");
    for (int v = 0; v < 256; v++) {
      if (e5m2 && (v & 0x7f) >= 0x7c) continue;
      memset(buf, v, run);
      assert_fp8_avx2_counts_alone(fp8s[d], buf, run, "runs of one byte");
    }
  }
  free(buf);
#else
  skip();
#endif
}

static void fp8_random_bytes_at_odd_lengths_and_offsets_match_portable(void **state) {
  (void)state;
  /* Every byte pattern: NaN, inf (e5m2), zeros of both signs, subnormals. */
  const uint64_t n = 2 * BLOCK_VALUES + 12345;
  uint8_t *buf = malloc(n + 64);
  assert_non_null(buf);
  uint64_t s = 16;
  for (uint64_t i = 0; i < n + 64; i++)
    buf[i] = (uint8_t)ref_rand(&s);
  const uint64_t offsets[] = {0, 1, 3, 63};
  for (int d = 0; d < 2; d++)
    for (int o = 0; o < 4; o++) {
      assert_paths_agree(fp8s[d], buf + offsets[o], n - offsets[o], "random bytes");
      assert_paths_agree(fp8s[d], buf + offsets[o], 512 + 2 * offsets[o] + 1, "short");
      assert_paths_agree(fp8s[d], buf + offsets[o], 128 + offsets[o], "one step and a tail");
    }
  free(buf);
}

/* Runs of each byte over two chunks of the AVX-512 class kernel and an odd
 * step of a third (every byte counter at its limit, and the odd step paired
 * with ids no class takes), then a tail. */
static void fp8_runs_of_each_byte_fill_the_counters(void **state) {
  (void)state;
  const uint64_t n = 128 * (2 * MP_CLS_CHUNK_STEPS + 3) + 5;
  uint8_t *buf = malloc(n);
  assert_non_null(buf);
  for (int d = 0; d < 2; d++)
    for (int v = 0; v < 256; v++) {
      memset(buf, v, n);
      assert_paths_agree(fp8s[d], buf, n, "a run of one byte");
    }
  free(buf);
}

static void fp8_runs_of_one_or_two_patterns_match_portable(void **state) {
  (void)state;
  /* One pattern alone (only NaN, only -0, only negatives, ...), then random
   * pairs: min, max and min |x| from the lanes' extremes and the zero count. */
  const uint64_t n = 1500;
  uint8_t *buf = malloc(n);
  assert_non_null(buf);
  uint64_t s = 8;
  for (int d = 0; d < 2; d++) {
    for (int v = 0; v < 256; v++) {
      memset(buf, v, n);
      assert_paths_agree(fp8s[d], buf, n, "one pattern");
    }
    for (int k = 0; k < 300; k++) {
      uint8_t x = (uint8_t)ref_rand(&s), y = (uint8_t)ref_rand(&s);
      if (k % 3 == 0) y = (uint8_t)(k & 1 ? 0x80 : 0x00);
      for (uint64_t i = 0; i < n; i++)
        buf[i] = ref_rand(&s) & 1 ? x : y;
      assert_paths_agree(fp8s[d], buf, n, "two patterns");
    }
    /* One byte lane of the 32 (AVX2) or 64 holding one pattern, the others
     * another: a lane's extremes must stand for nothing when it saw only
     * NaN (e4m3, a class there) or zeros. */
    const uint8_t others[] = {0x00, 0x80, 0x85, 0x05, 0xff, 0x7f};
    for (int v = 0; v < 256; v++)
      for (size_t o = 0; o < sizeof others; o++) {
        for (uint64_t i = 0; i < n; i++)
          buf[i] = i % 32 == 7 ? (uint8_t)v : others[o];
        assert_paths_agree(fp8s[d], buf, n, "one lane");
      }
  }
  free(buf);
}

static void sixteen_bit_random_patterns_match_portable(void **state) {
  (void)state;
  /* Raw patterns (NaN and inf in most blocks: the fallback), then finite
   * values over wide and narrow ranges with zeros of both signs and, for
   * fp16, subnormals, at odd lengths and unaligned starts. */
  const uint64_t n = 2 * BLOCK_VALUES + 777;
  uint16_t *buf = malloc((n + 8) * sizeof *buf);
  assert_non_null(buf);
  for (int d = 0; d < 2; d++)
    for (int mode = 0; mode < 3; mode++) {
      uint64_t s = 100 + (uint64_t)(10 * d + mode);
      for (uint64_t i = 0; i < n + 8; i++) {
        uint64_t r = ref_rand(&s);
        if (mode == 0) {
          buf[i] = (uint16_t)r;
          continue;
        }
        double m = 1.0 + (double)(r >> 41) / 8388608.0;
        int span = mode == 1 ? 60 : 41, lo = mode == 1 ? -40 : -30;
        double x = ldexp(r & 2 ? -m : m, (int)((r >> 16) % (uint64_t)span) + lo);
        if ((r & 255) == 0) x = r & 256 ? -0.0 : 0.0;
        mp_store(sixteens[d], buf, i, x);
      }
      for (int o = 0; o < 3; o++)
        assert_paths_agree(sixteens[d], buf + o, n - (uint64_t)(5 * o), "random");
    }
  free(buf);
}

/* Buffer of n values drawn from the patterns pats[0 .. np). */
static void fill_from(uint16_t *buf, uint64_t n, const uint16_t *pats, uint64_t np, uint64_t seed) {
  for (uint64_t i = 0; i < n; i++)
    buf[i] = pats[ref_rand(&seed) % np];
}

static void every_finite_fp16_pattern_matches_portable(void **state) {
  (void)state;
  /* Every threshold of every target, and both neighbours, lies among these. */
  uint16_t *pats = malloc(65536 * sizeof *pats);
  const uint64_t n = 3 * BLOCK_VALUES + 99;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_true(pats && buf);
  uint64_t np = 0;
  for (uint32_t h = 0; h < 65536; h++)
    if ((h & 0x7c00) != 0x7c00) pats[np++] = (uint16_t)h;
  fill_from(buf, n, pats, np, 3);
  assert_paths_agree(MP_FP16, buf, n, "every finite pattern");
  /* In order: each block a slice of the patterns. */
  for (uint64_t i = 0; i < n; i++)
    buf[i] = pats[i % np];
  assert_paths_agree(MP_FP16, buf, n, "finite patterns in order");
  free(pats);
  free(buf);
}

static void every_bf16_pattern_of_a_window_matches_portable(void **state) {
  (void)state;
  /* All patterns of 40 binades (both signs, zeros): the thresholds of
   * fp16, e4m3 and e5m2 in them, with their neighbours. */
  uint16_t *pats = malloc(65536 * sizeof *pats);
  const uint64_t n = 3 * BLOCK_VALUES + 99;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_true(pats && buf);
  const int los[] = {100, 110, 1, 200};
  for (int w = 0; w < 4; w++) {
    uint64_t np = 0;
    pats[np++] = 0;
    pats[np++] = 0x8000;
    for (uint32_t h = 0; h < 65536; h++) {
      int E = (h >> 7) & 0xff;
      if (E >= los[w] && E < los[w] + 40) pats[np++] = (uint16_t)h;
    }
    fill_from(buf, n, pats, np, (uint64_t)w);
    assert_paths_agree(MP_BF16, buf, n, "every pattern of a window");
  }
  free(pats);
  free(buf);
}

static void runs_of_one_16_bit_value_match_portable(void **state) {
  (void)state;
  /* The largest counts a block can hold, in one class (every counter of the
   * AVX-512 kernel at its limit: a wrapped one fails the block's total
   * check, so finite values, bf16 in its window, must not fall back); and
   * values whose blocks must fail (inf, NaN, bf16 subnormal). */
  const uint64_t n = BLOCK_VALUES + 300;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  const double values[] = {0.0,       -0.0,     1.0,      -65504.0, 464.0,   448.0,
                           0x1p-10,   -0x1p-17, 0x1p-24,  0x1p-25,  61440.0, INFINITY,
                           -INFINITY, NAN,      0x1p-130, 3e38};
  for (int d = 0; d < 2; d++)
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
      for (uint64_t i = 0; i < n; i++)
        mp_store(sixteens[d], buf, i, values[k]);
#ifdef MP_HAVE_X86
      uint64_t before = mp_scan_cls_fallbacks();
#endif
      assert_paths_agree(sixteens[d], buf, n, "one value");
#ifdef MP_HAVE_X86
      double x = fabs(mp_load(sixteens[d], buf, 0));
      bool counted = isfinite(x) && (sixteens[d] == MP_FP16 || x == 0 || x >= 0x1p-126);
      if (mp_scan_cpu_has_classes() && counted && mp_scan_cls_fallbacks() != before)
        fail_msg("%s %g: the class kernel left a block of one value to the fallback",
                 mp_dtype_name(sixteens[d]), values[k]);
#endif
    }
  free(buf);
}

static void bf16_blocks_whose_range_moves_match_portable(void **state) {
  (void)state;
  /* Blocks far apart (the window moves), wider than the window (fallback),
   * with one subnormal or one inf somewhere, then back. */
  const int nblocks = 10;
  const uint64_t n = (uint64_t)nblocks * BLOCK_VALUES;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  uint64_t s = 77;
  for (int b = 0; b < nblocks; b++) {
    int lo = 1 + (int)(ref_rand(&s) % 200), span = 1 + (int)(ref_rand(&s) % 54);
    if (b == 3) span = 70;
    for (uint64_t i = 0; i < BLOCK_VALUES; i++) {
      uint64_t r = ref_rand(&s);
      int E = lo + (int)((r >> 20) % (uint64_t)span);
      if (E > 254) E = 254;
      buf[(uint64_t)b * BLOCK_VALUES + i] =
          (uint16_t)((r & 0x8000) | (uint32_t)E << 7 | (r & 0x7f));
    }
    if (b == 5) buf[(uint64_t)b * BLOCK_VALUES + 1000] = 0x0003;
    if (b == 6) buf[(uint64_t)b * BLOCK_VALUES + 2000] = 0xff80;
  }
  assert_paths_agree(MP_BF16, buf, n, "moving blocks");
  assert_paths_agree(MP_BF16, buf + 4321, n - 4321 - 5, "moving blocks, shifted");
  free(buf);
}

static void strided_and_batched_views_match_portable(void **state) {
  (void)state;
  /* Columns of odd length with a gap between them: every run has a tail. */
  const uint64_t rows = 1001, cols = 67, ld = 1030, batch = 3;
  const uint64_t n = ld * cols * batch;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  uint64_t s = 5;
  for (uint64_t i = 0; i < n; i++)
    buf[i] = (uint16_t)ref_rand(&s);
  const mp_dtype all[] = {MP_FP8_E4M3, MP_FP8_E5M2, MP_FP16, MP_BF16};
  for (int d = 0; d < 4; d++) {
    if (d >= 2)
      for (uint64_t i = 0; i < n; i++)
        mp_store(all[d], buf, i, ldexp(1.0 + (double)(i % 97) / 97, (int)(i % 31) - 20));
    mp_view v = {.dtype = all[d],
                 .data = buf,
                 .rows = rows,
                 .cols = cols,
                 .ld = ld,
                 .batch = batch,
                 .batch_stride = (int64_t)(ld * cols)};
    assert_view_paths_agree(&v, "strided");
  }
  free(buf);
}

static void class_scans_accumulate_into_an_existing_record(void **state) {
  (void)state;
  const uint64_t n = BLOCK_VALUES / 2 + 3;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  const mp_dtype all[] = {MP_FP8_E4M3, MP_FP8_E5M2, MP_FP16, MP_BF16};
  for (int d = 0; d < 4; d++) {
    for (uint64_t i = 0; i < n; i++)
      mp_store(all[d], buf, i, ldexp(i & 1 ? -1.5 : 1.25, (int)(i % 13) - 6));
    mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    assert_true(a && b);
    mp_view v = {.dtype = all[d], .data = buf, .rows = n, .cols = 1, .ld = n, .batch = 1};
    mp_view first = v;
    first.rows = 1000;
    mp_stats_init(a, all[d]);
    mp_stats_init(b, all[d]);
    assert_int_equal(mp_scan_with(a, &first, MP_SCAN_PORTABLE), 0);
    assert_int_equal(mp_scan_with(b, &first, MP_SCAN_PORTABLE), 0);
    assert_int_equal(mp_scan_with(a, &v, MP_SCAN_PORTABLE), 0);
    assert_int_equal(mp_scan_with(b, &v, MP_SCAN_AUTO), 0);
    assert_true(ref_stats_equal(a, b));
    free(a);
    free(b);
  }
  free(buf);
}

static void sixteen_bit_specials_in_some_blocks_match_portable(void **state) {
  (void)state;
  /* Clean blocks (counted by the class kernels) and blocks holding one
   * special (inf, NaN, -0, a subnormal of fp16 or bf16, a target's
   * threshold): those fail and are counted again, and the next blocks are
   * sat out; the tail is counted value by value. */
  const uint64_t n = 6 * BLOCK_VALUES + 61;
  uint16_t *buf = malloc((n + 8) * sizeof *buf);
  assert_non_null(buf);
  const double specials[] = {INFINITY, -INFINITY, NAN, -0.0, 0x1p-24, -0x1p-130, 464.0, 0x1p-17};
  for (int d = 0; d < 2; d++) {
    uint64_t s = 900 + (uint64_t)d;
    for (uint64_t i = 0; i < n + 8; i++) {
      uint64_t r = ref_rand(&s);
      double m = 1.0 + (double)(r >> 41) / 8388608.0;
      mp_store(sixteens[d], buf, i, ldexp(r & 2 ? -m : m, (int)((r >> 16) % 30) - 20));
    }
    for (int k = 0; k < 8; k++) /* in blocks 1 and 4, and near the end */
      mp_store(sixteens[d], buf, (k < 4 ? 1 : 4) * BLOCK_VALUES + 1000 * (uint64_t)k + 7,
               specials[k]);
    mp_store(sixteens[d], buf, n - 3, NAN);
    for (int o = 0; o < 3; o++)
      assert_paths_agree(sixteens[d], buf + o, n - (uint64_t)o, "specials in some blocks");
  }
  free(buf);
}

static void bf16_narrow_ranges_match_portable(void **state) {
  (void)state;
  /* Two to six binades: windows holding no, one or two thresholds (the
   * kernels with fewer compares), at every height. */
  const uint64_t n = BLOCK_VALUES + 777;
  uint16_t *buf = malloc((n + 4) * sizeof *buf);
  assert_non_null(buf);
  uint64_t s = 31;
  for (int lo = 1; lo < 254; lo += 7) {
    int span = 2 + lo % 5;
    for (uint64_t i = 0; i < n + 4; i++) {
      uint64_t r = ref_rand(&s);
      int E = lo + (int)((r >> 20) % (uint64_t)span);
      if (E > 254) E = 254;
      buf[i] = (uint16_t)((r & 0x8000) | (uint32_t)E << 7 | (r & 0x7f));
      if ((r & 1023) == 0) buf[i] &= 0x8000; /* zeros of both signs */
    }
    assert_paths_agree(MP_BF16, buf + (lo & 3), n, "narrow range");
  }
  free(buf);
}

static void fp8_specials_in_some_blocks_match_portable(void **state) {
  (void)state;
  /* Finite bytes, then NaN (e4m3: a class; e5m2: the block fails) and e5m2
   * inf in a few blocks; every subnormal and both zeros throughout. */
  const uint64_t n = 5 * 262080 + 45;
  uint8_t *buf = malloc(n + 64);
  assert_non_null(buf);
  for (int d = 0; d < 2; d++) {
    uint64_t s = 70 + (uint64_t)d;
    uint8_t top = fp8s[d] == MP_FP8_E4M3 ? 0x7e : 0x7b;
    for (uint64_t i = 0; i < n + 64; i++) {
      uint8_t b = (uint8_t)ref_rand(&s);
      if ((b & 0x7f) > top) b &= 0x83;
      buf[i] = b;
    }
    buf[262080 + 5] = 0x7f;
    buf[3 * 262080 + 9] = (uint8_t)(fp8s[d] == MP_FP8_E4M3 ? 0xff : 0xfc);
    buf[n - 2] = 0x7f;
    for (int o = 0; o < 3; o++)
      assert_paths_agree(fp8s[d], buf + o, n - (uint64_t)o, "specials in some blocks");
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp8_random_bytes_at_odd_lengths_and_offsets_match_portable),
      cmocka_unit_test(fp8_runs_of_one_or_two_patterns_match_portable),
      cmocka_unit_test(fp8_runs_of_each_byte_fill_the_counters),
      cmocka_unit_test(sixteen_bit_random_patterns_match_portable),
      cmocka_unit_test(every_finite_fp16_pattern_matches_portable),
      cmocka_unit_test(every_bf16_pattern_of_a_window_matches_portable),
      cmocka_unit_test(runs_of_one_16_bit_value_match_portable),
      cmocka_unit_test(bf16_blocks_whose_range_moves_match_portable),
      cmocka_unit_test(strided_and_batched_views_match_portable),
      cmocka_unit_test(class_scans_accumulate_into_an_existing_record),
      cmocka_unit_test(sixteen_bit_specials_in_some_blocks_match_portable),
      cmocka_unit_test(bf16_narrow_ranges_match_portable),
      cmocka_unit_test(fp8_specials_in_some_blocks_match_portable),
      cmocka_unit_test(avx2_class_kernels_count_finite_data_without_falling_back),
      cmocka_unit_test(avx2_fp8_kernels_count_every_class_without_falling_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
