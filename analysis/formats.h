/* The number formats mpprof reasons about, described once.
 *
 * Every limit used anywhere in the project (scanner, advice, report, device
 * kernel, simcuda) comes from mp_format_of(); nobody spells 65504 twice. */
#ifndef MPPROF_ANALYSIS_FORMATS_H
#define MPPROF_ANALYSIS_FORMATS_H

#include <stdbool.h>
#include <stdint.h>

typedef enum mp_dtype {
  MP_DTYPE_INVALID = -1,
  MP_FP64 = 0,
  MP_FP32,
  MP_TF32, /* fp32 storage, 10-bit mantissa compute */
  MP_FP16,
  MP_BF16,
  MP_FP8_E4M3, /* OCP e4m3fn: no infinities, S.1111.111 is NaN */
  MP_FP8_E5M2,
  MP_INT8,
  MP_INT32,
  MP_DTYPE_COUNT
} mp_dtype;

/* Formats a value can be cast into; the stats record keeps cast outcomes for each. */
typedef enum mp_target {
  MP_TGT_FP16 = 0,
  MP_TGT_BF16,
  MP_TGT_FP8_E4M3,
  MP_TGT_FP8_E5M2,
  MP_TARGET_COUNT
} mp_target;

typedef struct mp_format {
  const char *name;  /* "fp16": the one spelling used in JSON, CLI and report */
  unsigned bits;     /* storage width */
  unsigned exp_bits; /* 0 for integers */
  unsigned man_bits; /* explicit mantissa bits */
  bool is_float;
  bool has_inf;
  int emax;             /* exponent of the largest finite binade */
  int emin;             /* min normal = 2^emin */
  int emin_sub;         /* min subnormal = 2^emin_sub; also the lowest histogram bin */
  double max_finite;    /* largest finite value */
  double overflow_at;   /* RNE with unbounded exponent exceeds max_finite when |x| >= overflow_at */
  bool overflow_strict; /* ... or when |x| > overflow_at (tie rounds down to an even max_finite) */
  double flush_at;      /* RNE gives zero when |x| <= flush_at (= 2^(emin_sub-1)) */
  double subnormal_below; /* RNE gives a subnormal when flush_at < |x| < subnormal_below */
} mp_format;

const mp_format *mp_format_of(mp_dtype dtype); /* NULL for MP_DTYPE_INVALID / out of range */
const char *mp_dtype_name(mp_dtype dtype);     /* "fp16", ...; "invalid" when unknown */
mp_dtype mp_dtype_from_name(const char *name); /* MP_DTYPE_INVALID when unknown */
mp_dtype mp_target_dtype(mp_target target);
const char *mp_target_name(mp_target target); /* same spelling as the dtype */

/* True for dtypes the scanner accepts as a source: fp64 fp32 fp16 bf16 fp8_e4m3 fp8_e5m2. */
bool mp_dtype_scannable(mp_dtype dtype);
/* Bytes per element of a dtype's storage (tf32 = 4). */
unsigned mp_dtype_size(mp_dtype dtype);
/* Largest value of float format f in binade e (the binade [2^e, 2^(e+1))),
 * e in [emin_sub, emax]: (2 - ulp(e)/2^e) * 2^e, ulp of a subnormal binade 2^emin_sub. */
double mp_format_binade_top(const mp_format *f, int e);

#endif
