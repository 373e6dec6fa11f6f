/* Exact decoders and round-to-nearest-even encoders for the storage formats.
 *
 * One integer rounding routine serves every narrow float format: the fp32
 * significand is shifted down to the target's quantum (the ulp of the value's
 * binade, or of the min normal binade for subnormal results) and rounded to
 * nearest even; carries into the next binade fall out of the bit layout.
 * Special cases follow CUDA's conversions (cuda_fp16.hpp, cuda_bf16.hpp,
 * cuda_fp8.hpp): canonical NaN 0x7fff for fp16/bf16, e4m3 NaN S.1111.111,
 * e5m2 NaN keeps two payload bits and is made quiet. */
#include "analysis/convert.h"

#include <math.h>
#include <string.h>

static inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- decoders ---------------------------------------------------------- */

float mp_fp16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f)
    return bits_float(sign | 0x7f800000u | (man << 13)); /* inf, NaN (payload kept) */
  if (exp == 0) {
    /* Subnormal (or zero): man * 2^-24, exact in float. */
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

float mp_bf16_to_float(uint16_t b) {
  return bits_float((uint32_t)b << 16);
}

float mp_e4m3_to_float(uint8_t v) {
  uint32_t exp = (v >> 3) & 0xfu;
  uint32_t man = v & 0x7u;
  float mag;
  if (exp == 0xf && man == 0x7)
    mag = NAN;
  else if (exp == 0)
    mag = (float)man * 0x1p-9f;
  else
    mag = ldexpf((float)(8u + man), (int)exp - 10);
  return (v & 0x80u) ? -mag : mag;
}

float mp_e5m2_to_float(uint8_t v) {
  /* e5m2 is the upper byte of an fp16. */
  return mp_fp16_to_float((uint16_t)(v << 8));
}

/* ---- encoders ---------------------------------------------------------- */

/* Round the magnitude bits `a` of a finite fp32 value to a float format with
 * `man` explicit mantissa bits, exponent bias `bias` and min normal exponent
 * 1-bias, and return the target's magnitude bits with an unbounded exponent
 * field (the caller decides what exceeds max finite). */
static uint32_t round_magnitude(uint32_t a, unsigned man, int bias) {
  if (a == 0) return 0;
  int biased = (int)(a >> 23);
  uint32_t sig = a & 0x7fffffu;
  int e; /* value = sig * 2^(e - 23) */
  if (biased == 0) {
    e = -126;
  } else {
    sig |= 0x800000u;
    e = biased - 127;
  }
  int emin = 1 - bias;
  int eq = (e > emin ? e : emin) - (int)man; /* exponent of the target quantum */
  int shift = eq - (e - 23);                 /* >= 23 - man > 0 */
  uint32_t q;
  if (shift >= 32) {
    q = 0; /* below half the smallest subnormal (sig < 2^24) */
  } else {
    q = sig >> shift;
    uint32_t rem = sig & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
  }
  /* Normal results: q in [2^man, 2^(man+1)], a carry lands in the exponent
   * field. Subnormal results: the exponent field stays 0 and q == 2^man is
   * exactly the min normal's encoding. */
  int field = (e > emin ? e : emin) + bias - 1;
  return ((uint32_t)field << man) + q;
}

uint16_t mp_float_to_fp16(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;
  if (a == 0x7f800000u) return sign | 0x7c00u;
  if (a >= 0x47800000u) return sign | 0x7c00u; /* >= 2^16: overflows whatever the rounding */
  uint32_t r = round_magnitude(a, 10, 15);
  if (r > 0x7bffu) r = 0x7c00u;
  return sign | (uint16_t)r;
}

uint16_t mp_float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  /* Same layout as fp32's top half: RNE on the low 16 bits; a carry into the
   * exponent gives inf exactly when it should. */
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)((u + rounding) >> 16);
}

float mp_float_to_tf32(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) >= 0x7f800000u) return f;
  uint32_t rounding = 0xfffu + ((u >> 13) & 1u);
  return bits_float((u + rounding) & ~0x1fffu);
}

uint8_t mp_float_to_e4m3(float f, bool saturate) {
  uint32_t u = float_bits(f);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7fu;
  uint32_t r = a >= 0x44000000u ? 0xffu : round_magnitude(a, 3, 7); /* >= 512: overflow */
  if (r > 0x7eu) return sign | (saturate ? 0x7eu : 0x7fu);
  return sign | (uint8_t)r;
}

uint8_t mp_float_to_e5m2(float f, bool saturate) {
  uint32_t u = float_bits(f);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7eu | (uint8_t)((a >> 21) & 0x3u);
  uint32_t r = a >= 0x47800000u ? 0xffu : round_magnitude(a, 2, 15); /* >= 2^16: overflow */
  if (r > 0x7bu) return sign | (saturate ? 0x7bu : 0x7cu);
  return sign | (uint8_t)r;
}

/* ---- buffers ----------------------------------------------------------- */

double mp_load(mp_dtype dtype, const void *base, uint64_t i) {
  const unsigned char *p = (const unsigned char *)base;
  switch (dtype) {
  case MP_FP64: {
    double v;
    memcpy(&v, p + i * 8, 8);
    return v;
  }
  case MP_FP32:
  case MP_TF32: {
    float v;
    memcpy(&v, p + i * 4, 4);
    return v;
  }
  case MP_FP16: {
    uint16_t v;
    memcpy(&v, p + i * 2, 2);
    return mp_fp16_to_float(v);
  }
  case MP_BF16: {
    uint16_t v;
    memcpy(&v, p + i * 2, 2);
    return mp_bf16_to_float(v);
  }
  case MP_FP8_E4M3:
    return mp_e4m3_to_float(p[i]);
  case MP_FP8_E5M2:
    return mp_e5m2_to_float(p[i]);
  case MP_INT8:
    return (int8_t)p[i];
  case MP_INT32: {
    int32_t v;
    memcpy(&v, p + i * 4, 4);
    return v;
  }
  default:
    return NAN;
  }
}

/* Integers: RNE, saturating to the type's range; NaN stores 0 (no integer NaN). */
static double to_int_range(double v, double lo, double hi) {
  if (isnan(v)) return 0.0;
  v = nearbyint(v);
  return v < lo ? lo : v > hi ? hi : v;
}

void mp_store(mp_dtype dtype, void *base, uint64_t i, double value) {
  unsigned char *p = (unsigned char *)base;
  switch (dtype) {
  case MP_FP64:
    memcpy(p + i * 8, &value, 8);
    break;
  case MP_FP32: {
    float v = (float)value;
    memcpy(p + i * 4, &v, 4);
    break;
  }
  case MP_TF32: {
    float v = mp_float_to_tf32((float)value);
    memcpy(p + i * 4, &v, 4);
    break;
  }
  case MP_FP16: {
    uint16_t v = mp_float_to_fp16((float)value);
    memcpy(p + i * 2, &v, 2);
    break;
  }
  case MP_BF16: {
    uint16_t v = mp_float_to_bf16((float)value);
    memcpy(p + i * 2, &v, 2);
    break;
  }
  case MP_FP8_E4M3:
    p[i] = mp_float_to_e4m3((float)value, false);
    break;
  case MP_FP8_E5M2:
    p[i] = mp_float_to_e5m2((float)value, false);
    break;
  case MP_INT8:
    p[i] = (unsigned char)(int8_t)to_int_range(value, -128.0, 127.0);
    break;
  case MP_INT32: {
    int32_t v = (int32_t)to_int_range(value, -2147483648.0, 2147483647.0);
    memcpy(p + i * 4, &v, 4);
    break;
  }
  default:
    break;
  }
}
