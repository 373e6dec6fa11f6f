/* Exact decoders and round-to-nearest-even encoders for the storage formats:
 * the bit-pattern logic lives in cast_core.h (shared with the device shadow
 * kernels); these are its public names, and the buffer accessors. */
#include "analysis/convert.h"

#include <math.h>
#include <string.h>

#include "analysis/cast_core.h"

float mp_fp16_to_float(uint16_t h) {
  return mp_cast_fp16_to_float(h);
}

float mp_bf16_to_float(uint16_t b) {
  return mp_cast_bf16_to_float(b);
}

float mp_e4m3_to_float(uint8_t v) {
  return mp_cast_e4m3_to_float(v);
}

float mp_e5m2_to_float(uint8_t v) {
  return mp_cast_e5m2_to_float(v);
}

uint16_t mp_float_to_fp16(float f) {
  return mp_cast_float_to_fp16(f);
}

uint16_t mp_float_to_bf16(float f) {
  return mp_cast_float_to_bf16(f);
}

float mp_float_to_tf32(float f) {
  return mp_cast_float_to_tf32(f);
}

uint8_t mp_float_to_e4m3(float f, bool saturate) {
  return mp_cast_float_to_e4m3(f, saturate);
}

uint8_t mp_float_to_e5m2(float f, bool saturate) {
  return mp_cast_float_to_e5m2(f, saturate);
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
