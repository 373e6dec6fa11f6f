/* The bit-plane kernel (fp32, and fp16/bf16 widened) against the portable path.
 *
 * With AVX-512 VBMI, BITALG and GFNI, fp32 buffers are counted in blocks of
 * up to 4096 vectors through one-hot bit planes: exponents mod 64 (exact while
 * a block's non-zero exponents span fewer than 64 binades), and a per-binade
 * threshold lookup whose "above" flags share bit positions with binades that
 * are wholly above or below the threshold. A block is checked only at its end
 * (inf, NaN, subnormal, exponent span) and counted again by the previous
 * kernel if the check fails. These tests aim at exactly those places: values
 * at and one to three ulps around every threshold, blocks whose exponents
 * move, span 63 and 64 binades or lie far from every threshold binade, zeros
 * of both signs, special values anywhere in a block, and runs long enough to
 * fill the kernel's counters. Every record must equal the portable path's bit
 * for bit, for AUTO, for AVX-512 without the planes and for AVX2 (on a CPU
 * without these extensions the same comparisons exercise the other paths). */
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
#include "ref.h"

#define BLOCK_VALUES (4096 * 16) /* values per kernel call */

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* A random normal float with biased exponent E, random mantissa and sign. */
static float with_exponent(int E, uint64_t r) {
  return from_bits((uint32_t)((r >> 40) & 1) << 31 | (uint32_t)E << 23 | (uint32_t)(r & 0x7fffff));
}

/* Scans buf (n elements of d) with every implementation; all must equal the
 * portable record. */
static void assert_dtype_paths_agree(mp_dtype d, const void *buf, uint64_t n) {
  mp_stats *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_true(a && b);
  mp_view v = {.dtype = d, .data = buf, .rows = n, .cols = 1, .ld = n, .batch = 1};
  int f = ref_fast_path_differs(&v, a, b);
  assert_int_not_equal(f, -2);
  assert_int_equal(a->count, n);
  if (f >= 0) fail_msg("%s: implementation %d differs from the portable path", mp_dtype_name(d), f);
  free(a);
  free(b);
}

static void assert_paths_agree(const float *buf, uint64_t n) {
  assert_dtype_paths_agree(MP_FP32, buf, n);
}

/* Every threshold the scanner knows, and the floats around it. */
static int threshold_neighbours(float *out) {
  int k = 0;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    const double limits[] = {f->overflow_at, f->flush_at, f->subnormal_below, f->max_finite,
                             ldexp(1.0, f->emin)};
    for (int l = 0; l < 5; l++) {
      float c = (float)limits[l];
      if (!(c > 0) || isinf(c) || c < 0x1p-126f) continue;
      uint32_t u = to_bits(c);
      for (int d = -3; d <= 3; d++) {
        float x = from_bits(u + (uint32_t)d);
        if (!isfinite(x) || x < 0x1p-126f) continue;
        out[k++] = x;
        out[k++] = -x;
      }
    }
  }
  return k;
}

static void every_threshold_and_its_neighbours_match_portable(void **state) {
  (void)state;
  float edges[MP_TARGET_COUNT * 5 * 14];
  int ne = threshold_neighbours(edges);
  assert_true(ne > 100);
  /* bf16's overflow limit lies in fp32's top binade, the other limits
   * between 2^-25 and 2^16: separate buffers keep each block's exponent span
   * below 64, so the plane kernel (not its fallback) counts them. */
  const uint64_t n = 3 * BLOCK_VALUES + 77;
  float *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  for (int top = 0; top < 2; top++) {
    uint64_t s = 5 + (uint64_t)top, m = 0;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = ref_rand(&s);
      float x = edges[r % (uint64_t)ne];
      bool high = fabsf(x) > 0x1p100f;
      if (high != (top == 1)) x = with_exponent(top ? 200 : 120, r);
      buf[i] = x;
      m += high;
    }
    assert_true(top == 0 || m > 0);
    assert_paths_agree(buf, n);
  }
  free(buf);
}

static void a_long_run_of_one_boundary_value_fills_the_counters(void **state) {
  (void)state;
  /* 2^20 copies of values in boundary binades, one per buffer: every lane
   * sets the same bits in every vector, the largest counts a block can hold. */
  const uint64_t n = 1u << 20;
  float *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  const float values[] = {65504.0f,
                          65520.0f,
                          from_bits(to_bits(65520.0f) - 1),
                          61440.0f,
                          from_bits(to_bits(61440.0f) + 1),
                          448.0f,
                          464.0f,
                          0x1p-25f,
                          from_bits(to_bits(0x1p-25f) + 1),
                          -0x1p-14f,
                          0x1.ff8p-15f,
                          from_bits(to_bits(0x1.ff8p-15f) - 1),
                          0x1p-17f,
                          -0x1p-10f,
                          0x1.fp-7f};
  for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
    for (uint64_t i = 0; i < n; i++)
      buf[i] = values[v];
    assert_paths_agree(buf, n);
  }
  free(buf);
}

