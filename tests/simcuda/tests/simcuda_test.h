/* Helpers for simcuda's unit tests: matrices in any storage type with
 * padding poisoned (NaN, or 0x7f bytes for integers) so a read outside the
 * described matrix shows up, and a double-precision host reference GEMM.
 * Inputs are small multiples of 1/2 (exact in every format tested, fp8
 * included), so fp32 accumulation is exact and the only rounding left is
 * the final one into C's type: results can be compared bit for bit. */
#ifndef SIMCUDA_TEST_H
#define SIMCUDA_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <library_types.h>

#include "analysis/convert.h"

static inline mp_dtype st_mp(cudaDataType t) {
  switch (t) {
  case CUDA_R_64F:
    return MP_FP64;
  case CUDA_R_32F:
    return MP_FP32;
  case CUDA_R_16F:
    return MP_FP16;
  case CUDA_R_16BF:
    return MP_BF16;
  case CUDA_R_8F_E4M3:
    return MP_FP8_E4M3;
  case CUDA_R_8F_E5M2:
    return MP_FP8_E5M2;
  case CUDA_R_8I:
    return MP_INT8;
  case CUDA_R_32I:
    return MP_INT32;
  default:
    return MP_DTYPE_INVALID;
  }
}

static inline size_t st_size(cudaDataType t) {
  return mp_dtype_size(st_mp(t));
}

typedef struct st_mat {
  cudaDataType type;
  int64_t rows, cols, ld; /* column-major as stored */
  int64_t batch, stride;  /* stride in elements between batch members */
  void *data;
} st_mat;

static inline uint32_t st_rand(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* A matrix of small exact values; every element outside rows x cols (the
 * ld padding, the gap between batch members) is poisoned. */
static inline st_mat st_matrix(cudaDataType t, int64_t rows, int64_t cols, int64_t ld,
                               int64_t batch, int64_t stride, uint32_t seed) {
  st_mat m = {t, rows, cols, ld, batch, stride, NULL};
  int64_t total = (batch - 1) * stride + ld * cols;
  if (total < 1) total = 1;
  m.data = malloc((size_t)total * st_size(t) + 16);
  mp_dtype d = st_mp(t);
  for (int64_t i = 0; i < total; i++) {
    if (d == MP_INT8 || d == MP_INT32)
      memset((char *)m.data + i * st_size(t), 0x7f, st_size(t));
    else
      mp_store(d, m.data, (uint64_t)i, NAN);
  }
  for (int64_t b = 0; b < batch; b++)
    for (int64_t j = 0; j < cols; j++)
      for (int64_t i = 0; i < rows; i++) {
        int v = (int)(st_rand(&seed) % 17) - 8; /* -8 .. 8 */
        double x = (d == MP_INT8 || d == MP_INT32) ? v : v * 0.5;
        mp_store(d, m.data, (uint64_t)(b * stride + i + j * ld), x);
      }
  return m;
}

static inline double st_get(const st_mat *m, int64_t b, int64_t i, int64_t j) {
  return mp_load(st_mp(m->type), m->data, (uint64_t)(b * m->stride + i + j * m->ld));
}

/* Reference: alpha * op(A) op(B) + beta * C in double, for batch member b.
 * beta == 0 does not read C (BLAS rule). */
static inline double st_ref(char ta, char tb, int64_t k, double alpha, const st_mat *A,
                            const st_mat *B, double beta, const st_mat *C, int64_t b, int64_t i,
                            int64_t j) {
  double acc = 0;
  for (int64_t q = 0; q < k; q++) {
    double a = ta == 'N' ? st_get(A, b, i, q) : st_get(A, b, q, i);
    double x = tb == 'N' ? st_get(B, b, q, j) : st_get(B, b, j, q);
    acc += a * x;
  }
  double out = alpha * acc;
  if (beta != 0) out += beta * st_get(C, b, i, j);
  return out;
}

/* The value C's type stores for v (one RNE rounding). */
static inline double st_round(cudaDataType t, double v) {
  uint64_t buf = 0;
  mp_dtype d = st_mp(t);
  if (d == MP_INT32) return v;
  mp_store(d, &buf, 0, v);
  return mp_load(d, &buf, 0);
}

/* Number of elements of D that differ from the reference (NaN == NaN). */
static inline int64_t st_mismatches(char ta, char tb, int64_t m, int64_t n, int64_t k, double alpha,
                                    const st_mat *A, const st_mat *B, double beta, const st_mat *C0,
                                    const st_mat *D) {
  int64_t bad = 0;
  for (int64_t b = 0; b < D->batch; b++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        double want = st_round(D->type, st_ref(ta, tb, k, alpha, A, B, beta, C0, b, i, j));
        double got = st_get(D, b, i, j);
        if (!(got == want || (isnan(got) && isnan(want)))) bad++;
      }
  return bad;
}

static inline st_mat st_copy(const st_mat *m) {
  st_mat c = *m;
  int64_t total = (m->batch - 1) * m->stride + m->ld * m->cols;
  size_t bytes = (size_t)(total < 1 ? 1 : total) * st_size(m->type) + 16;
  c.data = malloc(bytes);
  memcpy(c.data, m->data, bytes);
  return c;
}

/* Pointers to each batch member, for the pointer-array (batched) forms. */
static inline void **st_pointers(const st_mat *m) {
  void **p = malloc(sizeof(void *) * (size_t)m->batch);
  for (int64_t b = 0; b < m->batch; b++)
    p[b] = (char *)m->data + (size_t)(b * m->stride) * st_size(m->type);
  return p;
}

#endif
