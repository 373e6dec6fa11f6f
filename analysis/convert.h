/* Exact conversions between the storage formats, round-to-nearest-even.
 *
 * Decoding is exact (every format embeds in double; all but fp64 in float).
 * Encoding from float follows the hardware conversions: fp16/bf16/e5m2 overflow
 * to +-inf, e4m3 (no inf) overflows to NaN unless saturate is set, in which case
 * finite overflow clamps to +-max_finite (CUDA's __NV_SATFINITE). NaN stays NaN. */
#ifndef MPPROF_ANALYSIS_CONVERT_H
#define MPPROF_ANALYSIS_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "formats.h"

float mp_fp16_to_float(uint16_t h);
float mp_bf16_to_float(uint16_t b);
float mp_e4m3_to_float(uint8_t v);
float mp_e5m2_to_float(uint8_t v);

uint16_t mp_float_to_fp16(float f);
uint16_t mp_float_to_bf16(float f);
uint8_t mp_float_to_e4m3(float f, bool saturate);
uint8_t mp_float_to_e5m2(float f, bool saturate);
/* fp32 rounded to tf32 precision (10 mantissa bits, RNE), kept in fp32 storage. */
float mp_float_to_tf32(float f);

/* Value of element i of a buffer of the given source dtype, as a double (exact). */
double mp_load(mp_dtype dtype, const void *base, uint64_t i);
/* Store a double into element i with RNE (double -> float -> target for 16/8-bit types). */
void mp_store(mp_dtype dtype, void *base, uint64_t i, double value);

#endif