static void blocks_whose_exponents_move_match_portable(void **state) {
  (void)state;
  /* Each block in another part of the range: tiny, huge (no threshold
   * binade inside: every value is above every limit but bf16's), around 1,
   * and random spans of 1 to 63 binades. */
  const int nblocks = 12;
  const uint64_t n = (uint64_t)nblocks * BLOCK_VALUES;
  float *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  uint64_t s = 99;
  for (int b = 0; b < nblocks; b++) {
    int lo, span;
    if (b == 0) {
      lo = 1, span = 63; /* smallest normals */
    } else if (b == 1) {
      lo = 192, span = 63; /* up to FLT_MAX's binade */
    } else if (b == 2) {
      lo = 100, span = 1;
    } else {
      span = 1 + (int)(ref_rand(&s) % 63);
      lo = 1 + (int)(ref_rand(&s) % (uint64_t)(255 - span));
    }
    for (uint64_t i = 0; i < BLOCK_VALUES; i++) {
      uint64_t r = ref_rand(&s);
      buf[(uint64_t)b * BLOCK_VALUES + i] = with_exponent(lo + (int)(r >> 50) % span, r);
    }
  }
  assert_paths_agree(buf, n);
  /* The same values, blocks not aligned with the data's blocks. */
  assert_paths_agree(buf + 4321, n - 4321 - 5);
  free(buf);
}

static void exponent_spans_of_63_and_64_binades_match_portable(void **state) {
  (void)state;
  /* 63 apart fits the exponent planes; 64 apart must be counted otherwise. */
  const uint64_t n = 2 * BLOCK_VALUES;
  float *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  for (int gap = 62; gap <= 65; gap++) {
    uint64_t s = (uint64_t)gap;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = ref_rand(&s);
      int E = (r >> 60) & 1 ? 96 : 96 + gap;
      buf[i] = (r >> 61) == 0 ? 0.0f : with_exponent(E, r);
    }
    assert_paths_agree(buf, n);
  }
  free(buf);
}

static void zeros_of_both_signs_and_all_negative_blocks_match_portable(void **state) {
  (void)state;
  const uint64_t n = BLOCK_VALUES + 256;
  float *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  /* Only +0; only -0; both (min -0, max +0); negatives with -0 (max -0);
   * mostly zeros; all -0 before all +0 and the reverse (a min/max that
   * takes the later of two equal zeros gets these wrong). */
  for (int c = 0; c < 7; c++) {
    uint64_t s = 7 + (uint64_t)c;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = ref_rand(&s);
      switch (c) {
      case 0:
        buf[i] = 0.0f;
        break;
      case 1:
        buf[i] = -0.0f;
        break;
      case 2:
        buf[i] = r & 1 ? -0.0f : 0.0f;
        break;
      case 3:
        buf[i] = r & 1 ? -0.0f : -fabsf(with_exponent(110 + (int)(r >> 59), r));
        break;
      case 4:
        buf[i] = r & 3 ? 0.0f : with_exponent(127, r); /* mostly zeros, both signs of 1..2 */
        break;
      case 5:
        buf[i] = i < n / 2 ? -0.0f : 0.0f;
        break;
      default:
        buf[i] = i < n / 2 ? 0.0f : -0.0f;
        break;
      }
    }
    assert_paths_agree(buf, n);
  }
  free(buf);
}

