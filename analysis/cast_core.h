/* The exact casts, written once for the C compiler and nvcc: the decoders and
 * round-to-nearest-even encoders of the storage formats on bit patterns
 * (analysis/convert.c's public functions are these), and the power-of-two
 * scaling the shadow recipes use. The device shadow kernels
 * (kernels/shadow.cu) include this file, so a candidate cast on the GPU is
 * the host's cast, bit for bit (tests/gpu/test_shadow_kernel_cpu.cpp).
 *
 * One integer rounding routine serves every narrow float format: the fp32
 * significand is shifted down to the target's quantum (the ulp of the value's
 * binade, or of the min normal binade for subnormal results) and rounded to
 * nearest even; carries into the next binade fall out of the bit layout.
 * Special cases follow CUDA's conversions (cuda_fp16.hpp, cuda_bf16.hpp,
 * cuda_fp8.hpp): canonical NaN 0x7fff for fp16/bf16, e4m3 NaN S.1111.111,
 * e5m2 NaN keeps two payload bits and is made quiet. No float arithmetic but
 * exact products (integer-valued significands times powers of two), so no
 * rounding mode, contraction or flush-to-zero setting can change a result. */
#ifndef MPPROF_ANALYSIS_CAST_CORE_H
#define MPPROF_ANALYSIS_CAST_CORE_H

#include <stdint.h>

#ifdef __CUDACC__
#define MP_CAST_FN static __host__ __device__ __forceinline__
#else
#include <string.h>
#define MP_CAST_FN static inline
#endif

MP_CAST_FN uint32_t mp_cast_float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

MP_CAST_FN float mp_cast_bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/* 2^e as a float for e in [-126, 127] (a normal number). */
MP_CAST_FN float mp_cast_pow2(int e) {
  return mp_cast_bits_float((uint32_t)(e + 127) << 23);
}

/* x * 2^e rounded once (RNE), as ldexpf, for finite or infinite x and e in
 * [-252, 254]: outside [-126, 127] the product is split at a normal power of
 * two where the first factor is exact (or the result is zero or inf either way). */
MP_CAST_FN float mp_pow2_scale(float x, int e) {
  if (e >= -126 && e <= 127) return x * mp_cast_pow2(e);
  if (e < -126) return x * mp_cast_pow2(e + 126) * mp_cast_pow2(-126);
  return x * mp_cast_pow2(127) * mp_cast_pow2(e - 127);
}

/* ---- decoders ---- */

MP_CAST_FN float mp_cast_fp16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f)
    return mp_cast_bits_float(sign | 0x7f800000u | (man << 13)); /* inf, NaN (payload kept) */
  if (exp == 0) {
    /* Subnormal (or zero): man * 2^-24, exact in float. */
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return mp_cast_bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

MP_CAST_FN float mp_cast_bf16_to_float(uint16_t b) {
  return mp_cast_bits_float((uint32_t)b << 16);
}

MP_CAST_FN float mp_cast_e4m3_to_float(uint8_t v) {
  uint32_t sign = (uint32_t)(v & 0x80u) << 24;
  uint32_t exp = (v >> 3) & 0xfu;
  uint32_t man = v & 0x7u;
  if (exp == 0xf && man == 0x7) return mp_cast_bits_float(sign | 0x7fc00000u); /* NaN */
  if (exp == 0) {
    float mag = (float)man * 0x1p-9f;
    return sign ? -mag : mag;
  }
  /* (8 + man) * 2^(exp - 10) = 1.man * 2^(exp - 7) */
  return mp_cast_bits_float(sign | ((exp + 120u) << 23) | (man << 20));
}

MP_CAST_FN float mp_cast_e5m2_to_float(uint8_t v) {
  /* e5m2 is the upper byte of an fp16. */
  return mp_cast_fp16_to_float((uint16_t)(v << 8));
}

/* ---- encoders ---- */

/* Round the magnitude bits `a` of a finite fp32 value to a float format with
 * `man` explicit mantissa bits, exponent bias `bias` and min normal exponent
 * 1-bias, and return the target's magnitude bits with an unbounded exponent
 * field (the caller decides what exceeds max finite). */
MP_CAST_FN uint32_t mp_cast_round_magnitude(uint32_t a, unsigned man, int bias) {
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

MP_CAST_FN uint16_t mp_cast_float_to_fp16(float f) {
  uint32_t u = mp_cast_float_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;
  if (a == 0x7f800000u) return sign | 0x7c00u;
  if (a >= 0x47800000u) return sign | 0x7c00u; /* >= 2^16: overflows whatever the rounding */
  uint32_t r = mp_cast_round_magnitude(a, 10, 15);
  if (r > 0x7bffu) r = 0x7c00u;
  return sign | (uint16_t)r;
}

MP_CAST_FN uint16_t mp_cast_float_to_bf16(float f) {
  uint32_t u = mp_cast_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  /* Same layout as fp32's top half: RNE on the low 16 bits; a carry into the
   * exponent gives inf exactly when it should. */
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)((u + rounding) >> 16);
}

MP_CAST_FN float mp_cast_float_to_tf32(float f) {
  uint32_t u = mp_cast_float_bits(f);
  if ((u & 0x7fffffffu) >= 0x7f800000u) return f;
  uint32_t rounding = 0xfffu + ((u >> 13) & 1u);
  return mp_cast_bits_float((u + rounding) & ~0x1fffu);
}

MP_CAST_FN uint8_t mp_cast_float_to_e4m3(float f, int saturate) {
  uint32_t u = mp_cast_float_bits(f);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7fu;
  uint32_t r = a >= 0x44000000u ? 0xffu : mp_cast_round_magnitude(a, 3, 7); /* >= 512: overflow */
  if (r > 0x7eu) return sign | (saturate ? 0x7eu : 0x7fu);
  return sign | (uint8_t)r;
}

MP_CAST_FN uint8_t mp_cast_float_to_e5m2(float f, int saturate) {
  uint32_t u = mp_cast_float_bits(f);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7eu | (uint8_t)((a >> 21) & 0x3u);
  uint32_t r = a >= 0x47800000u ? 0xffu : mp_cast_round_magnitude(a, 2, 15); /* >= 2^16: overflow */
  if (r > 0x7bu) return sign | (saturate ? 0x7bu : 0x7cu);
  return sign | (uint8_t)r;
}

#endif
