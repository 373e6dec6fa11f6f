/* The one table of number formats and their limits.
 *
 * Every threshold is derived from (exp_bits, man_bits, emax, emin) by the RNE
 * rules spelled out below, so the scanner, the advice, simcuda and the device
 * kernel all read the same numbers. All thresholds are exactly representable
 * in double, which is what lets mp_cast_classify() decide with plain compares. */
#include "analysis/formats.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* RNE into a float format with m explicit mantissa bits:
 * - overflow_at = max_finite + ulp(emax)/2. That midpoint rounds up (overflows)
 *   when max_finite's mantissa is odd (IEEE: all ones) and down when it is even
 *   (e4m3: 1.110b, because 1.111b at the top exponent is NaN): overflow_strict.
 * - flush_at = 2^(emin_sub-1), the midpoint between 0 and the smallest
 *   subnormal, rounds to 0 (even).
 * - subnormal_below = 2^emin - 2^(emin_sub-1): from there up, values round to
 *   the (even) min normal.
 * The values are written out as literals (a constant table needs no
 * initialisation order); tests/analysis re-derive each from the rules above. */
#define FLOAT_FORMAT(nm, bits_, e, m, inf, emax_, max_, ovf, strict, flush, subn)                  \
  {                                                                                                \
    .name = nm, .bits = bits_, .exp_bits = e, .man_bits = m, .is_float = true, .has_inf = inf,     \
    .emax = emax_, .emin = 2 - (1 << ((e)-1)), .emin_sub = 2 - (1 << ((e)-1)) - (m),               \
    .max_finite = max_, .overflow_at = ovf, .overflow_strict = strict, .flush_at = flush,          \
    .subnormal_below = subn                                                                        \
  }

static const mp_format formats[MP_DTYPE_COUNT] = {
    /* fp64's own midpoints are not doubles; these give the same answer for
     * every double: none overflows, only zero flushes, subnormals are < 2^-1022. */
    [MP_FP64] = FLOAT_FORMAT("fp64", 64, 11, 52, true, 1023, 0x1.fffffffffffffp+1023, INFINITY,
                             true, 0.0, 0x1p-1022),
    [MP_FP32] = FLOAT_FORMAT("fp32", 32, 8, 23, true, 127, 0x1.fffffep+127, 0x1.ffffffp+127, false,
                             0x1p-150, 0x1p-126 - 0x1p-150),
    [MP_TF32] = FLOAT_FORMAT("tf32", 32, 8, 10, true, 127, 0x1.ffcp+127, 0x1.ffep+127, false,
                             0x1p-137, 0x1p-126 - 0x1p-137),
    [MP_FP16] = FLOAT_FORMAT("fp16", 16, 5, 10, true, 15, 65504.0, 65520.0, false, 0x1p-25,
                             0x1p-14 - 0x1p-25),
    [MP_BF16] = FLOAT_FORMAT("bf16", 16, 8, 7, true, 127, 0x1.fep+127, 0x1.ffp+127, false, 0x1p-134,
                             0x1p-126 - 0x1p-134),
    /* OCP e4m3fn: exponent 1111 is a normal binade except S.1111.111 (NaN), so
     * emax is 8; the largest finite value is 1.110b * 2^8 = 448, and the tie
     * at 464 rounds to it. */
    [MP_FP8_E4M3] =
        FLOAT_FORMAT("fp8_e4m3", 8, 4, 3, false, 8, 448.0, 464.0, true, 0x1p-10, 0x1p-6 - 0x1p-10),
    [MP_FP8_E5M2] = FLOAT_FORMAT("fp8_e5m2", 8, 5, 2, true, 15, 57344.0, 61440.0, false, 0x1p-17,
                                 0x1p-14 - 0x1p-17),
    /* Integers: no subnormals; RNE to an integer flushes |x| <= 0.5 and
     * overflows from max + 0.5 (a tie that rounds to the even max + 1). The
     * most negative value (-max-1) is not modelled: the limits are symmetric. */
    [MP_INT8] = {.name = "int8",
                 .bits = 8,
                 .exp_bits = 0,
                 .man_bits = 7,
                 .is_float = false,
                 .has_inf = false,
                 .emax = 6,
                 .emin = 0,
                 .emin_sub = 0,
                 .max_finite = 127.0,
                 .overflow_at = 127.5,
                 .overflow_strict = false,
                 .flush_at = 0.5,
                 .subnormal_below = 0.5},
    [MP_INT32] = {.name = "int32",
                  .bits = 32,
                  .exp_bits = 0,
                  .man_bits = 31,
                  .is_float = false,
                  .has_inf = false,
                  .emax = 30,
                  .emin = 0,
                  .emin_sub = 0,
                  .max_finite = 2147483647.0,
                  .overflow_at = 2147483647.5,
                  .overflow_strict = false,
                  .flush_at = 0.5,
                  .subnormal_below = 0.5},
};

const mp_format *mp_format_of(mp_dtype dtype) {
  if (dtype < 0 || dtype >= MP_DTYPE_COUNT) return NULL;
  return &formats[dtype];
}

const char *mp_dtype_name(mp_dtype dtype) {
  const mp_format *f = mp_format_of(dtype);
  return f ? f->name : "invalid";
}

/* Inline, not strcmp: the names are a few bytes and most differ early
 * (the report looks up one per tensor read). */
static bool same_name(const char *a, const char *b) {
  while (*a && *a == *b)
    a++, b++;
  return *a == *b;
}

mp_dtype mp_dtype_from_name(const char *name) {
  if (!name) return MP_DTYPE_INVALID;
  for (int i = 0; i < MP_DTYPE_COUNT; i++)
    if (formats[i].name && same_name(formats[i].name, name)) return (mp_dtype)i;
  return MP_DTYPE_INVALID;
}

mp_dtype mp_target_dtype(mp_target target) {
  static const mp_dtype map[MP_TARGET_COUNT] = {MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  if (target < 0 || target >= MP_TARGET_COUNT) return MP_DTYPE_INVALID;
  return map[target];
}

const char *mp_target_name(mp_target target) {
  return mp_dtype_name(mp_target_dtype(target));
}

bool mp_dtype_scannable(mp_dtype dtype) {
  switch (dtype) {
  case MP_FP64:
  case MP_FP32:
  case MP_FP16:
  case MP_BF16:
  case MP_FP8_E4M3:
  case MP_FP8_E5M2:
    return true;
  default:
    return false;
  }
}

unsigned mp_dtype_size(mp_dtype dtype) {
  const mp_format *f = mp_format_of(dtype);
  return f ? f->bits / 8 : 0;
}

double mp_format_binade_top(const mp_format *f, int e) {
  int ulp_exp = (e > f->emin ? e : f->emin) - (int)f->man_bits;
  return ldexp(2.0 - ldexp(1.0, ulp_exp - e), e);
}