static void special_values_anywhere_in_a_block_match_portable(void **state) {
  (void)state;
  /* One inf, NaN or subnormal at the first, a middle and the last position
   * of a block, or in every other block (the kernel then sits out blocks). */
  const uint64_t n = 6 * BLOCK_VALUES + 40;
  float *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  const float specials[] = {INFINITY, -INFINITY, NAN, -NAN, 0x1p-149f, -0x1.fffffcp-127f};
  const uint64_t where[] = {0, BLOCK_VALUES / 2 + 3, BLOCK_VALUES - 1, BLOCK_VALUES,
                            2 * BLOCK_VALUES + 15};
  for (size_t k = 0; k < 3 * sizeof specials / sizeof specials[0]; k++) {
    /* Values around 2^-10, huge or tiny ones: then inf and NaN (exponent
     * 255), or subnormals (exponent 0), are less than 64 binades away, and
     * only the check for them stops them. */
    uint64_t s = 31 + k;
    int lo = k < 6 ? 100 : k < 12 ? 214 : 1;
    for (uint64_t i = 0; i < n; i++)
      buf[i] = with_exponent(lo + (int)(ref_rand(&s) % 40), ref_rand(&s));
    for (size_t w = 0; w < sizeof where / sizeof where[0]; w++)
      buf[where[w]] = specials[k % 6];
    assert_paths_agree(buf, n);
    for (uint64_t b = 0; b < n / BLOCK_VALUES; b += 2)
      buf[b * BLOCK_VALUES + 100] = specials[(k + b) % 6];
    assert_paths_agree(buf, n);
  }
  /* Vectors of nothing but special values. */
  for (uint64_t i = 0; i < n; i++)
    buf[i] = specials[i % 6];
  assert_paths_agree(buf, n);
  free(buf);
}

static void short_and_unaligned_buffers_match_portable(void **state) {
  (void)state;
  /* Sizes around the kernel's 8-vector step and the block size. */
  const uint64_t sizes[] = {127, 128, 129, 143, 144, 255, BLOCK_VALUES - 1, BLOCK_VALUES + 129};
  float *buf = malloc((BLOCK_VALUES + 200) * sizeof *buf);
  assert_non_null(buf);
  uint64_t s = 3;
  for (uint64_t i = 0; i < BLOCK_VALUES + 200; i++) {
    uint64_t r = ref_rand(&s);
    buf[i] = (r & 15) == 0 ? 0.0f : with_exponent(100 + (int)(r >> 58), r);
  }
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    assert_paths_agree(buf, sizes[k]);
    assert_paths_agree(buf + 3, sizes[k]);
  }
  free(buf);
}

static void fp16_and_bf16_blocks_match_portable(void **state) {
  (void)state;
  /* 16-bit sources run widened through the same kernel. fp16: random finite
   * patterns (every block passes the check: fp16 spans 40 binades), then
   * every pattern including inf and NaN in each block. bf16: blocks spanning
   * up to 63 binades anywhere in the range, one spanning more, and blocks
   * with an inf, a NaN or a subnormal (bf16 subnormals stay subnormal). */
  const uint64_t n = 5 * BLOCK_VALUES + 99;
  uint16_t *buf = malloc(n * sizeof *buf);
  assert_non_null(buf);
  uint64_t s = 77;
  for (uint64_t i = 0; i < n; i++) {
    uint16_t h;
    do {
      h = (uint16_t)ref_rand(&s);
    } while ((h & 0x7c00) == 0x7c00);
    buf[i] = h;
  }
  assert_dtype_paths_agree(MP_FP16, buf, n);
  for (uint64_t i = 0; i < n; i++)
    buf[i] = (uint16_t)(i * 40503u);
  assert_dtype_paths_agree(MP_FP16, buf, n);
  for (int c = 0; c < 4; c++) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t r = ref_rand(&s);
      uint64_t b = i / BLOCK_VALUES;
      int span = c == 3 ? 70 : 1 + (int)((b * 13 + (uint64_t)c * 7) % 63);
      int lo = 1 + (int)((b * 37 + (uint64_t)c * 11) % (uint64_t)(255 - (span < 254 ? span : 253)));
      int E = lo + (int)((r >> 20) % (uint64_t)span);
      if (E > 254) E = 254;
      buf[i] = (uint16_t)((r & 1) << 15 | (unsigned)E << 7 | ((r >> 8) & 0x7f));
      if ((r >> 40) % 97 == 0) buf[i] = 0;
    }
    if (c == 2) {
      buf[3] = 0x7f80;                    /* inf */
      buf[BLOCK_VALUES + 5] = 0xffc1;     /* NaN */
      buf[3 * BLOCK_VALUES + 7] = 0x0001; /* subnormal */
    }
    assert_dtype_paths_agree(MP_BF16, buf, n);
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_threshold_and_its_neighbours_match_portable),
      cmocka_unit_test(a_long_run_of_one_boundary_value_fills_the_counters),
      cmocka_unit_test(blocks_whose_exponents_move_match_portable),
      cmocka_unit_test(exponent_spans_of_63_and_64_binades_match_portable),
      cmocka_unit_test(zeros_of_both_signs_and_all_negative_blocks_match_portable),
      cmocka_unit_test(special_values_anywhere_in_a_block_match_portable),
      cmocka_unit_test(short_and_unaligned_buffers_match_portable),
      cmocka_unit_test(fp16_and_bf16_blocks_match_portable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
