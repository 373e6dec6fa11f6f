/* CUDA library enum values -> dtype names and scanner formats (see cuda_types.h).
 * Values are the documented enum constants of library_types.h, cublas_api.h
 * and cudnn_graph.h; tables are indexed by value so no CUDA header is needed. */
#include "cuda_types.h"

#include <stdint.h>
#include <string.h>

#include "analysis/convert.h"

typedef struct type_row {
  int value;
  const char *name; /* when `fmt` is MP_DTYPE_INVALID */
  mp_dtype fmt;
} type_row;

#define NAMED(v, n)                                                                                \
  { v, n, MP_DTYPE_INVALID }
#define FMT(v, f)                                                                                  \
  { v, NULL, f }

static const type_row cuda_types[] = {
    FMT(0, MP_FP32),          FMT(1, MP_FP64),
    FMT(2, MP_FP16),          FMT(3, MP_INT8),
    NAMED(4, "complex_fp32"), NAMED(5, "complex_fp64"),
    NAMED(6, "complex_fp16"), NAMED(7, "complex_int8"),
    NAMED(8, "uint8"),        NAMED(9, "complex_uint8"),
    FMT(10, MP_INT32),        NAMED(11, "complex_int32"),
    NAMED(12, "uint32"),      NAMED(13, "complex_uint32"),
    FMT(14, MP_BF16),         NAMED(15, "complex_bf16"),
    NAMED(16, "int4"),        NAMED(17, "complex_int4"),
    NAMED(18, "uint4"),       NAMED(19, "complex_uint4"),
    NAMED(20, "int16"),       NAMED(21, "complex_int16"),
    NAMED(22, "uint16"),      NAMED(23, "complex_uint16"),
    NAMED(24, "int64"),       NAMED(25, "complex_int64"),
    NAMED(26, "uint64"),      NAMED(27, "complex_uint64"),
    FMT(28, MP_FP8_E4M3),     FMT(29, MP_FP8_E5M2),
    NAMED(30, "fp8_ue8m0"),   NAMED(31, "fp6_e2m3"),
    NAMED(32, "fp6_e3m2"),    NAMED(33, "fp4_e2m1"),
};

static const type_row cudnn_types[] = {
    FMT(0, MP_FP32),           FMT(1, MP_FP64),       FMT(2, MP_FP16),
    FMT(3, MP_INT8),           FMT(4, MP_INT32),      NAMED(5, "int8x4"),
    NAMED(6, "uint8"),         NAMED(7, "uint8x4"),   NAMED(8, "int8x32"),
    FMT(9, MP_BF16),           NAMED(10, "int64"),    NAMED(11, "bool"),
    FMT(12, MP_FP8_E4M3),      FMT(13, MP_FP8_E5M2),  NAMED(14, "fast_float_for_fp8"),
    NAMED(15, "fp8_e8m0"),     NAMED(16, "fp4_e2m1"), NAMED(17, "int4"),
    NAMED(18, "uint4"),        NAMED(19, "uint32"),   NAMED(20, "complex_fp32"),
    NAMED(21, "complex_fp64"),
};

/* Tables are listed in value order (checked once), so a value is its index. */
static const type_row *find(const type_row *t, size_t n, int v) {
  if (v < 0 || (size_t)v >= n) return NULL;
  return t[v].value == v ? &t[v] : NULL;
}

static const char *row_name(const type_row *r) {
  if (!r) return "unknown";
  return r->fmt != MP_DTYPE_INVALID ? mp_dtype_name(r->fmt) : r->name;
}

#define CUDA_ROWS (sizeof cuda_types / sizeof cuda_types[0])
#define CUDNN_ROWS (sizeof cudnn_types / sizeof cudnn_types[0])

const char *mpp_cuda_dtype_name(int v) {
  return row_name(find(cuda_types, CUDA_ROWS, v));
}

mp_dtype mpp_cuda_dtype(int v) {
  const type_row *r = find(cuda_types, CUDA_ROWS, v);
  return r ? r->fmt : MP_DTYPE_INVALID;
}

const char *mpp_cudnn_dtype_name(int v) {
  return row_name(find(cudnn_types, CUDNN_ROWS, v));
}

mp_dtype mpp_cudnn_dtype(int v) {
  const type_row *r = find(cudnn_types, CUDNN_ROWS, v);
  return r ? r->fmt : MP_DTYPE_INVALID;
}

/* cublasComputeType_t values, and the cudaDataType values cuBLAS still
 * accepts in their place (CUDA_R_32F = 0 -> 32F, ...). */
static int canonical_compute(int c) {
  switch (c) {
  case 0:
    return 68; /* CUDA_R_32F */
  case 1:
    return 70; /* CUDA_R_64F */
  case 2:
    return 64; /* CUDA_R_16F */
  case 10:
    return 72; /* CUDA_R_32I */
  default:
    return c;
  }
}

const char *mpp_cublas_compute_name(int c) {
  switch (canonical_compute(c)) {
  case 64:
    return "16F";
  case 65:
    return "16F_PEDANTIC";
  case 68:
    return "32F";
  case 69:
    return "32F_PEDANTIC";
  case 74:
    return "32F_FAST_16F";
  case 75:
    return "32F_FAST_16BF";
  case 77:
    return "32F_FAST_TF32";
  case 78:
    return "32F_EMULATED_16BFX9";
  case 70:
    return "64F";
  case 71:
    return "64F_PEDANTIC";
  case 79:
    return "64F_EMULATED_FIXEDPOINT";
  case 72:
    return "32I";
  case 73:
    return "32I_PEDANTIC";
  default:
    return "unknown";
  }
}

int mpp_cublas_compute_scale_type(int c) {
  switch (canonical_compute(c)) {
  case 64:
  case 65:
    return 2; /* CUDA_R_16F */
  case 70:
  case 71:
  case 79:
    return 1; /* CUDA_R_64F */
  case 72:
  case 73:
    return 10; /* CUDA_R_32I */
  default:
    return 0; /* CUDA_R_32F */
  }
}

int mpp_scalar_nonzero(const void *p, int t) {
  switch (t) {
  case 0: {
    float f;
    memcpy(&f, p, sizeof f);
    return f != 0.0f;
  }
  case 1: {
    double d;
    memcpy(&d, p, sizeof d);
    return d != 0.0;
  }
  case 2:
  case 14: {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7fff) != 0;
  }
  case 10: {
    int32_t i;
    memcpy(&i, p, sizeof i);
    return i != 0;
  }
  default:
    return -1;
  }
}

int mpp_scalar_value(const void *p, int t, double *ret) {
  switch (t) {
  case 0: {
    float f;
    memcpy(&f, p, sizeof f);
    *ret = f;
    return 0;
  }
  case 1: {
    double d;
    memcpy(&d, p, sizeof d);
    *ret = d;
    return 0;
  }
  case 2: {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    *ret = mp_fp16_to_float(h);
    return 0;
  }
  case 14: {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    *ret = mp_bf16_to_float(h);
    return 0;
  }
  default:
    return -1;
  }
}
